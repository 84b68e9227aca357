//! `experiment budget`: whether the databases' CPU budget shifts the two engines against each
//! other. Under a quota of every core (the reference), then under each regime of `--budgets`
//! (by default 0.25 and 0.5 core per database; `none`: out of the cgroups), `read` and `insert`
//! climb the same staircase on both targets at once; every step gives each database's CPU per
//! request, budget used, throttling and context switches. MongoDB ÷ PostgreSQL of the CPU per
//! request, held against the reference's at the same rate, says which regime favours neither
//! engine (docs/fairness.md, "The budget regime"). The services keep the run's worker threads
//! throughout; `--pools` repeats it with other pool sizes.

mod tables;

use super::Ctx;
use super::baseline::{self, Direct};
use super::closed_loop::{Run as ClosedRun, Work};
use super::output::{Outcome, RoundRef};
use super::rounds::{self, Data, RoundPlan};
use super::variant::Variant;
use crate::budget::{Applied, Budget, Cap};
use anyhow::{Context, Result, bail};
use orders_bench_model::result::RoundResult;
use serde::Serialize;
use std::time::Duration;

/// The budgets measured without `--budgets`: the demo's default on two cores and twice that (the
/// reference, `all`, always runs first).
pub const DEFAULT_BUDGETS: [Quota; 2] = [Quota::Cores(0.25), Quota::Cores(0.5)];

/// The mixes: finds by id (the read headline) and inserts (the write one).
const MIXES: [&str; 2] = ["read", "insert"];

/// Inserts cost each database more than reads, and their knees under a quarter core lie lower: their
/// staircase is this share of the reads'.
const INSERT_SHARE: f64 = 0.6;

/// How long each engine is asked directly, per budget.
const DIRECT_LENGTH: Duration = Duration::from_secs(8);

/// A regime favours neither engine while the ratio of their costs stays within this share of
/// the reference's (the demo's regime check holds its budget to the same rule).
pub use orders_bench_model::regime::HOLDS_WITHIN;

pub use orders_bench_model::step_cost::Cost;

/// One offered rate under one budget.
#[derive(Debug, Clone, Serialize)]
pub struct StepRow {
    pub rate: u32,
    pub pg: Cost,
    pub mongo: Cost,
    /// MongoDB's CPU per request ÷ PostgreSQL's.
    pub ratio: Option<f64>,
    /// `ratio` ÷ the unbudgeted ratio at the same rate.
    pub shift: Option<f64>,
}

/// A database's CPU split by a straight line through its steps (cores against requests a second):
/// the slope is what one more request costs, the intercept what it burns with no requests at all
/// (checkpoints, journal flushes, diagnostics capture), which a low rate divides among few requests.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Split {
    pub marginal_us: f64,
    pub idle_cores: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Regime {
    /// `0.25` or `none`.
    pub budget: String,
    pub pool: &'static str,
    pub mix: &'static str,
    pub steps: Vec<StepRow>,
    /// The median of the steps' shifts.
    pub shift: Option<f64>,
    /// The shift at the highest rate both databases passed in both regimes: where the budget
    /// is used most, and where a staircase finds the limits.
    pub top_shift: Option<f64>,
    pub pg_split: Option<Split>,
    pub mongo_split: Option<Split>,
    /// MongoDB's marginal cost ÷ PostgreSQL's, and that ÷ the unbudgeted one.
    pub marginal_ratio: Option<f64>,
    pub marginal_shift: Option<f64>,
    /// Reads only: each engine asked directly (pgbench, the driver) at the staircase's top rate.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub direct: Option<Directly>,
}

/// Each engine asked without our services (`baseline`), beside its cost through them.
#[derive(Debug, Clone, Serialize)]
pub struct Directly {
    pub rate: u32,
    pub pg: Option<Direct>,
    pub mongo: Option<Direct>,
}

