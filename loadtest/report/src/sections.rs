//! The section of one round in a report: what was offered and with which settings, the two charts,
//! the steps of every repeat, the figures that explain the result (PostgreSQL, MongoDB) and who
//! used the CPU, with what limited each target where it first failed and the per-step figures that
//! verdict rests on (`evidence`); the engines' tables of explaining figures are `explain`'s. Values
//! of several repeats share a cell, separated by " / ".

use super::doc::Block;
use super::format::{self, NONE, joined};
use crate::charts::{self, Chart, Point, Series};
use orders_bench_model::result::{RatePlan, RepeatResult, RoundResult, TargetResult};
use orders_bench_model::verdict::{Outcome, StepResult};

mod explain;
use explain::explain_tables;

fn chart(round: &RoundResult, latency: bool) -> Chart {
    let mut series = Vec::new();
    for repeat in &round.repeats {
        for (k, target) in round.targets().iter().enumerate() {
            let Some(t) = repeat.targets.get(&target.name) else { continue };
            let points = t
                .steps
                .iter()
                .filter(|s| s.complete)
                .filter_map(|s| {
                    let y = if latency { s.p95_ms? } else { s.achieved_rate };
                    Some(Point { x: f64::from(s.rate), y, ok: s.passed })
                })
                .collect();
            series.push(Series {
                label: target.label.clone(),
                color: charts::color(k),
                points,
                faint: repeat.index > 1,
                dashed: k % 2 == 1,
            });
        }
    }
    if latency {
        Chart {
            title: format!("{}: p95 latency by offered rate", round.name),
            x_label: "offered rate per target, requests/s".into(),
            y_label: "p95 latency, ms (log scale)".into(),
            log_y: true,
            series,
            reference: Some((round.pass_mark.p95_ms, format!("pass mark {} ms", round.pass_mark.p95_ms))),
            diagonal: false,
            marker: None,
        }
    } else {
        Chart {
            title: format!("{}: achieved by offered rate", round.name),
            x_label: "offered rate per target, requests/s".into(),
            y_label: "achieved rate, requests/s".into(),
            log_y: false,
            series,
            reference: None,
            diagonal: true,
            marker: None,
        }
    }
}

/// The two charts of a round as (file stem suffix, caption, SVG).
pub fn charts(round: &RoundResult) -> Vec<(&'static str, String, String)> {
    vec![
        (
            "p95",
            format!("{}: p95 latency per step (hollow: the step failed; faint: repeats 2+)", round.name),
            charts::render(&chart(round, true)),
        ),
        (
            "achieved",
            format!("{}: achieved vs offered rate (dashed: achieved = offered)", round.name),
            charts::render(&chart(round, false)),
        ),
    ]
}

fn steps_table(round: &RoundResult) -> Block {
    let mut header = vec!["offered req/s".to_owned()];
    let targets = round.targets();
    for target in &targets {
        for column in ["achieved req/s", "p50 ms", "p95 ms", "p99 ms", "failed", "pass"] {
            header.push(format!("{} {column}", target.label));
        }
    }
    // Repeats after one whose first rate a target failed climb a lower staircase: a row per rate
    // any repeat offered.
    let mut rates: Vec<u32> =
        round.repeats.iter().flat_map(|r| r.plan.unwrap_or(round.plan).rates()).chain(round.plan.rates()).collect();
    rates.sort_unstable();
    rates.dedup();
    let rows = rates
        .iter()
        .filter(|rate| {
            round.repeats.iter().any(|r| r.targets.values().any(|t| step_at(t, **rate).is_some_and(|s| s.complete)))
        })
        .map(|rate| {
            let mut row = vec![format::count(f64::from(*rate))];
            for target in &targets {
                let steps: Vec<_> =
                    round.repeats.iter().map(|r| r.targets.get(&target.name).and_then(|t| step_at(t, *rate))).collect();
                let cell = |f: &dyn Fn(&StepResult) -> String| {
                    joined(steps.iter().map(|s| s.filter(|s| s.complete).map_or_else(|| NONE.to_owned(), f)))
                };
                row.push(cell(&|s| format!("{:.0}", s.achieved_rate)));
                row.push(cell(&|s| format::ms(s.p50_ms)));
                row.push(cell(&|s| format::ms(s.p95_ms)));
                row.push(cell(&|s| format::ms(s.p99_ms)));
                row.push(cell(&|s| format!("{:.1}%", s.failed_rate * 100.0)));
                row.push(cell(&|s| match (s.passed, s.stall.as_ref().map(|st| st.outcome)) {
                    (true, Some(Outcome::Discounted)) => "✓ (stall discounted)".into(),
                    (true, _) => "✓".into(),
                    (false, Some(Outcome::Inconclusive)) => "? (stall: inconclusive)".into(),
                    (false, _) => format!("✗ {}", s.reasons.join(", ")),
                }));
            }
            row
        })
        .collect();
    Block::Table { header, rows }
}

