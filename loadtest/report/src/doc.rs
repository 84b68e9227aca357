//! A tiny document model for the reports, so `report.md` and `report.html` say exactly the same
//! thing: headings, paragraphs, bullet lists, tables, charts, the answer's sentences and folds.
//! Markdown links the charts as SVG files; HTML inlines them, so the page is one self-contained
//! file. A fold is `<details>` in HTML and its summary and content, unfolded, in Markdown. Text
//! uses `**bold**` and `` `code` `` in both (HTML renders them).

use std::fmt::Write as _;

#[derive(Debug, Clone, PartialEq)]
pub enum Block {
    Heading(u8, String),
    Paragraph(String),
    List(Vec<String>),
    Table {
        header: Vec<String>,
        rows: Vec<Vec<String>>,
    },
    /// An SVG chart: its file (relative to the report) and its content.
    Chart {
        file: String,
        caption: String,
        svg: String,
    },
    /// The sentences a report opens with, one per mix: a list, `<ul class="answer">` in HTML.
    Answer(Vec<String>),
    /// Long content folded under a one-line summary.
    Details {
        summary: String,
        blocks: Vec<Block>,
    },
}

impl Block {
    /// The charts among `blocks`, folded ones too.
    pub fn charts(blocks: &[Block]) -> Vec<(&str, &str)> {
        blocks
            .iter()
            .flat_map(|block| match block {
                Block::Chart { file, svg, .. } => vec![(file.as_str(), svg.as_str())],
                Block::Details { blocks, .. } => Block::charts(blocks),
                _ => Vec::new(),
            })
            .collect()
    }
}

pub fn markdown(blocks: &[Block]) -> String {
    let mut out = String::new();
    for block in blocks {
        match block {
            Block::Heading(level, text) => {
                let _ = writeln!(out, "{} {text}\n", "#".repeat(usize::from(*level)));
            }
            Block::Paragraph(text) => {
                let _ = writeln!(out, "{text}\n");
            }
            Block::List(items) | Block::Answer(items) => {
                for item in items {
                    let _ = writeln!(out, "- {item}");
                }
                out.push('\n');
            }
            Block::Details { summary, blocks } => {
                let _ = writeln!(out, "{summary}\n");
                out.push_str(&markdown(blocks));
            }
            Block::Table { header, rows } => {
                let cell = |c: &String| c.replace('|', "\\|");
                let _ = writeln!(out, "| {} |", header.iter().map(cell).collect::<Vec<_>>().join(" | "));
                let _ = writeln!(out, "|{}", "---|".repeat(header.len()));
                for row in rows {
                    let _ = writeln!(out, "| {} |", row.iter().map(cell).collect::<Vec<_>>().join(" | "));
                }
                out.push('\n');
            }
            Block::Chart { file, caption, .. } => {
                let _ = writeln!(out, "![{caption}]({file})\n");
            }
        }
    }
    out
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

/// Escapes, then renders `**bold**` and `` `code` `` pairs.
fn inline(text: &str) -> String {
    let mut out = String::new();
    for (i, part) in escape(text).split("**").enumerate() {
        if i % 2 == 1 {
            let _ = write!(out, "<strong>{part}</strong>");
        } else {
            out.push_str(part);
        }
    }
    let mut coded = String::new();
    for (i, part) in out.split('`').enumerate() {
        if i % 2 == 1 {
            let _ = write!(coded, "<code>{part}</code>");
        } else {
            coded.push_str(part);
        }
    }
    coded
}

const STYLE: &str = "body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}\
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:3px 8px;text-align:left;\
vertical-align:top}th{background:#f4f4f4}code{background:#f4f4f4;padding:0 3px}figure{margin:1em 0}\
figcaption{color:#555;font-size:90%}.answer{font-size:110%;line-height:1.35;padding-left:1.2em}\
.answer li{margin:0.2em 0}details{margin:0.5em 0 1em}summary{cursor:pointer;color:#336791}\
table{display:block;overflow-x:auto;max-width:100%}h1{margin:0.4em 0}";

pub fn html(title: &str, blocks: &[Block]) -> String {
    let mut out = format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title><style>{STYLE}</style></head><body>\n",
        escape(title)
    );
    html_blocks(&mut out, blocks);
    out.push_str("</body></html>\n");
    out
}

