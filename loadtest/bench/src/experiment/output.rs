//! The experiment's folder: `result.json` (schema `orders-bench/experiment/1`, documented in
//! loadtest/RESULTS.md), `report.md` and a self-contained `report.html` (the charts inline, also
//! under `charts/`), and the table printed at the end. First what ran and on what, an **UNFAIR**
//! banner when rows ran with unequal durability on purpose, then our figures beside the studies'
//! row by row with a verdict, the charts, the details per variant, and the rounds' own reports.

use super::compare::{self, Comparison};
use super::studies::Setup;
use super::{Ctx, Scale, Size, Versions};
use anyhow::{Context, Result};
use orders_bench_model::result::Machine;
use orders_bench_report::doc::{self, Block};
use serde::Serialize;

pub const SCHEMA: &str = "orders-bench/experiment/1";

/// A round of the experiment and where its own report is.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RoundRef {
    pub name: String,
    pub variant: String,
    pub dir: String,
}

/// What an experiment hands over for writing.
pub struct Outcome {
    pub title: String,
    /// What was run, in a paragraph.
    pub summary: String,
    /// Paragraphs under the summary, also printed after the table: what the run says beyond the
    /// study rows (whether F1 can happen to the hybrid layout; the hybrid at 100 KB).
    pub statements: Vec<String>,
    /// The studies whose figures the rows use.
    pub setups: Vec<Setup>,
    pub comparisons: Vec<Comparison>,
    /// Detail sections (headings and tables).
    pub details: Vec<Block>,
    /// (file stem, caption, SVG).
    pub charts: Vec<(String, String, String)>,
    /// Experiment-specific figures: variants, sizes or settings (see RESULTS.md).
    pub variants: serde_json::Value,
    pub rounds: Vec<RoundRef>,
    /// Further top-level fields of result.json (gin: `hybrid_catalog`).
    pub extra: serde_json::Map<String, serde_json::Value>,
}

#[derive(Serialize)]
struct Ours<'a> {
    versions: &'a Versions,
    machine: Machine,
    mode: &'static str,
    scale: &'a Scale,
    prefer_minimal: bool,
    /// The targets measured (`pg`, `mongo`, `pgh`).
    targets: Vec<&'static str>,
}

#[derive(Serialize)]
struct ResultFile<'a> {
    schema: &'static str,
    experiment: &'static str,
    title: &'a str,
    started_at: &'a str,
    finished_at: String,
    /// The checkout's commit (`crate::repo::commit`).
    #[serde(skip_serializing_if = "Option::is_none")]
    commit: Option<String>,
    ours: Ours<'a>,
    studies: &'a [Setup],
    comparisons: &'a [Comparison],
    variants: &'a serde_json::Value,
    rounds: &'a [RoundRef],
    skipped: &'a [String],
    notes: &'a [String],
    statements: &'a [String],
    #[serde(flatten)]
    extra: &'a serde_json::Map<String, serde_json::Value>,
}

fn our_setup(ctx: &Ctx) -> String {
    let machine = Machine::this();
    if ctx.name == super::Name::Failover {
        // No data set, staircase or closed loop: its own load is in its summary.
        return format!(
            "**Ours**: PostgreSQL {} / MongoDB {}, both services and the load generator on this machine ({} cores, \
             {}), the replicated stack's members on it too, each in its own budget.",
            ctx.versions.postgres.as_deref().unwrap_or("?"),
            ctx.versions.mongodb.as_deref().unwrap_or("?"),
            machine.cores,
            machine.os
        );
    }
    let scale = &ctx.scale;
    let staircase = scale.staircase.map_or("placed around a short closed loop per round".to_owned(), |s| {
        format!("{}..{} by {} req/s per target", s.start, s.max, s.step)
    });
    format!(
        "**Ours**: PostgreSQL {} / MongoDB {}, {} on {} ({} cores, {}); {} orders {} before every round; \
         staircase {staircase}, {} s steps, p95 < 50 ms and < 1% failed; {} repeat(s){}. Size `{}`{}.",
        ctx.versions.postgres.as_deref().unwrap_or("?"),
        ctx.versions.mongodb.as_deref().unwrap_or("?"),
        match (ctx.services.is_local(), ctx.measures(super::engine::Target::Pgh)) {
            (true, false) => "both services and the load generator",
            (true, true) => "all three services (orders-pg, orders-mongo, orders-pg-hybrid) and the load generator",
            (false, _) => "deployed services",
        },
        if ctx.services.is_local() { "this machine" } else { "their machines, the load generator on this one" },
        machine.cores,
        machine.os,
        orders_bench_report::format::count(scale.orders as f64),
        if ctx.restores() { "restored from a snapshot of their first load" } else { "reloaded" },
        scale.step_seconds.as_secs_f64(),
        scale.repeats,
        if ctx.name == super::Name::Gin {
            String::new()
        } else {
            format!(
                "; closed loop {} clients × {} s × {} run(s); `Prefer: return=minimal` on the writes: {}",
                scale.clients,
                scale.closed_seconds.as_secs_f64(),
                scale.closed_runs,
                if ctx.minimal() { "yes" } else { "no (see the notes)" }
            )
        },
        match scale.size {
            Size::Quick => "quick",
            Size::Default => "default",
            Size::Full => "full",
        },
        if ctx.services.is_local() {
            ": the databases, the services and the load share the cores, so absolute rates measure this machine; \
             compare ratios and mechanisms"
        } else {
            ""
        }
    )
}

