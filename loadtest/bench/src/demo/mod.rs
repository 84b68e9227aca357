//! `orders-bench demo`: the whole comparison on this machine in one command. It starts the local
//! stack if it is not running, builds and starts the services on free ports over a database of
//! their own, checks the budget's regime (`regime`), runs the named rounds or a person's own mixes
//! (`workload`), each repeat from the same data, writes the combined report, and stops everything
//! it started, also on an error or Ctrl-C (the start-up and clean-up are `crate::scaffold`'s,
//! shared with `experiment`). `--targets pg,mongo,pgh` adds the hybrid layout (`targets`).
//!
//! The databases run under equal budgets (`crate::budget::local`, shared with `experiment`), put
//! back afterwards; where none can be set, the report says "no budgets". Every process it starts
//! carries `ORDERS_BENCH_DEMO=<report folder>` in its environment, so a test (or a person) can
//! check that none is left.

mod profile;
mod progress;
mod regime;
pub mod targets;
pub mod workload;

use crate::budget::BudgetArgs;
use crate::round::{self, RoundSpec, Setup};
use crate::scaffold::services::{self, Service};
use crate::scaffold::{self, LocalStack, Started};
use crate::seed::{SeedArgs, Selection};
use anyhow::{Context, Result, bail};
use clap::Args;
use orders_bench_model::result::{RatePlan, RoundResult};
use profile::{Profile, Staircase};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The environment variable that marks every process the demo starts.
pub const MARKER: &str = "ORDERS_BENCH_DEMO";

#[derive(Debug, Clone, Args)]
pub struct DemoArgs {
    /// Smoke-test size: 2,000 orders, one repeat, one wide staircase of 2 s steps; about three
    /// minutes.
    #[arg(long)]
    pub quick: bool,
    /// Folder for the report and every raw file [default: results/<timestamp>-demo].
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// The rounds (named mixes, your own weights) and the documents' shape.
    #[command(flatten)]
    pub workload: workload::WorkloadArgs,
    /// Targets to compare: pg (PostgreSQL jsonb) and mongo (MongoDB) always; add pgh for the
    /// hybrid layout (orders-pg-hybrid, on the local stack's second PostgreSQL server, under the
    /// same budget). Not by default: the question is jsonb or MongoDB, and on two cores a third
    /// database and service take CPU the other two would have.
    #[arg(long, value_delimiter = ',', default_value = "pg,mongo", value_parser = targets::parse_name)]
    pub targets: Vec<String>,
    /// Orders in the data set [default: 100,000; 2,000 with --quick].
    #[arg(long)]
    pub orders: Option<u64>,
    /// Repeats of every round [default: 3; 1 with --quick].
    #[arg(long)]
    pub repeats: Option<u32>,
    /// Seconds each rate is held [default: 3.5; 2 with --quick] (see demo/profile.rs).
    #[arg(long = "step-duration", value_parser = orders_loadgen::duration::parse)]
    pub step_duration: Option<Duration>,
    /// Name of the database the demo creates and loads in every server, and the services use.
    #[arg(long = "db-name", default_value = "orders_demo")]
    pub db_name: String,
    #[command(flatten)]
    pub binaries: services::Binaries,
    /// Equal budgets for the databases [default: an eighth of the cores and a quarter of the
    /// memory each, at least 0.1 CPU and 1 GiB, at most 4 GiB; `none` runs without].
    #[command(flatten)]
    pub budget: BudgetArgs,
    /// Do not fill both services' connection pools before each repeat (for measuring what the
    /// warm-up changes; see docs/fairness.md).
    #[arg(long = "no-warm-up")]
    pub no_warm_up: bool,
    /// Start each repeat's staircase right after the checkpoint, without the lead-in at 0.6 of its
    /// first rate (for measuring what the lead-in changes; see docs/fairness.md).
    #[arg(long = "no-lead-in")]
    pub no_lead_in: bool,
    /// Run the load generator at ordinary priority instead of SCHED_FIFO (for measuring what the
    /// real-time policy changes).
    #[arg(long = "no-realtime")]
    pub no_realtime: bool,
}