fn html_blocks(out: &mut String, blocks: &[Block]) {
    for block in blocks {
        match block {
            Block::Heading(level, text) => {
                let _ = writeln!(out, "<h{level}>{}</h{level}>", inline(text));
            }
            Block::Paragraph(text) => {
                let _ = writeln!(out, "<p>{}</p>", inline(text));
            }
            Block::List(items) => {
                out.push_str("<ul>");
                for item in items {
                    let _ = write!(out, "<li>{}</li>", inline(item));
                }
                out.push_str("</ul>\n");
            }
            Block::Table { header, rows } => {
                out.push_str("<table><tr>");
                for h in header {
                    let _ = write!(out, "<th>{}</th>", inline(h));
                }
                out.push_str("</tr>");
                for row in rows {
                    out.push_str("<tr>");
                    for c in row {
                        let _ = write!(out, "<td>{}</td>", inline(c));
                    }
                    out.push_str("</tr>");
                }
                out.push_str("</table>\n");
            }
            Block::Chart { caption, svg, .. } => {
                let _ = writeln!(out, "<figure>{svg}<figcaption>{}</figcaption></figure>", inline(caption));
            }
            Block::Answer(sentences) => {
                out.push_str("<ul class=\"answer\">");
                for sentence in sentences {
                    let _ = write!(out, "<li>{}</li>", inline(sentence));
                }
                out.push_str("</ul>\n");
            }
            Block::Details { summary, blocks } => {
                let _ = writeln!(out, "<details><summary>{}</summary>", inline(summary));
                html_blocks(out, blocks);
                out.push_str("</details>\n");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blocks() -> Vec<Block> {
        vec![
            Block::Heading(1, "Report".into()),
            Block::Paragraph("**F1** seen: `Seq Scan` <here>".into()),
            Block::Table { header: vec!["mix".into(), "ratio".into()], rows: vec![vec!["shop".into(), "a|b".into()]] },
            Block::Chart { file: "charts/x.svg".into(), caption: "p95".into(), svg: "<svg></svg>".into() },
        ]
    }

    #[test]
    fn markdown_has_tables_and_links_the_charts() {
        let md = markdown(&blocks());
        assert!(md.contains("| mix | ratio |\n|---|---|\n| shop | a\\|b |"), "{md}");
        assert!(md.contains("![p95](charts/x.svg)"));
    }

    #[test]
    fn a_fold_is_details_in_html_and_its_content_in_markdown() {
        let fold = [
            Block::Answer(vec!["**Reads**: PostgreSQL".into()]),
            Block::Details { summary: "Every step".into(), blocks: blocks() },
        ];
        let page = html("r", &fold);
        assert!(page.contains("<ul class=\"answer\"><li><strong>Reads</strong>: PostgreSQL</li></ul>"), "{page}");
        assert!(page.contains("<details><summary>Every step</summary>\n<h1>Report</h1>"), "{page}");
        assert!(page.contains("</figure>\n</details>"), "{page}");
        let md = markdown(&fold);
        assert!(md.starts_with("- **Reads**: PostgreSQL\n\nEvery step\n\n# Report\n"), "{md}");
        assert_eq!(Block::charts(&fold), [("charts/x.svg", "<svg></svg>")], "a folded chart is still written");
    }

    #[test]
    fn html_is_self_contained_and_escaped() {
        let page = html("R & D", &blocks());
        assert!(page.contains("<title>R &amp; D</title>"));
        assert!(page.contains("<p><strong>F1</strong> seen: <code>Seq Scan</code> &lt;here&gt;</p>"), "{page}");
        assert!(page.contains("<figure><svg></svg>"), "the chart is inline");
        assert!(!page.contains("src="), "nothing is loaded from elsewhere");
    }
}
