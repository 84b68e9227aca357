//! `experiment durability`: study S2's finding F4, that a comparison's durability settings can
//! decide it. Four settings: both wait for the disk (the services' defaults); PostgreSQL
//! `synchronous_commit=off` against MongoDB `w:majority, j:true` (what S2 measured without
//! knowing); PostgreSQL waiting against MongoDB `w:1, j:false`; neither waiting. The two mixed
//! ones are UNFAIR: the fairness gate refuses them, the experiment runs them knowingly
//! (`--allow-mismatch`) and marks every such row. Per setting, inserts and status updates at
//! 1 KB and 100 KB (writes with `Prefer: return=minimal` when both services honour it): a short
//! closed loop (S2's measure, which also places the staircase), the staircase's maximum rates and
//! their ratio, WAL flushes and journal syncs per write, and the gate's verdict.

use super::Ctx;
use super::closed_loop::Work;
use super::compare::Comparison;
use super::doc_size::{self, ClosedSummary, DocSize};
use super::figures::RoundFigures;
use super::output::{Outcome, RoundRef};
use super::rounds::{self, RoundPlan};
use super::studies::{self, Reference};
use super::variant::{self, Variant, mongo, pg};
use crate::experiment::engine::Target;
use anyhow::Result;
use orders_bench_report::charts::{self, Chart, Point, Series};
use orders_bench_report::doc::Block;
use orders_bench_report::format::{self, NONE};
use serde::Serialize;

pub fn variants() -> Vec<Variant> {
    let variant = |name, label, commit, w, j, fair| Variant {
        name,
        label,
        pg_env: vec![("PG_SYNCHRONOUS_COMMIT", commit)],
        mongo_env: vec![("MONGO_WRITE_CONCERN", w), ("MONGO_JOURNAL", j)],
        expect: vec![pg("synchronous_commit", commit), mongo("w", w), mongo("j", j)],
        fair,
    };
    vec![
        variant("both-wait", "both wait for the disk", "on", "majority", "true", true),
        variant(
            "pg-async",
            "PG synchronous_commit=off vs MongoDB w:majority, j:true",
            "off",
            "majority",
            "true",
            false,
        ),
        variant("mongo-async", "PG synchronous_commit=on vs MongoDB w:1, j:false", "on", "1", "false", false),
        variant("neither-waits", "neither waits", "off", "1", "false", true),
    ]
}

const SIZES: [DocSize; 2] = [doc_size::SIZES[0], doc_size::SIZES[2]];

#[derive(Debug, Clone, Serialize)]
struct Workload {
    mix: &'static str,
    size: &'static str,
    approx_doc_bytes: u64,
    closed_loop: ClosedSummary,
    round: Option<RoundFigures>,
}

#[derive(Debug, Clone, Serialize)]
struct SettingResult {
    name: &'static str,
    label: &'static str,
    fair: bool,
    settings: String,
    workloads: Vec<Workload>,
}

fn gate_text(f: &RoundFigures) -> String {
    if f.fair { "gate passed".into() } else { "gate refused it (durability); run knowingly".into() }
}

fn ours_text(w: &Workload) -> String {
    let unit = if w.mix == "insert" { "inserts" } else { "updates" };
    let mut text = w.closed_loop.text(unit);
    if let Some(f) = &w.round {
        text.push_str(&format!(
            "; staircase {}; WAL flushes {} / journal syncs {} per write; {}",
            f.rates_text(),
            format::seconds(f.pg_figures.wal_flushes_per_write, 2),
            format::seconds(f.mongo_figures.journal_syncs_per_write, 2),
            gate_text(f)
        ));
    }
    text
}

/// The study's row for a setting's workload, the value of ours it is judged by, and whether that
/// value is a staircase's ratio (S1 measured inserts with one; S2 closed loops).
fn reference<'a>(
    results: &'a [SettingResult],
    setting: &str,
    w: &'a Workload,
) -> (&'static Reference, Option<f64>, bool) {
    let closed = w.closed_loop.ratio();
    let other = |name: &str| {
        results
            .iter()
            .find(|s| s.name == name)
            .and_then(|s| s.workloads.iter().find(|o| o.mix == w.mix && o.size == w.size))
    };
    let large = w.size == SIZES[1].label;
    match (w.mix, setting) {
        ("insert", "both-wait") if !large => {
            (&studies::S1_INSERT_DEFAULTS, w.round.as_ref().and_then(|f| f.ratio), true)
        }
        ("insert", _) => (&studies::S2_UPDATES_ONLY, None, false),
        (_, "both-wait") if large => (&studies::S2_BOTH_WAIT_100KB, closed, false),
        (_, "both-wait") => (&studies::S2_BOTH_WAIT_AT_100KB_ONLY, None, false),
        (_, "pg-async") => (if large { &studies::S2_UPDATES[2] } else { &studies::S2_UPDATES[0] }, closed, false),
        (_, "mongo-async") => {
            let gain = other("both-wait").and_then(|base| Some(w.closed_loop.mongo? / base.closed_loop.mongo?));
            (&studies::S2_DOCKER_MONGO, gain, false)
        }
        _ => (&studies::S2_NEITHER_WAITS, None, false),
    }
}

