//! One measured round of an experiment: for every repeat, the variant put in effect, then one
//! `round::run_round` that resets the data (restored from the snapshots of the data set's first
//! load on the local stack, reloaded elsewhere), waits for quiet databases, and runs the fairness
//! gate, diagnostics, the staircase driven by the native generator and the verdicts. The repeats
//! are merged into one `RoundResult` (median and range of the maximum rates), whose standard
//! report (`report.md`, charts) goes into the round's folder beside `run-<n>/`.

use super::Ctx;
use super::closed_loop::{self, Plan as ClosedPlan, Run as ClosedRun, Work};
use super::figures::{RepeatExtras, RoundFigures};
use super::services::Urls;
use super::variant::Variant;
use crate::experiment::engine::Target;
use crate::round::{RoundSpec, Setup};
use crate::seed::{self, SeedArgs, Selection};
use anyhow::{Context, Result, bail};
use orders_bench_model::result::{RatePlan, RoundResult};
use orders_bench_model::verdict;
use orders_dataset::manifest::{self, Manifest};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

/// The data set of a round.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Data {
    pub items: u32,
    pub note_bytes: u32,
}

pub struct RoundPlan<'a> {
    pub variant: &'a Variant,
    /// Name in the reports, e.g. `shop (fastupdate=off)`.
    pub name: String,
    /// Folder below the experiment's.
    pub dir: String,
    pub mix: &'static str,
    pub data: Data,
    pub staircase: super::Staircase,
    /// Send `Prefer: return=minimal` on the writes (when both services honour it).
    pub minimal: bool,
    /// Orders inserted through both services before the load (`RoundSpec::prefill`).
    pub prefill: u32,
}

pub struct Measured {
    pub round: RoundResult,
    pub figures: RoundFigures,
}

fn seed_args(ctx: &Ctx, data: Data) -> SeedArgs {
    SeedArgs {
        seed: 1,
        orders: ctx.scale.orders,
        customers: None,
        products: None,
        items: data.items,
        note_bytes: data.note_bytes,
        target: Selection::all(),
        reset: true,
        databases: ctx.databases.clone(),
        manifest: ctx.manifest.clone(),
    }
}

/// Puts `data` in every database as every repeat finds it (`Ctx::reset_for`: restored from the
/// snapshots of its first load on the local stack, reloaded elsewhere), warmed and quiet; returns
/// the manifest. For the closed loops, which are not rounds.
pub async fn reload(ctx: &mut Ctx, data: Data) -> Result<Manifest> {
    let reset = ctx.reset_for(data).await?;
    let targets = orders_bench_engines::Targets::new(&ctx.databases, &[])?;
    crate::fresh::prepare(&reset, &targets, crate::fresh::QUIET_WAIT, "experiment:").await?;
    manifest::read(&ctx.manifest)
}

/// Loads `data` with the seeder (`--reset`).
pub async fn load(ctx: &Ctx, data: Data) -> Result<()> {
    seed::run(seed_args(ctx, data)).await.context("loading the data set")
}

/// How a repeat of `data` is reset when the runner cannot restore snapshots.
pub fn reload_args(ctx: &Ctx, data: Data) -> SeedArgs {
    seed_args(ctx, data)
}

fn disk_per_order(manifest: &Manifest, target: Target) -> Option<f64> {
    manifest.targets.get(target.name()).map(|t| t.bytes_on_disk as f64 / manifest.orders.max(1) as f64)
}

/// `runs` closed-loop runs of `work` on freshly reloaded data.
pub async fn closed_loop(
    ctx: &Ctx,
    urls: &Urls,
    work: Work,
    runs: u32,
    seconds: Duration,
    minimal: bool,
) -> Result<Vec<ClosedRun>> {
    let plan = ClosedPlan { work, clients: ctx.scale.clients, seconds, prefer_minimal: minimal };
    let mut all = Vec::new();
    for index in 1..=runs {
        let summary = ctx.out.join("closed-loop").join(format!("{}-{index}-summary.json", work.mix()));
        let run = closed_loop::run(&plan, urls, &ctx.manifest, &summary).await?;
        let rates: Vec<String> = run.targets.iter().map(|(t, r)| format!("{t} {:.0}/s", r.per_second)).collect();
        eprintln!(
            "experiment: closed loop {} {index}/{runs}: {} clients × {} s: {}",
            work.mix(),
            plan.clients,
            seconds.as_secs_f64(),
            rates.join(", ")
        );
        all.push(run);
    }
    Ok(all)
}