/// `target`'s step at `rate`, if it climbed one.
fn step_at(target: &TargetResult, rate: u32) -> Option<&StepResult> {
    target.steps.iter().find(|s| s.rate == rate)
}

/// The rates offered, and which repeats started lower (after a target failed a first rate).
fn staircases(round: &RoundResult) -> String {
    let rates = |plan: &RatePlan| plan.rates().iter().map(u32::to_string).collect::<Vec<_>>().join("/");
    let first = round.repeats.first().and_then(|r| r.plan).unwrap_or(round.plan);
    let mut words = rates(&first);
    for repeat in &round.repeats {
        if let Some(plan) = repeat.plan.filter(|p| p.start_rate != first.start_rate) {
            words.push_str(&format!(" (repeat {}: {}, lowered)", repeat.index, rates(&plan)));
        }
    }
    words
}

/// Every stall of the shared machine that decided a step's verdict, or would have.
fn stalls(round: &RoundResult) -> Vec<String> {
    let mut items = Vec::new();
    for repeat in &round.repeats {
        for target in round.targets() {
            let label = &target.label;
            let steps = repeat.targets.get(&target.name).map(|t| t.steps.as_slice()).unwrap_or_default();
            for step in steps.iter().filter(|s| s.complete) {
                let Some(stall) = step.stall.as_ref().filter(|st| st.mattered()) else { continue };
                items.push(format!(
                    "repeat {}: {label} at {} req/s: {}",
                    repeat.index,
                    format::count(f64::from(step.rate)),
                    stall.note
                ));
            }
        }
    }
    items
}

fn cpu_table(round: &RoundResult) -> Block {
    let names: Vec<String> =
        round.repeats.first().map(|r| r.cpu.components.iter().map(|c| c.name.clone()).collect()).unwrap_or_default();
    let mut rows: Vec<Vec<String>> = names
        .iter()
        .map(|name| {
            let of = |r: &RepeatResult| r.cpu.components.iter().find(|c| &c.name == name).cloned();
            vec![
                name.clone(),
                joined(round.repeats.iter().map(|r| of(r).map_or(NONE.into(), |c| format::seconds(c.cpu_seconds, 1)))),
                joined(round.repeats.iter().map(|r| of(r).map_or(NONE.into(), |c| format::seconds(c.cores_used, 2)))),
                joined(round.repeats.iter().map(|r| {
                    of(r).map_or(NONE.into(), |c| {
                        c.note.clone().unwrap_or_else(|| format::seconds(c.per_1k_requests, 3))
                    })
                })),
            ]
        })
        .collect();
    rows.push(vec![
        "everything else on the machine".into(),
        joined(round.repeats.iter().map(|r| format::seconds(r.cpu.other_seconds, 1))),
        joined(
            round.repeats.iter().map(|r| format::seconds(r.cpu.other_seconds.map(|s| s / r.cpu.seconds.max(1e-9)), 2)),
        ),
        NONE.into(),
    ]);
    Block::Table {
        header: vec!["process (tree)".into(), "CPU s".into(), "cores (avg)".into(), "CPU s per 1,000 requests".into()],
        rows,
    }
}

fn limits(round: &RoundResult) -> Vec<String> {
    let mut items = Vec::new();
    for repeat in &round.repeats {
        for target in round.targets() {
            let label = &target.label;
            if let Some(limit) = repeat.cpu.limits.get(&target.name) {
                let kind = limit.kind.words();
                items.push(format!(
                    "repeat {}: {label} first failed at {} req/s; limit: **{kind}**: {}",
                    repeat.index,
                    format::count(f64::from(limit.rate)),
                    limit.text
                ));
            }
        }
    }
    items
}