fn comparisons(results: &[SettingResult]) -> Vec<Comparison> {
    let mut rows = Vec::new();
    for setting in results {
        for w in &setting.workloads {
            let (reference, value, staircase) = reference(results, setting.name, w);
            let workload = format!("{}, {} {}", setting.label, w.mix, w.size);
            let same_step = staircase && w.round.as_ref().is_some_and(RoundFigures::same_step);
            let row = Comparison::new(reference, workload, ours_text(w)).judged(reference, value).staircase(same_step);
            rows.push(row.unfair(!setting.fair));
        }
    }
    let status_large = |name: &str| {
        results
            .iter()
            .find(|s| s.name == name)
            .and_then(|s| s.workloads.iter().find(|w| w.mix == "status" && w.size == SIZES[1].label))
    };
    if let (Some(async_pg), Some(base)) = (status_large("pg-async"), status_large("both-wait")) {
        let gain = async_pg.closed_loop.pg.zip(base.closed_loop.pg).filter(|(_, b)| *b > 0.0).map(|(a, b)| a / b);
        let reference = &studies::S2_PG_ASYNC_GAIN_100KB;
        let text = format!(
            "PG closed loop {} updates/s with synchronous_commit=off against {} with it on ({})",
            format::opt_count(async_pg.closed_loop.pg),
            format::opt_count(base.closed_loop.pg),
            gain.map_or(NONE.into(), |g| format!("{g:.2}×"))
        );
        rows.push(Comparison::new(reference, "status 100 KB, PG off against on", text).judged(reference, gain));
    }
    rows
}

fn detail_table(results: &[SettingResult]) -> Block {
    let mut rows = Vec::new();
    for setting in results {
        for w in &setting.workloads {
            let f = w.round.as_ref();
            rows.push(vec![
                if setting.fair { setting.label.to_owned() } else { format!("**UNFAIR** {}", setting.label) },
                format!("{} {}", w.mix, w.size),
                f.map_or(NONE.into(), |f| format::max_rate(f.pg.as_ref(), f.start_rate)),
                f.map_or(NONE.into(), |f| format::max_rate(f.mongo.as_ref(), f.start_rate)),
                f.map_or(NONE.into(), RoundFigures::ratio_text),
                format!(
                    "{} / {}{}",
                    format::opt_count(w.closed_loop.pg),
                    format::opt_count(w.closed_loop.mongo),
                    w.closed_loop.pgh.map_or(String::new(), |h| format!(" (hybrid {})", format::count(h)))
                ),
                f.map_or(NONE.into(), |f| format::seconds(f.pg_figures.wal_flushes_per_write, 2)),
                f.map_or(NONE.into(), |f| format::seconds(f.mongo_figures.journal_syncs_per_write, 2)),
                f.map_or(NONE.into(), |f| {
                    if f.fair {
                        "passed".into()
                    } else {
                        format!("refused: {}", f.mismatches.first().map_or("", String::as_str))
                    }
                }),
            ]);
        }
    }
    Block::Table {
        header: [
            "setting",
            "workload",
            "Postgres max rate",
            "MongoDB max rate",
            "ratio",
            "closed loop per s (PG / MongoDB)",
            "WAL flushes per write",
            "journal syncs per write",
            "fairness gate",
        ]
        .iter()
        .map(|h| (*h).to_owned())
        .collect(),
        rows,
    }
}

