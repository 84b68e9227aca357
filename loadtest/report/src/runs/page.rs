//! The HTML of the runs page and of each comparison page: plain, self-contained files (no
//! server, nothing loaded from elsewhere). Every text from a result file is escaped. The form
//! that picks two runs is a few lines of script; without script, each row links its comparison
//! with the previous run and the page ends with the list of every comparison.

use super::{Experiment, Pair, Run, What};
use crate::doc::{self, Block};
use crate::format;
use orders_bench_model::mix_verdict;
use orders_bench_model::result::RoundResult;
use std::fmt::Write as _;

const STYLE: &str = "body{font-family:system-ui,sans-serif;margin:2em;color:#222}\
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:4px 8px;text-align:left;\
vertical-align:top}th{background:#f4f4f4}td ul{margin:0;padding-left:1.1em}.bad{color:#a33}\
code{background:#f4f4f4;padding:0 3px}small{color:#555}td:nth-child(5){font-size:90%;min-width:12em;\
max-width:18em}td:nth-child(6){min-width:20em}td:nth-child(7){max-width:10em;word-break:break-all}";

fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// A link to `href` (relative, escaped) reading `text`.
fn link(href: &str, text: &str) -> String {
    format!("<a href=\"{}\">{}</a>", escape(href), escape(text))
}

/// "2026-12-07 06:15 UTC" from an RFC 3339 timestamp (as given when it is not one).
fn date(started_at: &str) -> String {
    match (started_at.get(..10), started_at.get(11..16)) {
        (Some(day), Some(time)) if started_at.ends_with('Z') => format!("{day} {time} UTC"),
        _ => started_at.to_owned(),
    }
}

fn kind(run: &Run) -> String {
    match &run.what {
        What::Experiment(experiment, _) => format!("experiment {}", experiment.name),
        What::Rounds(rounds) if run.folder.ends_with("-demo") => format!("demo, {} round(s)", rounds.len()),
        What::Rounds(rounds) if rounds.len() == 1 => "round".into(),
        What::Rounds(rounds) => format!("report of {} rounds", rounds.len()),
        What::Unreadable(_) => "not readable".into(),
    }
}

/// The answer for one mix as the run's report gives it: the verdict, the ratio, each target's
/// maximum passing rate.
fn answer(round: &RoundResult) -> String {
    let name = if round.name == round.mix { round.name.clone() } else { format!("{} (mix {})", round.name, round.mix) };
    let rates: Vec<String> = round
        .targets()
        .iter()
        .map(|t| format!("{} {}", t.label, format::max_rate(round.max_rate.get(&t.name), round.plan.start_rate)))
        .collect();
    format!(
        "<b>{}</b>: {}; {} {} ({})",
        escape(&name),
        escape(&mix_verdict::judge(round).headline()),
        escape(&format::ratio_words(round)),
        escape(&format::round_ratio(round)),
        escape(&rates.join(", "))
    )
}

/// The data set of a run's rounds in words.
fn data_set(rounds: &[RoundResult]) -> String {
    let Some(first) = rounds.first() else { return format::NONE.into() };
    match &first.data_set {
        Some(d) if rounds.iter().all(|r| r.data_set.as_ref() == Some(d)) => format!(
            "{} orders, {} items, note {} B (about {} each)",
            format::count(d.orders as f64),
            d.items_per_order,
            d.note_bytes,
            format::bytes(d.approx_doc_bytes as f64)
        ),
        Some(_) => "data sets differ between rounds".into(),
        None => "data set not recorded".into(),
    }
}

/// Data set, staircase and repeats, targets and budgets of a run's rounds.
fn settings(rounds: &[RoundResult]) -> String {
    let Some(first) = rounds.first() else { return format::NONE.into() };
    let data = data_set(rounds);
    let targets: Vec<String> = first.targets().iter().map(|t| t.label.clone()).collect();
    format!(
        "{}<br>{} repeat(s), {} s steps from {} req/s<br>{}<br><small>budget: {}</small>",
        escape(&data),
        first.repeats.len(),
        first.plan.step_seconds.as_secs_f64(),
        first.plan.start_rate,
        escape(&targets.join(", ")),
        escape(first.budget.as_deref().unwrap_or("not recorded"))
    )
}

