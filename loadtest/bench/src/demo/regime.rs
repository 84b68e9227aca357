//! The demo's regime check (docs/fairness.md, "The budget regime"): before the mixes, reads at a
//! few low rates on both targets at once under the run's CPU budget, then under a quota of every
//! core (the reference: same cgroups, same counter, a quota no database reaches), the budget put
//! back after. The report says per database what the budget changed in its CPU per read, how often
//! the kernel throttled it, and whether MongoDB ÷ PostgreSQL moved by more than 10%.

use crate::budget::{Applied, Cap};
use crate::round::{self, RoundSpec, Setup};
use anyhow::{Context, Result};
use orders_bench_engines::stack::Stack;
use orders_bench_model::regime::{RegimeCheck, RegimeStep};
use orders_bench_model::result::{RatePlan, RoundResult};
use orders_bench_model::step_cost;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

/// The check's rates: far below either engine's knee under a quarter core on a slow machine (the
/// slowest seen held 640 reads/s), so each database's cost is its own work, not the throttle's
/// queueing.
const RATES: (u32, u32) = (150, 300);

/// The check's round: `read` on the fixed low staircase, once, no lead-in, its data reset as
/// `reset` says (the first round as the demo resets, which loads a small data set; the second
/// keeps them: reads change nothing).
fn spec(base: &RoundSpec, name: String, quick: bool, reset: crate::fresh::Reset) -> RoundSpec {
    let step_seconds = Duration::from_secs(if quick { 2 } else { 4 });
    RoundSpec {
        name,
        mix: "read".into(),
        plan: RatePlan { start_rate: RATES.0, step: RATES.1 - RATES.0, max_rate: RATES.1, step_seconds, factor: None },
        repeats: 1,
        extra_repeats: 0,
        early_stop: false,
        poll_interval: step_seconds,
        reset,
        deadline: None,
        lead_in: None,
        ..base.clone()
    }
}

/// Runs the check into `dir` when the databases have a CPU budget of `cores`; the budget is theirs
/// again afterwards, also after an error.
pub async fn check(
    stack: &Stack,
    cores: f64,
    base: &RoundSpec,
    setup: &Setup,
    dir: &Path,
    quick: bool,
) -> Result<RegimeCheck> {
    let every_core = crate::procstat::cores() as f64;
    eprintln!(
        "demo: regime check: reads at {} and {} req/s under {cores} CPU, then with a quota of every core",
        RATES.0, RATES.1
    );
    let budgeted = spec(base, format!("regime, {cores} CPU"), quick, base.reset.clone());
    let budgeted = round::run_round(&budgeted, setup, &dir.join("budget")).await?;
    let reference = Applied::cpus(stack.clone(), Cap::At(every_core)).await.context("the reference's quota")?;
    let unbudgeted = round::run_round(
        &spec(base, format!("regime, quota of {every_core} cores"), quick, crate::fresh::Reset::Keep),
        setup,
        &dir.join("reference"),
    )
    .await;
    reference.restore().await?;
    let check = measured(cores, every_core, &budgeted, &unbudgeted?, dir);
    eprintln!("demo: regime check: {}", said(&check));
    Ok(check)
}

/// The check from its two rounds.
fn measured(cores: f64, every_core: f64, budgeted: &RoundResult, reference: &RoundResult, dir: &Path) -> RegimeCheck {
    let names: Vec<String> = budgeted.targets().into_iter().map(|t| t.name).collect();
    let costs = |round: &RoundResult, rate: u32| -> BTreeMap<String, step_cost::Cost> {
        names.iter().map(|name| (name.clone(), step_cost::at(round, name, rate))).collect()
    };
    RegimeCheck {
        budget_cores: cores,
        reference_cores: every_core,
        mix: "read".into(),
        steps: step_cost::rates(budgeted)
            .into_iter()
            .map(|rate| RegimeStep { rate, budget: costs(budgeted, rate), reference: costs(reference, rate) })
            .collect(),
        dir: dir.file_name().map_or_else(|| dir.display().to_string(), |d| d.to_string_lossy().into_owned()),
    }
}

/// One line for the terminal.
fn said(check: &RegimeCheck) -> String {
    let each = |name: &str| {
        check.costs(name).map_or(format!("{name} not measured"), |(b, r)| {
            format!("{name} {b:.0} µs a read (with every core {r:.0})")
        })
    };
    let shift = check.shift().map_or("not measured".into(), |s| format!("{s:.2}"));
    format!("{}, {}; MongoDB ÷ PostgreSQL under the budget ÷ with every core: {shift}", each("pg"), each("mongo"))
}