/// Per mix, closed-loop writes/s by setting (x: the setting's number), one line per target and
/// size: what each database gains from not waiting.
fn charts(results: &[SettingResult]) -> Vec<(String, String, String)> {
    let numbers: Vec<String> = results.iter().enumerate().map(|(i, s)| format!("{} {}", i + 1, s.label)).collect();
    ["insert", "status"]
        .iter()
        .map(|mix| {
            let mut series = Vec::new();
            for (n, size) in SIZES.iter().enumerate() {
                for target in Target::ALL {
                    let (label, color) = (target.label(), target.color());
                    let points = results
                        .iter()
                        .enumerate()
                        .filter_map(|(i, s)| {
                            let w = s.workloads.iter().find(|w| w.mix == *mix && w.size == size.label)?;
                            let y = match target {
                                Target::Pg => w.closed_loop.pg?,
                                Target::Mongo => w.closed_loop.mongo?,
                                Target::Pgh => w.closed_loop.pgh?,
                            };
                            Some(Point { x: i as f64 + 1.0, y, ok: s.fair })
                        })
                        .collect::<Vec<_>>();
                    if target == Target::Pgh && points.is_empty() {
                        continue;
                    }
                    series.push(Series {
                        label: format!("{label} {}", size.label),
                        color,
                        points,
                        faint: false,
                        dashed: n > 0,
                    });
                }
            }
            let chart = Chart {
                title: format!("{mix}: closed-loop writes/s by durability setting"),
                x_label: "setting (see the caption)".into(),
                y_label: "writes/s (log scale)".into(),
                log_y: true,
                series,
                reference: None,
                diagonal: false,
                marker: None,
            };
            (
                format!("durability-{mix}"),
                format!("{mix}: closed-loop writes/s per setting: {} (hollow: UNFAIR)", numbers.join(", ")),
                charts::render(&chart),
            )
        })
        .collect()
}

pub async fn run(ctx: &mut Ctx, only: &[String], sizes: &[String]) -> Result<Outcome> {
    let variants = variant::select(variants(), only)?;
    let sizes = doc_size::select(sizes, &SIZES)?;
    let mut results = Vec::new();
    let mut refs = Vec::new();
    'settings: for variant in &variants {
        let mut result = SettingResult {
            name: variant.name,
            label: variant.label,
            fair: variant.fair,
            settings: variant.assignments(),
            workloads: Vec::new(),
        };
        for size in &sizes {
            let data = doc_size::data_for(size, ctx.scale.orders)?;
            for (mix, work) in [("insert", Work::Insert), ("status", Work::Status)] {
                let Some(urls) = ctx.use_variant(variant).await? else { continue 'settings };
                let minimal = ctx.minimal();
                let manifest = rounds::reload(ctx, data).await?;
                let runs =
                    rounds::closed_loop(ctx, &urls, work, ctx.scale.closed_runs, ctx.scale.closed_seconds, minimal)
                        .await?;
                let closed = ClosedSummary::of(runs);
                let staircase = ctx.scale.staircase(closed.slower());
                let plan = RoundPlan {
                    variant,
                    name: format!("{mix} {} ({})", size.label, variant.label),
                    dir: rounds::folder(&[variant.name, size.key, mix]),
                    mix,
                    data,
                    staircase,
                    minimal,
                    prefill: 0,
                };
                let measured = rounds::measure(ctx, &plan).await?;
                if measured.is_some() {
                    refs.push(RoundRef {
                        name: plan.name.clone(),
                        variant: variant.label.into(),
                        dir: plan.dir.clone(),
                    });
                }
                result.workloads.push(Workload {
                    mix,
                    size: size.label,
                    approx_doc_bytes: manifest.approx_doc_bytes,
                    closed_loop: closed,
                    round: measured.map(|m| m.figures),
                });
            }
        }
        results.push(result);
    }
    Ok(Outcome {
        title: "Experiment durability: S2's finding F4 (read the durability settings back)".into(),
        statements: Vec::new(),
        summary: format!(
            "Inserts and status updates at {} under {} durability setting(s): {}. Per workload a closed loop (S2's \
             measure; it also places the staircase), then the staircase on reloaded data. PostgreSQL waits for the \
             WAL flush of each commit unless `synchronous_commit=off`; MongoDB for the journal with `j: true`. S2's \
             managed PostgreSQL ran `synchronous_commit=off` against a MongoDB that waited for its journal, unnoticed.",
            sizes.iter().map(|s| s.label).collect::<Vec<_>>().join(" and "),
            variants.len(),
            variants
                .iter()
                .map(|v| format!("`{}`{}", v.label, if v.fair { "" } else { " (UNFAIR)" }))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        setups: vec![studies::S2, studies::S2_BOTH_WAIT, studies::S2_DOCKER, studies::S1],
        comparisons: comparisons(&results),
        details: vec![Block::Heading(2, "Per setting".into()), detail_table(&results)],
        charts: charts(&results),
        variants: serde_json::to_value(&results)?,
        rounds: refs,
        extra: serde_json::Map::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mixed_settings_are_the_unfair_ones() {
        let all = variants();
        let unfair: Vec<&str> = all.iter().filter(|v| !v.fair).map(|v| v.name).collect();
        assert_eq!(unfair, ["pg-async", "mongo-async"]);
        assert_eq!(all[2].assignments(), "PG_SYNCHRONOUS_COMMIT=on MONGO_WRITE_CONCERN=1 MONGO_JOURNAL=false");
    }
}