fn blocks(ctx: &Ctx, outcome: &Outcome) -> Vec<Block> {
    let mut blocks = vec![Block::Heading(1, outcome.title.clone()), Block::Paragraph(outcome.summary.clone())];
    blocks.extend(outcome.statements.iter().cloned().map(Block::Paragraph));
    let unfair: Vec<String> =
        outcome.comparisons.iter().filter(|c| c.unfair).map(|c| format!("{}: {}", c.workload, c.ours)).collect();
    if !unfair.is_empty() {
        blocks.push(Block::Paragraph(
            "**UNFAIR COMPARISON, on purpose.** The rows marked **UNFAIR** ran with one database acknowledging writes \
             before they reach the disk and the other after: the fairness gate refused them and the experiment ran them \
             knowingly (`--allow-mismatch`), to show what study S2's finding F4 is about. Their ratios compare \
             settings, not databases."
                .into(),
        ));
    }
    blocks.push(Block::Paragraph(our_setup(ctx)));
    let mut setups: Vec<String> = Vec::new();
    for setup in &outcome.setups {
        let line = setup.line();
        if !setups.contains(&line) {
            setups.push(line);
        }
    }
    // An experiment that reproduces no study (budget) has no study rows: its details are its table.
    if !outcome.comparisons.is_empty() {
        blocks.push(Block::Paragraph("**The studies' setups** (docs/studies.md):".into()));
        blocks.push(Block::List(setups));
        blocks.push(Block::Heading(2, "Ours beside the studies".into()));
        blocks.push(Block::Paragraph(format!(
            "Rates compare as PostgreSQL / MongoDB ratios (absolute rates depend on the hardware); bytes, shares and \
             factors directly. **reproduced**: within a factor of two of the study's figure (or the mechanism seen); \
             **same direction**: the same database ahead, or the same kind of change, but further off. {}.",
            compare::tally(&outcome.comparisons)
        )));
        blocks.push(compare::table(&outcome.comparisons));
    }
    for (stem, caption, svg) in &outcome.charts {
        blocks.push(Block::Chart { file: format!("charts/{stem}.svg"), caption: caption.clone(), svg: svg.clone() });
    }
    blocks.extend(outcome.details.iter().cloned());
    blocks.push(Block::Heading(2, "Rounds".into()));
    blocks.push(Block::Paragraph(
        "Each round's own report (steps, settings in effect, plans, CPU, the limit of each target) and raw files:"
            .into(),
    ));
    blocks.push(Block::List(
        outcome.rounds.iter().map(|r| format!("`{}` ({}): `{}/report.md`", r.name, r.variant, r.dir)).collect(),
    ));
    let notes: Vec<String> = ctx.skipped.iter().chain(&ctx.notes).cloned().collect();
    if !notes.is_empty() {
        blocks.push(Block::Heading(2, "Notes".into()));
        blocks.push(Block::List(notes));
    }
    blocks
}

/// Writes the folder and returns the table to print.
pub fn write(ctx: &Ctx, outcome: &Outcome, started_at: &str) -> Result<String> {
    let charts = ctx.out.join("charts");
    std::fs::create_dir_all(&charts).with_context(|| format!("creating {}", charts.display()))?;
    for (stem, _, svg) in &outcome.charts {
        std::fs::write(charts.join(format!("{stem}.svg")), svg).with_context(|| format!("writing chart {stem}"))?;
    }
    let blocks = blocks(ctx, outcome);
    std::fs::write(ctx.out.join("report.md"), doc::markdown(&blocks)).context("writing report.md")?;
    std::fs::write(ctx.out.join("report.html"), doc::html(&outcome.title, &blocks)).context("writing report.html")?;
    let file = ResultFile {
        schema: SCHEMA,
        experiment: ctx.name.as_str(),
        title: &outcome.title,
        started_at,
        finished_at: orders_core::Timestamp::now().to_string(),
        commit: crate::repo::commit(),
        ours: Ours {
            versions: &ctx.versions,
            machine: Machine::this(),
            mode: if ctx.services.is_local() { "local" } else { "deployed" },
            scale: &ctx.scale,
            prefer_minimal: ctx.minimal(),
            targets: ctx.targets.iter().map(|t| t.name()).collect(),
        },
        studies: &outcome.setups,
        comparisons: &outcome.comparisons,
        variants: &outcome.variants,
        rounds: &outcome.rounds,
        skipped: &ctx.skipped,
        notes: &ctx.notes,
        statements: &outcome.statements,
        extra: &outcome.extra,
    };
    let text = serde_json::to_string_pretty(&file).context("result as JSON")?;
    std::fs::write(ctx.out.join("result.json"), text + "\n").context("writing result.json")?;
    let table = if outcome.comparisons.is_empty() {
        doc::markdown(&outcome.details)
    } else {
        doc::markdown(&[compare::table(&outcome.comparisons)])
    };
    let statements: String = outcome.statements.iter().map(|s| format!("\n\n{s}")).collect();
    Ok(format!(
        "{}\n\n{}{statements}{}",
        outcome.title,
        table.trim_end(),
        if ctx.skipped.is_empty() { String::new() } else { format!("\n\nskipped: {}", ctx.skipped.join("; ")) }
    ))
}