fn experiment_answer(experiment: &Experiment) -> String {
    let mut counts: Vec<(String, usize)> = Vec::new();
    for (_, verdict) in &experiment.verdicts {
        match counts.iter_mut().find(|(v, _)| v == verdict) {
            Some((_, n)) => *n += 1,
            None => counts.push((verdict.clone(), 1)),
        }
    }
    let summary: Vec<String> = counts.iter().map(|(v, n)| format!("{n} {v}")).collect();
    let rows: String =
        experiment.verdicts.iter().map(|(row, v)| format!("<li><b>{}</b>: {}</li>", escape(v), escape(row))).collect();
    let unread = match experiment.unread_rounds {
        0 => String::new(),
        n => format!("<br><span class=bad>{n} round folder(s) could not be read</span>"),
    };
    let summary = if summary.is_empty() { "no study rows".to_owned() } else { summary.join(", ") };
    format!(
        "{}<br><details><summary>{}</summary><ul>{rows}</ul></details>{unread}",
        escape(&experiment.title),
        escape(&summary),
    )
}

/// One row of the table.
fn row(runs: &[Run], index: usize, pairs: &[Pair]) -> String {
    let run = &runs[index];
    let title =
        if run.has_report { link(&format!("{}/report.html", run.folder), &run.folder) } else { escape(&run.folder) };
    let previous = pairs.iter().filter(|p| p.newer == index).min_by_key(|p| p.older);
    let compare = previous.map_or_else(String::new, |p| link(&p.file, &format!("with {}", runs[p.older].folder)));
    let cells = match &run.what {
        What::Unreadable(reason) => {
            return format!(
                "<tr><td>{title}<br><small>{}</small></td><td colspan=6 class=bad>{}</td></tr>\n",
                kind(run),
                escape(reason)
            );
        }
        What::Rounds(rounds) => [
            date(run.started_at().unwrap_or_default()),
            rounds.first().map_or_else(String::new, |r| format!("{} cores, {}", r.machine.cores, r.machine.os)),
            rounds.iter().find_map(|r| r.commit.clone()).unwrap_or_else(|| "not recorded".into()),
        ]
        .map(|c| escape(&c))
        .into_iter()
        .chain([
            settings(rounds),
            format!("<ul>{}</ul>", rounds.iter().map(|r| format!("<li>{}</li>", answer(r))).collect::<String>()),
        ])
        .collect::<Vec<_>>(),
        What::Experiment(experiment, rounds) => [
            date(&experiment.started_at),
            experiment.machine.clone(),
            experiment.commit.clone().unwrap_or_else(|| "not recorded".into()),
        ]
        .map(|c| escape(&c))
        .into_iter()
        .chain([
            format!(
                "{}<br><small>budget: {}</small>",
                escape(&experiment.settings),
                escape(experiment.budget.as_deref().unwrap_or("not recorded"))
            ),
            format!("{}<br><small>{} round(s)</small>", experiment_answer(experiment), rounds.len()),
        ])
        .collect(),
    };
    let cells: String = cells.iter().map(|c| format!("<td>{c}</td>")).collect();
    format!("<tr><td>{title}<br><small>{}</small></td>{cells}<td>{compare}</td></tr>\n", kind(run))
}