impl DemoArgs {
    /// `profile::full()` or `quick()` with the flags that override it.
    fn profile(&self) -> Profile {
        let base = if self.quick { profile::quick() } else { profile::full() };
        let profile = Profile {
            orders: self.orders.unwrap_or(base.orders),
            repeats: self.repeats.unwrap_or(base.repeats),
            ..base
        };
        match self.step_duration {
            Some(step) => profile.with_step_seconds(step),
            None => profile,
        }
    }
}

/// The staircase of `spec`'s mix: the profile's own, or one placed by a probe run into
/// `dir/probe` (see `profile`).
async fn staircase(profile: &Profile, spec: &RoundSpec, setup: &Setup, dir: &Path) -> Result<RatePlan> {
    let (probe, step_seconds) = match profile.staircase {
        Staircase::Fixed(plan) => return Ok(plan),
        Staircase::Probed { probe, step_seconds } => (probe, step_seconds),
    };
    // The probe restores the snapshots too: on what the previous round left (more orders on one
    // side than the other after `insert`) the fairness gate refuses to run.
    let spec = RoundSpec {
        name: format!("{} probe", spec.name),
        plan: probe,
        repeats: 1,
        poll_interval: probe.step_seconds,
        extra_repeats: 0,
        // The probe's first rates are far below every knee, and its knee is only where the
        // staircase goes: no lead-in (about 4 s a mix).
        lead_in: None,
        ..spec.clone()
    };
    let probed = round::run_round(&spec, setup, &dir.join("probe")).await?;
    let knees: Vec<f64> = setup.targets.names().iter().filter_map(|name| profile::knee(&probed, name)).collect();
    if knees.is_empty() {
        bail!("the probe of {} found no target's limit; see {}", spec.mix, dir.join("probe").display());
    }
    let plan = profile::around(&knees, step_seconds);
    eprintln!(
        "demo: {} probe: knees near {} req/s; staircase {} req/s",
        spec.mix,
        knees.iter().map(|k| format!("{k:.0}")).collect::<Vec<_>>().join(" and "),
        plan.rates().iter().map(u32::to_string).collect::<Vec<_>>().join("/")
    );
    Ok(plan)
}

pub async fn run(args: DemoArgs) -> Result<()> {
    let began = Instant::now();
    // Before anything starts: a bad mix or shape stops the demo here.
    let plan = args.workload.rounds()?;
    args.workload.check_shape(args.profile().orders)?;
    let repo = crate::repo::root()?;
    let out = crate::repo::absolute(
        &args.out.clone().unwrap_or_else(|| repo.join("results").join(format!("{}-demo", crate::repo::folder_stamp()))),
    );
    std::fs::create_dir_all(out.join("logs")).with_context(|| format!("creating {}", out.display()))?;
    let marker = (MARKER.to_owned(), out.display().to_string());
    let table =
        scaffold::run("demo", Vec::new(), async |started| body(&args, &plan, &repo, &out, &marker, started).await)
            .await?;
    println!("\n{table}");
    println!(
        "demo finished in {:.0} s; report: {} (and report.html, result.json, charts/)",
        began.elapsed().as_secs_f64(),
        out.join("report.md").display()
    );
    Ok(())
}