/// The least-squares line through (rate, cores) of the steps that have both; needs two rates.
pub fn split(points: &[(f64, f64)]) -> Option<Split> {
    let n = points.len() as f64;
    if points.len() < 2 {
        return None;
    }
    let (mx, my) = (points.iter().map(|p| p.0).sum::<f64>() / n, points.iter().map(|p| p.1).sum::<f64>() / n);
    let sxx: f64 = points.iter().map(|p| (p.0 - mx).powi(2)).sum();
    let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    (sxx > 0.0).then(|| {
        let slope = sxy / sxx;
        Split { marginal_us: slope * 1e6, idle_cores: my - slope * mx }
    })
}

fn split_of(steps: &[StepRow], cost: impl Fn(&StepRow) -> &Cost) -> Option<Split> {
    let points: Vec<(f64, f64)> = steps
        .iter()
        .filter_map(|s| {
            let c = cost(s);
            Some((c.cores? / c.cpu_us_per_request? * 1e6, c.cores?))
        })
        .collect();
    split(&points)
}

/// A regime of the experiment, as `--budgets` names it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Quota {
    /// `all`, the reference: the databases in their cgroups with a quota of every core. They keep
    /// the CPU counter and the scheduling weight they have under a budget, and the quota is one they
    /// cannot reach, so a budget differs from the reference in the quota alone.
    All,
    /// A quota of this many cores each (`0.25`).
    Cores(f64),
    /// `none`: out of their cgroups, as `--db-cpus none` runs them: CPU read from `/proc`, and an
    /// eighth of the weight their cgroup has against the services and the load generator.
    Outside,
}

impl Quota {
    /// The key in `result.json` and the folders: `all`, `0.25`, `none`.
    pub fn text(self) -> String {
        match self {
            Quota::All => "all".into(),
            Quota::Cores(c) => format!("{c}"),
            Quota::Outside => "none".into(),
        }
    }

    /// For names and progress lines.
    pub fn words(self) -> String {
        match self {
            Quota::All => format!("a quota of all {} cores", crate::procstat::cores()),
            Quota::Cores(c) => format!("{c} CPU"),
            Quota::Outside => "no cgroup".into(),
        }
    }

    /// The budget `stack.sh` is given.
    fn cap(self) -> Cap<f64> {
        match self {
            Quota::All => Cap::At(crate::procstat::cores() as f64),
            Quota::Cores(c) => Cap::At(c),
            Quota::Outside => Cap::Unlimited,
        }
    }
}

/// `--budgets`: `all`, `none` or cores.
pub fn parse_quota(text: &str) -> Result<Quota, String> {
    match text.trim() {
        "all" => Ok(Quota::All),
        "none" => Ok(Quota::Outside),
        other => match crate::budget::parse_cpus(other)? {
            Cap::At(c) => Ok(Quota::Cores(c)),
            Cap::Unlimited => Ok(Quota::Outside),
        },
    }
}

fn median(values: impl IntoIterator<Item = f64>) -> Option<f64> {
    orders_bench_model::stats::median(&values.into_iter().collect::<Vec<_>>())
}

/// Each database's cost at every offered rate of `round`, the median over its repeats.
pub fn costs(round: &RoundResult) -> Vec<(u32, Cost, Cost)> {
    use orders_bench_model::step_cost;
    step_cost::rates(round)
        .into_iter()
        .map(|rate| (rate, step_cost::at(round, "pg", rate), step_cost::at(round, "mongo", rate)))
        .collect()
}

/// The rows of one regime, each step's ratio held against `reference` (the unbudgeted regime of
/// the same mix and pool) at the same rate.
pub fn regime(
    budget: String,
    pool: &'static str,
    mix: &'static str,
    round: &RoundResult,
    reference: Option<&Regime>,
) -> Regime {
    let steps: Vec<StepRow> = costs(round)
        .into_iter()
        .map(|(rate, pg, mongo)| {
            let ratio = mongo.cpu_us_per_request.zip(pg.cpu_us_per_request).map(|(m, p)| m / p);
            let unbudgeted = reference.and_then(|r| r.steps.iter().find(|s| s.rate == rate)).and_then(|s| s.ratio);
            StepRow { rate, pg, mongo, ratio, shift: ratio.zip(unbudgeted).map(|(r, u)| r / u) }
        })
        .collect();
    summarized(budget, pool, mix, steps, reference)
}