/// `results/index.html`.
pub fn index(runs: &[Run], pairs: &[Pair]) -> String {
    let readable = runs.iter().filter(|r| !matches!(r.what, What::Unreadable(_))).count();
    let mut out = format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>orders-bench: every run</title>\
         <style>{STYLE}</style></head><body>\n<h1>Every run in this folder</h1>\n<p>{readable} run(s), newest first, \
         each as its own <code>result.json</code> says it, and {} folder(s) that are not readable runs, at the end. \
         Written {} by <code>orders-bench results</code>; run it again after a new run.</p>\n",
        runs.len() - readable,
        orders_core::Timestamp::now()
    );
    let comparable: Vec<&Run> = runs.iter().filter(|r| !r.rounds().is_empty()).collect();
    // The newest run and the nearest older one it can be compared with (the first pair found):
    // the comparison most often wanted; else the two newest.
    let (older, newer) = pairs.first().map_or((runs.get(1), runs.first()), |p| (runs.get(p.older), runs.get(p.newer)));
    let options = |selected: Option<&Run>| -> String {
        comparable
            .iter()
            .map(|r| {
                let chosen = selected.is_some_and(|s| s.folder == r.folder);
                format!("<option{}>{}</option>", if chosen { " selected" } else { "" }, escape(&r.folder))
            })
            .collect()
    };
    let (a, b) = (options(older), options(newer));
    let _ = writeln!(
        out,
        "<form id=\"pick\">Compare <select id=\"a\">{a}</select> with <select id=\"b\">{b}</select> \
         <button>compare</button> <span id=\"none\" class=\"bad\"></span></form>"
    );
    out.push_str(
        "<table><tr><th>run</th><th>started</th><th>machine</th><th>commit</th><th>settings and budgets</th>\
         <th>answer per mix</th><th>compare</th></tr>\n",
    );
    for index in 0..runs.len() {
        out.push_str(&row(runs, index, pairs));
    }
    out.push_str("</table>\n");
    let list: String = pairs
        .iter()
        .map(|p| format!("<li>{}</li>", link(&p.file, &format!("{} → {}", runs[p.older].folder, runs[p.newer].folder))))
        .collect();
    let _ = writeln!(out, "<details><summary>Every comparison ({})</summary><ul>{list}</ul></details>", pairs.len());
    let map: serde_json::Map<String, serde_json::Value> = pairs
        .iter()
        .map(|p| (format!("{}|{}", runs[p.older].folder, runs[p.newer].folder), p.file.clone().into()))
        .collect();
    // Inside <script>, "</" must not appear: JSON allows "<\/".
    let map = serde_json::Value::Object(map).to_string().replace("</", "<\\/");
    let _ = writeln!(
        out,
        "<script>const pages = {map};\n\
         document.getElementById('pick').onsubmit = (e) => {{ e.preventDefault();\n\
         const a = document.getElementById('a').value, b = document.getElementById('b').value;\n\
         const page = pages[a + '|' + b] || pages[b + '|' + a];\n\
         if (page) {{ window.location.href = page; }} else {{ document.getElementById('none').textContent =\n\
         a === b ? 'pick two different runs' : 'these two runs have no round of the same name'; }} }};</script>"
    );
    out.push_str("</body></html>\n");
    out
}

/// A comparison page under `results/compare/`: both runs named, then `compare`'s tables.
pub fn comparison(older: &Run, newer: &Run, blocks: &[Block]) -> String {
    let mut page = vec![
        Block::Heading(1, format!("{} → {}", older.folder, newer.folder)),
        Block::Paragraph(format!(
            "A: `{}` ({}), B: `{}` ({}); rounds matched by name, as `orders-bench compare A B` does. Back to the list: \
             `results/index.html`.",
            older.folder,
            date(older.started_at().unwrap_or_default()),
            newer.folder,
            date(newer.started_at().unwrap_or_default()),
        )),
    ];
    let (data_a, data_b) = (data_set(older.rounds()), data_set(newer.rounds()));
    if data_a != data_b {
        page.push(Block::Paragraph(format!("**The data sets differ**: A {data_a}; B {data_b}.")));
    }
    page.extend(blocks.iter().cloned());
    doc::html(&format!("{} → {}", older.folder, newer.folder), &page).replacen(
        "<body>\n",
        "<body>\n<p><a href=\"../index.html\">every run</a></p>\n",
        1,
    )
}