/// Everything between starting and stopping; returns the summary table.
async fn body(
    args: &DemoArgs,
    plan: &[workload::Round],
    repo: &Path,
    out: &Path,
    marker: &(String, String),
    started: &mut Started<Vec<Service>>,
) -> Result<String> {
    scaffold::check_db_name(&args.db_name)?;
    targets::check(&args.targets)?;
    let profile = args.profile();
    let deadline = Instant::now() + profile.time_budget;
    let LocalStack { stack, env, budget_note, mut databases } =
        started.local_stack(repo, marker, &args.budget, &args.db_name).await?;
    // The demo drives with the native generator; k6 is only looked up for the record.
    let k6 = crate::k6::binary(env.get("K6").map(Path::new).filter(|p| p.is_file()), Some(repo)).unwrap_or_default();
    databases.others = targets::other_databases(&args.targets, &env, &args.db_name)?;
    let backends = scaffold::create_databases(&databases).await?;

    let bin_dir = args.binaries.folder(repo).await?;
    let threads = started.session.service_threads();
    let mut urls = Vec::new();
    for backend in &backends {
        let info = backend.info();
        let env = services::local_env(backend.as_ref(), &threads, marker);
        let service = services::start_in(&bin_dir, &out.join("logs"), &info.service, &env)?;
        urls.push((info.name, service.url.clone()));
        started.services.push(service);
    }
    let targets = orders_bench_engines::Targets::new(&databases, &urls)?;
    let client = crate::diagnostics::Client::new(&targets)?;
    services::wait_ready(&client, &mut started.services).await?;
    let up: Vec<String> = started.services.iter().map(|s| format!("{} {}", s.name, s.url)).collect();
    eprintln!("demo: services up: {}; logs in {}", up.join(", "), out.join("logs").display());

    let manifest = out.join("dataset.json");
    let setup = Setup {
        targets,
        databases: databases.clone(),
        k6,
        script: repo.join(crate::repo::SCRIPT),
        manifest: manifest.clone(),
        extra_env: vec![marker.clone()],
        fleet: None,
        budget_note,
    };
    let seed = SeedArgs {
        seed: 1,
        orders: profile.orders,
        customers: None,
        products: None,
        items: args.workload.items,
        note_bytes: args.workload.note_bytes,
        target: Selection::all(),
        reset: true,
        databases,
        manifest,
    };
    let (reset, snapshots) = if profile.orders >= crate::fresh::RESTORE_FROM_ORDERS {
        eprintln!(
            "demo: loading {} orders into every database, then snapshots for every repeat to restore",
            seed.orders
        );
        // Neither the load nor the snapshots are measured: both run without the CPU budgets.
        let load_and_snapshot = async {
            crate::seed::run(seed.clone()).await.context("loading the data set")?;
            crate::fresh::Snapshots::take(&stack, &seed.databases, "demo").await
        };
        let (snapshots, _) = crate::fresh::unbudgeted::without_cpu_budget(&stack, load_and_snapshot).await?;
        (crate::fresh::Reset::Restore(snapshots.clone()), Some(snapshots))
    } else {
        // Small enough to reload faster than a restore.
        (crate::fresh::Reset::reload(seed.clone(), Some(stack.unmarked())), None)
    };
    let regime = match started.session.cpus().value() {
        Some(cores) => {
            let base = base_spec(args, &profile, "regime", "read", &reset);
            regime::check(&stack, cores, &base, &setup, &out.join("regime"), args.quick)
                .await
                .map_err(|error| eprintln!("demo: the regime check failed, the report goes without it: {error:#}"))
                .ok()
        }
        None => None,
    };
    let base = |round: &workload::Round| base_spec(args, &profile, &round.name, &round.mix, &reset);
    let rounds = rounds(plan, &base, &profile, &setup, out, deadline, regime).await;
    if let Some(snapshots) = snapshots {
        snapshots.drop_copies().await;
    }
    let rounds = rounds?;
    orders_bench_report::write(out, &rounds)?;
    Ok(orders_bench_report::max_rate_table(&rounds.iter().map(|(_, r)| r.clone()).collect::<Vec<_>>()))
}

/// When the extra repeats of a round must be done: its share of the time left before `deadline`,
/// with `rounds_left` rounds (this one included) still to run, so that one unstable mix cannot
/// spend the rounds after it out of the budget.
fn share_of_time_left(now: Instant, deadline: Instant, rounds_left: usize) -> Instant {
    now + deadline.saturating_duration_since(now) / rounds_left.max(1) as u32
}