/// Runs every repeat of `plan` (reloading first) into `<out>/<plan.dir>`; `None` when deployed
/// services cannot run the variant.
pub async fn measure(ctx: &mut Ctx, plan: &RoundPlan<'_>) -> Result<Option<Measured>> {
    let dir = ctx.out.join(&plan.dir);
    let mut runs: Vec<RoundResult> = Vec::new();
    let mut extras = Vec::new();
    for index in 1..=ctx.scale.repeats {
        let Some(urls) = ctx.use_variant(plan.variant).await? else { return Ok(None) };
        let reset = ctx.reset_for(plan.data).await?;
        let rates = RatePlan {
            start_rate: plan.staircase.start,
            step: plan.staircase.step,
            max_rate: plan.staircase.max.max(plan.staircase.start),
            step_seconds: ctx.scale.step_seconds,
            factor: None,
        };
        let spec = RoundSpec {
            allow_mismatch: !plan.variant.fair,
            poll_interval: Duration::from_secs(if ctx.scale.step_seconds <= Duration::from_secs(5) { 1 } else { 2 }),
            reset,
            lead_in: Some(ctx.scale.lead_in()),
            prefill: plan.prefill,
            prefer_minimal: plan.minimal,
            ..RoundSpec::new(plan.name.clone(), plan.mix, rates)
        };
        let setup = Setup {
            targets: orders_bench_engines::Targets::new(&ctx.databases, &urls.services())?,
            databases: ctx.databases.clone(),
            // Experiments drive with the native generator, which needs no k6 (as `round` without
            // `--generator k6`).
            k6: std::path::PathBuf::new(),
            script: ctx.script.clone(),
            manifest: ctx.manifest.clone(),
            extra_env: vec![ctx.marker.clone()],
            fleet: None,
            budget_note: ctx.budget_note.clone(),
        };
        let round = crate::round::run_round(&spec, &setup, &dir.join(format!("run-{index}"))).await?;
        let manifest = manifest::read(&ctx.manifest)?;
        extras.push(RepeatExtras {
            pg_disk_per_order: disk_per_order(&manifest, Target::Pg),
            mongo_disk_per_order: disk_per_order(&manifest, Target::Mongo),
            pgh_disk_per_order: disk_per_order(&manifest, Target::Pgh),
        });
        runs.push(round);
    }
    let round = merge(runs)?;
    orders_bench_report::write(&dir, &[(dir.clone(), round.clone())])?;
    let figures = RoundFigures::of(&round, &plan.dir, &extras, plan.minimal);
    Ok(Some(Measured { round, figures }))
}

/// The repeats of separate `run_round` calls (each in `run-<n>/`) as one round of this folder.
fn merge(runs: Vec<RoundResult>) -> Result<RoundResult> {
    let Some(mut merged) = runs.first().cloned() else { bail!("no repeat ran") };
    merged.repeats.clear();
    for (n, run) in runs.iter().enumerate() {
        for repeat in &run.repeats {
            let mut repeat = repeat.clone();
            repeat.index = n as u32 + 1;
            repeat.reseeded = true;
            repeat.files = repeat.files.iter().map(|(k, f)| (k.clone(), format!("run-{}/{f}", n + 1))).collect();
            merged.repeats.push(repeat);
        }
        merged.finished_at.clone_from(&run.finished_at);
    }
    merged.fairness_overridden = merged.repeats.iter().any(|r| !r.fairness.ok);
    let mut max_rate = BTreeMap::new();
    for target in Target::ALL {
        let counted = merged.repeats.iter().filter(|r| r.counted());
        let rates: Vec<_> = counted.filter_map(|r| r.targets.get(target.name())).map(|t| t.max_rate).collect();
        if let Some(summary) = verdict::summarize(&rates) {
            max_rate.insert(target.name().to_owned(), summary);
        }
    }
    merged.max_rate = max_rate;
    merged.dir = ".".into();
    Ok(merged)
}

/// The staircase for `work`: the fixed one, or placed around a short closed loop (on data that is
/// reloaded again before the round).
pub async fn placed_staircase(ctx: &Ctx, urls: &Urls, work: Work, minimal: bool) -> Result<super::Staircase> {
    if let Some(fixed) = ctx.scale.staircase {
        return Ok(fixed);
    }
    let run = closed_loop(ctx, urls, work, 1, ctx.scale.calibrate_seconds, minimal).await?;
    Ok(ctx.scale.staircase(run.iter().map(ClosedRun::slower).fold(0.0, f64::max)))
}

/// The folder name of a round: letters, digits and `-`.
pub fn folder(parts: &[&str]) -> String {
    parts
        .iter()
        .map(|p| {
            p.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '-' }).collect::<String>()
        })
        .collect::<Vec<_>>()
        .join("-")
}

/// Relative paths of a repeat's raw files resolve against the round's folder.
pub fn repeat_file(dir: &Path, round: &RoundResult, index: usize, key: &str) -> Option<std::path::PathBuf> {
    round.repeats.get(index)?.files.get(key).map(|f| dir.join(f))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folder_names_are_plain() {
        assert_eq!(folder(&["gin", "fastupdate-off", "shop"]), "gin-fastupdate-off-shop");
        assert_eq!(folder(&["size", "100 KB"]), "size-100-kb");
    }
}
