//! `orders-bench-report`: the report of rounds read from the result model (`orders-bench-model`),
//! and nothing else: Markdown, a self-contained HTML page and SVG charts out, no database, no
//! load, no orchestration (`orders-bench report DIR...` and `compare` are its command lines).
//! It writes one report: `report.md`, a self-contained `report.html` (charts inline), the SVG charts under
//! `charts/`, and a `result.json` holding every round. Its first screen is the answer: one sentence
//! per mix (`answer`) and one chart of every repeat per mix and target (`dots`). Then the data set,
//! the pass mark and the databases' budgets, the table of maximum passing rates with the reasoning
//! folded under it, findings F1–F3 of the published studies (docs/studies.md) seen or not, then per
//! round the charts, steps and the figures that explain them, folded. A round that ran despite a
//! failed fairness gate is named at the very top.

mod answer;
pub mod charts;
pub mod compare;
pub mod doc;
mod dots;
mod evidence;
pub mod findings;
#[cfg(test)]
mod fixtures;
mod fleet;
pub mod format;
mod headline;
pub mod merges;
mod probe;
pub mod runs;
pub use probe::blocks as probe_blocks;
mod regime;
mod sections;
mod start;
mod studies;
pub mod summary;

use anyhow::{Context, Result, bail};
use doc::Block;
use orders_bench_model::result::{self, RoundResult};
use orders_core::Timestamp;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// `path` relative to `base` when it lies below it, else as given.
fn relative(path: &Path, base: &Path) -> String {
    let clean = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let rel = path.strip_prefix(base).map(Path::to_path_buf).or_else(|_| {
        let (path, base) = (clean(path), clean(base));
        path.strip_prefix(base).map(Path::to_path_buf)
    });
    match rel {
        Ok(rel) if rel.as_os_str().is_empty() => ".".into(),
        Ok(rel) => rel.display().to_string(),
        Err(_) => path.display().to_string(),
    }
}

/// Writes the report of `rounds` (each with the folder it lives in) into `out`.
pub fn write(out: &Path, rounds: &[(PathBuf, RoundResult)]) -> Result<()> {
    if rounds.is_empty() {
        bail!("no rounds to report");
    }
    let charts_dir = out.join("charts");
    std::fs::create_dir_all(&charts_dir).with_context(|| format!("creating {}", charts_dir.display()))?;
    let rounds: Vec<RoundResult> =
        rounds.iter().map(|(dir, round)| RoundResult { dir: relative(dir, out), ..round.clone() }).collect();
    let refs: Vec<&RoundResult> = rounds.iter().collect();
    let mut blocks = head(&refs);
    for (file, svg) in Block::charts(&blocks) {
        std::fs::write(out.join(file), svg).with_context(|| format!("writing {file}"))?;
    }
    let mut used = BTreeSet::new();
    for round in &rounds {
        let mut stem: String =
            round.name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' }).collect();
        let mut n = 2;
        while !used.insert(stem.clone()) {
            stem = format!("{stem}-{n}");
            n += 1;
        }
        let mut files = Vec::new();
        for (kind, caption, svg) in sections::charts(round) {
            let file = format!("charts/{stem}-{kind}.svg");
            std::fs::write(out.join(&file), &svg).with_context(|| format!("writing {file}"))?;
            files.push((file, caption, svg));
        }
        blocks.extend(folded_round(sections::round(round, &files)));
    }
    let md = doc::markdown(&blocks);
    std::fs::write(out.join("report.md"), md).context("writing report.md")?;
    let html = doc::html("orders-bench report", &blocks);
    std::fs::write(out.join("report.html"), html).context("writing report.html")?;
    result::write(out, rounds)?;
    Ok(())
}