pub fn round(round: &RoundResult, chart_files: &[(String, String, String)]) -> Vec<Block> {
    let weights: Vec<String> = round.mix_weights.iter().map(|(e, w)| format!("{e} {w}")).collect();
    let first = round.repeats.first();
    let pg_settings = first.and_then(|r| r.explain.pg()).map(|e| &e.settings);
    let pg_setting = |name: &str| pg_settings.and_then(|s| s.get(name)).map_or("?", String::as_str);
    let mongo_settings = first.and_then(|r| r.explain.mongo()).map(|e| &e.settings);
    let mongo_setting = |name: &str| mongo_settings.and_then(|s| s.get(name)).map_or("?", String::as_str);
    let mut blocks = vec![
        Block::Heading(2, format!("Round `{}`", round.name)),
        Block::Paragraph(format!(
            "Mix `{}` ({}); offered {} req/s per target, {} s per step; {} repeat(s){}; early stop after every target \
             failed: {}. Data: {}. Folder: `{}`.",
            round.mix,
            if weights.is_empty() { NONE.into() } else { weights.join(", ") },
            staircases(round),
            round.plan.step_seconds.as_secs_f64(),
            round.repeats.len(),
            match round.repeats.first().and_then(|r| r.start.as_ref()).map(|s| s.reset.as_str()) {
                Some("restored") => ", data restored from a snapshot before each",
                _ if round.repeats.iter().all(|r| r.reseeded) => ", data reloaded before each",
                _ => "",
            },
            joined(round.repeats.iter().map(|r| if r.stopped_early { "yes".to_owned() } else { "no".to_owned() })),
            round.data_set.as_ref().map_or(NONE.into(), |d| format!(
                "{} orders, {} items, note {} bytes",
                format::count(d.orders as f64),
                d.items_per_order,
                d.note_bytes
            )),
            round.dir,
        )),
        Block::Paragraph(format!(
            "PostgreSQL {}: plan_cache_mode `{}`, `{}` statements, GIN fastupdate `{}`, synchronous_commit `{}`, fsync \
             `{}`, pool {}. MongoDB {}: w `{}`, j `{}`, journal `{}`, pool {}, {}.",
            pg_setting("server_version"),
            pg_setting("plan_cache_mode"),
            pg_setting("statement_mode"),
            pg_setting("gin_fastupdate"),
            pg_setting("synchronous_commit"),
            pg_setting("fsync"),
            pg_setting("pool_size"),
            mongo_setting("version"),
            mongo_setting("w"),
            mongo_setting("j"),
            mongo_setting("journal"),
            mongo_setting("pool_size"),
            mongo_setting("topology"),
        )),
    ];
    let notes: Vec<String> =
        round.repeats.iter().flat_map(|r| r.notes.iter().map(move |n| format!("repeat {}: {n}", r.index))).collect();
    if !notes.is_empty() {
        blocks.push(Block::List(notes));
    }
    for (file, caption, svg) in chart_files {
        blocks.push(Block::Chart { file: file.clone(), caption: caption.clone(), svg: svg.clone() });
    }
    blocks.extend(super::start::blocks(round));
    if let Some(probe) = &round.plan_probe {
        blocks.extend(super::probe::blocks(probe));
    }
    blocks.push(Block::Heading(3, "Steps".into()));
    blocks.push(steps_table(round));
    let stalls = stalls(round);
    if !stalls.is_empty() {
        blocks.push(Block::Paragraph(
            "Stalls of the shared machine (every target slow in the same 100 ms, or the load generator late):".into(),
        ));
        blocks.push(Block::List(stalls));
    }
    blocks.extend(super::fleet::blocks(round));
    blocks.push(Block::Heading(3, "What explains it".into()));
    blocks.extend(explain_tables(round));
    blocks.push(Block::Heading(3, "CPU".into()));
    blocks.extend(super::evidence::budget_paragraph(round));
    blocks.push(cpu_table(round));
    let limits = limits(round);
    if !limits.is_empty() {
        blocks.push(Block::List(limits));
    }
    blocks.extend(super::merges::blocks(round));
    blocks.extend(super::evidence::blocks(round));
    blocks
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(rate: u32, passed: bool) -> StepResult {
        StepResult {
            step: 0,
            rate,
            offered: 0,
            count: 100,
            achieved_rate: f64::from(rate),
            failures: 0,
            failed_rate: 0.0,
            p50_ms: Some(1.0),
            p95_ms: Some(2.0),
            p99_ms: Some(3.0),
            dropped: 0,
            complete: true,
            passed,
            reasons: Vec::new(),
            stall: None,
        }
    }

    #[test]
    fn a_repeat_on_a_lowered_staircase_gets_its_rates_in_the_steps_table_and_is_named() {
        let mut round = crate::fixtures::round("read", "read", "2026-12-07T15:00:00Z", &[(300, 0), (300, 200)]);
        let lowered = RatePlan { start_rate: 100, ..round.plan };
        round.plan = lowered;
        round.repeats[0].plan = Some(RatePlan { start_rate: 200, ..lowered });
        round.repeats[1].plan = Some(lowered);
        for (repeat, rates) in round.repeats.iter_mut().zip([[200, 300, 400].as_slice(), &[100, 200, 300, 400]]) {
            for target in repeat.targets.values_mut() {
                target.steps = rates.iter().map(|r| step(*r, *r < 400)).collect();
            }
        }
        let Block::Table { rows, .. } = steps_table(&round) else { panic!("a table") };
        let offered: Vec<&str> = rows.iter().map(|r| r[0].as_str()).collect();
        assert_eq!(offered, ["100", "200", "300", "400"]);
        // The row at 100 req/s has the second repeat's step only; at 200 both repeats'.
        assert!(rows[0][1].contains(NONE) && rows[0][1].contains("100"), "{:?}", rows[0]);
        assert!(!rows[1][1].contains(NONE), "{:?}", rows[1]);
        let words = staircases(&round);
        assert!(words.starts_with("200/300/400") && words.contains("(repeat 2: 100/200/300/400"), "{words}");
    }
}