/// A regime from its steps (each already held against the reference's): the shifts over them, and
/// each database's split into marginal and idle cost.
fn summarized(
    budget: String,
    pool: &'static str,
    mix: &'static str,
    steps: Vec<StepRow>,
    reference: Option<&Regime>,
) -> Regime {
    let shift = median(steps.iter().filter_map(|s| s.shift));
    let top_shift = steps.iter().rev().find_map(|s| s.shift);
    let (pg_split, mongo_split) = (split_of(&steps, |s| &s.pg), split_of(&steps, |s| &s.mongo));
    let marginal_ratio = mongo_split.zip(pg_split).map(|(m, p)| m.marginal_us / p.marginal_us);
    let marginal_shift = marginal_ratio.zip(reference.and_then(|r| r.marginal_ratio)).map(|(r, u)| r / u);
    Regime {
        budget,
        pool,
        mix,
        steps,
        shift,
        top_shift,
        pg_split,
        mongo_split,
        marginal_ratio,
        marginal_shift,
        direct: None,
    }
}

/// The pool sizes `--pools` takes (the demo's is 16).
pub const POOL_CHOICES: [&str; 5] = ["4", "8", "16", "32", "64"];

/// The pool sizes variant: both services' pools at `size` connections (one of `POOL_CHOICES`).
fn pool_variant(size: &'static str) -> Variant {
    Variant {
        name: "pool",
        label: "both pools at the size given",
        pg_env: vec![("PG_POOL_SIZE", size)],
        mongo_env: vec![("MONGO_POOL_SIZE", size)],
        expect: Vec::new(),
        fair: true,
    }
}

/// Steps of a placed staircase, and how far past the slower target's closed-loop rate it climbs.
const STEPS: u32 = 10;
const REACH: f64 = 1.25;

/// The staircase of `mix`: the scale's fixed one (reads; inserts at `INSERT_SHARE` of it), or
/// `STEPS` equal steps up to `REACH` × the slower target's closed-loop rate under the smallest
/// budget, so every regime climbs the same rates and the smallest budget's knees lie on them
/// whatever the machine's speed.
async fn staircase(
    ctx: &mut Ctx,
    mix: &str,
    smallest: Quota,
    memory: Cap<u64>,
    variant: &Variant,
) -> Result<super::Staircase> {
    if let Some(reads) = ctx.scale.staircase {
        if mix != "insert" {
            return Ok(reads);
        }
        let scaled = |r: u32| ((f64::from(r) * INSERT_SHARE).round() as u32).max(1);
        return Ok(super::Staircase { start: scaled(reads.start), step: scaled(reads.step), max: scaled(reads.max) });
    }
    let stack = ctx.local.clone().context("the local stack")?;
    Applied::apply(stack, Budget { cpus: smallest.cap(), memory }).await.context("applying the budget")?;
    let urls = ctx.use_variant(variant).await?.context("the services")?;
    let work = if mix == "insert" { Work::Insert } else { Work::Read };
    let run = rounds::closed_loop(ctx, &urls, work, 1, ctx.scale.calibrate_seconds, false).await?;
    let slower = run.iter().map(ClosedRun::slower).fold(f64::INFINITY, f64::min);
    if !slower.is_finite() || slower < 1.0 {
        bail!("the closed loop that places the {mix} staircase answered nothing");
    }
    let step = ((slower * REACH / f64::from(STEPS)).round() as u32).max(1);
    eprintln!(
        "experiment: {mix}: the slower target held {slower:.0} req/s in a closed loop under {}: steps of {step} req/s",
        smallest.words()
    );
    Ok(super::Staircase { start: step, step, max: step * STEPS })
}

/// Whether a regime keeps the engines' ratio within `HOLDS_WITHIN` of the unbudgeted one, over the
/// steps and at the top one.
pub fn holds(regime: &Regime) -> Option<bool> {
    let within = |s: f64| (s - 1.0).abs() <= HOLDS_WITHIN;
    Some(within(regime.shift?) && within(regime.top_shift?))
}