fn head(rounds: &[&RoundResult]) -> Vec<Block> {
    let mut blocks = vec![Block::Heading(1, "PostgreSQL jsonb vs MongoDB: orders-bench report".into())];
    let unfair: Vec<String> =
        rounds
            .iter()
            .flat_map(|round| {
                round.repeats.iter().filter(|r| !r.fairness.ok).map(move |r| {
                    format!("`{}` repeat {}: {}", round.name, r.index, r.fairness.mismatches().join("; "))
                })
            })
            .collect();
    if !unfair.is_empty() {
        blocks.push(Block::Paragraph(
            "**UNFAIR COMPARISON.** The fairness gate failed and `--allow-mismatch` let these runs go ahead; their \
             figures do not compare like with like:"
                .into(),
        ));
        blocks.push(Block::List(unfair));
    }
    blocks.push(Block::Answer(answer::sentences(rounds)));
    blocks.push(Block::Chart {
        file: "charts/repeats.svg".into(),
        caption: "Every repeat's maximum passing rate per mix and target: a dot per repeat (hollow: the target never \
                  failed, so its rate is a lower bound), a line over the repeats, a tick at their median; the verdict \
                  at the end of each row is the table's below"
            .into(),
        svg: dots::chart(rounds),
    });
    blocks.extend(summary::machine_warning(rounds));
    let data = rounds.iter().find_map(|r| r.data_set.as_ref());
    let same_data = rounds.iter().all(|r| r.data_set.as_ref() == data);
    let machine = rounds.first().map(|r| &r.machine);
    let (_, services) = summary::target_count_words(rounds);
    blocks.push(Block::Heading(2, "How it was measured".into()));
    blocks.push(Block::Paragraph(format!(
        "Generated {} from {} round(s). Data set: {}. Machine: {}: the databases, {services} and the load \
         generator share its cores when they run on it (see CPU in each round).",
        Timestamp::now(),
        rounds.len(),
        data.filter(|_| same_data).map_or("differs between rounds (see each round)".into(), |d| format!(
            "{} orders (seed {}, {} items per order, note {} bytes, about {} each), {} customers, {} products",
            format::count(d.orders as f64),
            d.seed,
            d.items_per_order,
            d.note_bytes,
            format::bytes(d.approx_doc_bytes as f64),
            format::count(d.customers as f64),
            format::count(d.products as f64)
        )),
        machine.map_or(format::NONE.into(), |m| format!("{} cores, {}", m.cores, m.os)),
    )));
    let mark = rounds.first().map(|r| r.pass_mark).unwrap_or_default();
    blocks.push(Block::Paragraph(format!(
        "A step passes for a target when its p95 is below {} ms, under {}% of its requests fail and it drops no \
         iteration. **Maximum passing rate**: the highest offered rate that passed with every lower step passing too; \
         with repeats the median, the range in brackets. `≥`: the target never failed (the staircase or the machine \
         ran out first), `<`: it failed the first step. Ratio: {}.",
        mark.p95_ms,
        mark.max_failed_rate * 100.0,
        rounds.first().map_or_else(String::new, |r| format::ratio_words(r))
    )));
    blocks.extend(summary::budget_paragraph(rounds));
    blocks.extend(regime::paragraph(rounds));
    blocks.push(Block::Heading(2, "Maximum passing rate".into()));
    blocks.push(headline::table(rounds));
    let mut reasoning = vec![
        headline::legend(),
        Block::Chart {
            file: "charts/answer.svg".into(),
            caption: "Maximum passing rate per repeat and CPU capacity, per mix".into(),
            svg: headline::chart(rounds),
        },
        Block::Paragraph("What set each limit:".into()),
        max_rate_block(rounds),
    ];
    reasoning.extend(summary::cpu_blocks(rounds));
    blocks.push(Block::Details {
        summary: "How a winner is named, the CPU capacity, what set each limit and the CPU per request".into(),
        blocks: reasoning,
    });
    blocks.push(Block::Heading(2, "Findings of the published studies (docs/studies.md)".into()));
    let mut items = findings::f1(rounds);
    items.extend(findings::f2(rounds));
    items.extend(findings::f3(rounds));
    items.extend(studies::held_against(rounds));
    blocks.push(Block::List(items));
    blocks
}

/// A round's section with all but its heading and first paragraph folded.
fn folded_round(mut blocks: Vec<Block>) -> Vec<Block> {
    let rest = blocks.split_off(blocks.len().min(2));
    if !rest.is_empty() {
        blocks.push(Block::Details {
            summary: "Settings, charts, how each repeat started, every step, what explains it and the CPU".into(),
            blocks: rest,
        });
    }
    blocks
}

fn max_rate_block(rounds: &[&RoundResult]) -> Block {
    let targets = rounds.first().map(|r| r.targets()).unwrap_or_default();
    let rows = rounds
        .iter()
        .map(|r| {
            let mut row = vec![format!(
                "{}{}",
                r.name,
                if r.name == r.mix { String::new() } else { format!(" (mix {})", r.mix) }
            )];
            row.extend(targets.iter().map(|t| format::max_rate(r.max_rate.get(&t.name), r.plan.start_rate)));
            row.push(format::round_ratio(r));
            row.push(summary::limit_words(r));
            row
        })
        .collect();
    let mut header = vec!["mix".to_owned()];
    header.extend(targets.iter().map(|t| format!("{} max rate", t.label)));
    header.extend(["ratio".to_owned(), "what set the limits".to_owned()]);
    Block::Table { header, rows }
}

/// The "mix | Postgres max rate | MongoDB max rate | ratio | what set the limits" table as Markdown.
pub fn max_rate_table(rounds: &[RoundResult]) -> String {
    let refs: Vec<&RoundResult> = rounds.iter().collect();
    doc::markdown(&[max_rate_block(&refs)]).trim_end().to_owned()
}