/// The demo's round of `mix`, before its staircase is known (`staircase` places it).
fn base_spec(args: &DemoArgs, profile: &Profile, name: &str, mix: &str, reset: &crate::fresh::Reset) -> RoundSpec {
    // The plan and the poll (about once per step) are set once the staircase is known.
    let plan = RatePlan { start_rate: 1, step: 1, max_rate: 1, step_seconds: Duration::from_secs(1), factor: None };
    RoundSpec {
        repeats: profile.repeats,
        settle: Duration::from_secs(if args.quick { 20 } else { 60 }),
        reset: reset.clone(),
        extra_repeats: profile.extra_repeats,
        warm_pools: !args.no_warm_up,
        lead_in: (!args.no_lead_in).then_some(profile.lead_in),
        realtime: !args.no_realtime,
        ..RoundSpec::new(name, mix, plan)
    }
}

/// Every round of `plan`, each specified by `base` before its staircase is placed.
async fn rounds(
    plan: &[workload::Round],
    base: &dyn Fn(&workload::Round) -> RoundSpec,
    profile: &Profile,
    setup: &Setup,
    out: &Path,
    deadline: Instant,
    regime: Option<orders_bench_model::regime::RegimeCheck>,
) -> Result<Vec<(PathBuf, orders_bench_model::result::RoundResult)>> {
    let mut rounds = Vec::new();
    let began = Instant::now();
    for (index, round) in plan.iter().enumerate() {
        let whole_run = progress::line(index, plan.len(), &round.name, began, Instant::now(), deadline);
        eprintln!("{whole_run}");
        let round_deadline = share_of_time_left(Instant::now(), deadline, plan.len() - index);
        let mut spec = RoundSpec {
            deadline: Some(round_deadline),
            progress: Some(format!("{whole_run} at the round's start")),
            ..base(round)
        };
        let dir = out.join(workload::folder(&round.name));
        spec.plan = staircase(profile, &spec, setup, &dir).await?;
        spec.poll_interval = spec.plan.step_seconds;
        let result = RoundResult { regime: regime.clone(), ..round::run_round(&spec, setup, &dir).await? };
        orders_bench_report::write(&dir, &[(dir.clone(), result.clone())])?;
        rounds.push((dir, result));
    }
    Ok(rounds)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_round_may_spend_its_share_of_the_time_left_and_no_more() {
        let now = Instant::now();
        let deadline = now + Duration::from_secs(800);
        assert_eq!(share_of_time_left(now, deadline, 4), now + Duration::from_secs(200), "first of four rounds");
        assert_eq!(share_of_time_left(now, deadline, 1), deadline, "the last round gets all that is left");
        assert_eq!(
            share_of_time_left(deadline + Duration::from_secs(5), deadline, 2),
            deadline + Duration::from_secs(5)
        );
    }

    #[test]
    fn quick_is_small_and_the_full_demo_repeats() {
        let args = |quick| DemoArgs {
            quick,
            out: None,
            workload: Default::default(),
            targets: vec![],
            orders: None,
            repeats: None,
            step_duration: None,
            db_name: "orders_demo".into(),
            binaries: Default::default(),
            budget: BudgetArgs::default(),
            no_warm_up: false,
            no_lead_in: false,
            no_realtime: false,
        };
        let quick = args(true).profile();
        assert_eq!((quick.orders, quick.repeats), (2_000, 1));
        assert!(matches!(quick.staircase, Staircase::Fixed(plan) if plan.step_seconds == Duration::from_secs(2)));
        let full = DemoArgs { repeats: Some(5), step_duration: Some(Duration::from_secs(6)), ..args(false) }.profile();
        assert_eq!((full.orders, full.repeats), (100_000, 5));
        assert!(
            matches!(full.staircase, Staircase::Probed { step_seconds, .. } if step_seconds == Duration::from_secs(6))
        );
    }
}