/// Reads asked of each engine directly at `rate`, one engine at a time; a failure is a note.
async fn ask_directly(
    ctx: &Ctx,
    pg_bin: Option<&std::path::Path>,
    rate: u32,
    pool: u32,
    notes: &mut Vec<String>,
) -> Directly {
    let length = if ctx.scale.size == super::Size::Quick { Duration::from_secs(1) } else { DIRECT_LENGTH };
    let manifest = match orders_dataset::manifest::read(&ctx.manifest) {
        Ok(m) => m,
        Err(error) => {
            notes.push(format!("no direct reads: {error:#}"));
            return Directly { rate, pg: None, mongo: None };
        }
    };
    let mut said = |what: &str, outcome: Result<Direct>| {
        outcome.map_err(|error| notes.push(format!("no direct {what} reads: {error:#}"))).ok()
    };
    let pg = match pg_bin {
        Some(bin) => said(
            "PostgreSQL",
            baseline::postgres(bin, &ctx.databases.database_url, &manifest, rate, pool, length).await,
        ),
        None => said("PostgreSQL", Err(anyhow::anyhow!("stack.sh env printed no PG_BIN (pgbench)"))),
    };
    let mongo = said("MongoDB", baseline::mongo(&ctx.databases, &manifest, rate, pool, length).await);
    Directly { rate, pg, mongo }
}

pub async fn run(ctx: &mut Ctx, budgets: &[Quota], pools: &[String], memory: Cap<u64>) -> Result<Outcome> {
    let Some(stack) = ctx.local.clone() else {
        bail!("experiment budget changes the local stack's budgets: it cannot run against deployed services");
    };
    let budgets = if budgets.is_empty() { DEFAULT_BUDGETS.to_vec() } else { budgets.to_vec() };
    let pools: Vec<&'static str> = if pools.is_empty() {
        vec!["16"]
    } else {
        POOL_CHOICES.into_iter().filter(|p| pools.iter().any(|given| given == p)).collect()
    };
    // The reference first: every other regime is held against it.
    let mut order = vec![Quota::All];
    order.extend(budgets.iter().copied().filter(|b| *b != Quota::All));
    let data = Data { items: 3, note_bytes: 0 };
    let pg_bin = stack.env().await?.get("PG_BIN").map(std::path::PathBuf::from);
    let mut notes = Vec::new();
    let (mut regimes, mut refs) = (Vec::new(), Vec::new());
    let smallest = order.iter().fold(Quota::All, |least, q| match (least, *q) {
        (Quota::Cores(l), Quota::Cores(c)) if l <= c => least,
        (_, Quota::Cores(c)) => Quota::Cores(c),
        _ => least,
    });
    for pool in pools.iter().copied() {
        let variant = pool_variant(pool);
        rounds::reload(ctx, data).await?;
        let mut staircases = Vec::new();
        for mix in MIXES {
            staircases.push((mix, staircase(ctx, mix, smallest, memory, &variant).await?));
        }
        for budget in &order {
            let wanted = Budget { cpus: budget.cap(), memory };
            eprintln!("experiment: {} per database, pools of {pool}", budget.words());
            Applied::apply(stack.clone(), wanted).await.context("applying the budget")?;
            for (mix, staircase) in staircases.iter().copied() {
                let dir = rounds::folder(&["budget", &budget.text(), "pool", pool, mix]);
                let plan = RoundPlan {
                    variant: &variant,
                    name: format!("{mix}, {}, pool {pool}", budget.words()),
                    dir: dir.clone(),
                    mix,
                    data,
                    staircase,
                    minimal: false,
                    prefill: 0,
                };
                let Some(measured) = rounds::measure(ctx, &plan).await? else { continue };
                let reference =
                    regimes.iter().find(|r: &&Regime| r.budget == "all" && r.pool == pool && r.mix == mix).cloned();
                let mut measured = regime(budget.text(), pool, mix, &measured.round, reference.as_ref());
                if mix == "read" {
                    let rate = plan.staircase.max;
                    let size = pool.parse().unwrap_or(16);
                    measured.direct = Some(ask_directly(ctx, pg_bin.as_deref(), rate, size, &mut notes).await);
                }
                regimes.push(measured);
                refs.push(RoundRef { name: plan.name, variant: format!("pool {pool}"), dir });
            }
        }
    }
    ctx.notes.extend(notes);
    let budgets_said: Vec<String> = order.iter().map(|b| b.text()).collect();
    Ok(Outcome {
        title: "Does the databases' CPU budget favour one engine?".into(),
        summary: format!(
            "Both targets at once, `read` and `insert` on the same staircases in the regimes {} (`all`: a quota of \
             every core, the reference; `none`: out of the budgets' cgroups), pools of {}: each database's CPU per \
             request at every offered rate, MongoDB ÷ PostgreSQL of it, and that ratio ÷ the reference's. A regime \
             favours neither engine while the last stays within ±{:.0}%.",
            budgets_said.join(", "),
            pools.join(", "),
            HOLDS_WITHIN * 100.0
        ),
        statements: tables::statements(&regimes),
        setups: Vec::new(),
        comparisons: Vec::new(),
        details: tables::details(&regimes),
        charts: Vec::new(),
        variants: serde_json::to_value(&regimes).context("regimes as JSON")?,
        rounds: refs,
        extra: serde_json::Map::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cost(us: f64, rate: f64) -> Cost {
        Cost { cpu_us_per_request: Some(us), cores: Some(us * rate / 1e6), ..Cost::default() }
    }

    /// A regime whose databases cost `idle` cores plus `marginal` µs a request at rates 100..300.
    fn regime_of(budget: &str, pg: (f64, f64), mongo: (f64, f64), reference: Option<&Regime>) -> Regime {
        let per_request = |(idle, marginal): (f64, f64), rate: f64| (idle + marginal * rate / 1e6) / rate * 1e6;
        let steps: Vec<StepRow> = [100.0, 200.0, 300.0]
            .iter()
            .map(|&rate| {
                let (p, m) = (per_request(pg, rate), per_request(mongo, rate));
                let ratio = Some(m / p);
                let unbudgeted = reference.and_then(|r| r.steps.iter().find(|s| f64::from(s.rate) == rate)?.ratio);
                StepRow {
                    rate: rate as u32,
                    pg: cost(p, rate),
                    mongo: cost(m, rate),
                    ratio,
                    shift: ratio.zip(unbudgeted).map(|(r, u)| r / u),
                }
            })
            .collect();
        summarized(budget.into(), "16", "read", steps, reference)
    }

    #[test]
    fn a_line_through_the_steps_splits_marginal_from_idle_cost() {
        let line = split(&[(100.0, 0.03), (200.0, 0.05), (300.0, 0.07)]).expect("three points");
        assert!((line.marginal_us - 200.0).abs() < 1e-6 && (line.idle_cores - 0.01).abs() < 1e-9, "{line:?}");
        assert!(split(&[(100.0, 0.03)]).is_none(), "one rate says nothing about the slope");
        assert!(split(&[(100.0, 0.03), (100.0, 0.04)]).is_none(), "nor two steps at one rate");
    }

    #[test]
    fn a_budget_that_makes_one_engine_pay_is_named() {
        let free = regime_of("all", (0.005, 150.0), (0.02, 300.0), None);
        assert_eq!(free.shift, None);
        let same = regime_of("0.5", (0.005, 150.0), (0.02, 300.0), Some(&free));
        assert_eq!(holds(&same), Some(true));
        assert!((same.marginal_shift.expect("shift") - 1.0).abs() < 1e-9);
        let mongo_pays = regime_of("0.25", (0.005, 150.0), (0.02, 390.0), Some(&free));
        assert_eq!(holds(&mongo_pays), Some(false));
        assert!((mongo_pays.marginal_shift.expect("shift") - 1.3).abs() < 1e-9);
        let said = tables::statements(&[free, same, mongo_pays]);
        assert_eq!(said.len(), 2, "the reference itself gets no sentence");
        assert!(said[0].contains("favours neither engine") && said[1].contains("MongoDB pays"), "{said:?}");
    }
}
