//! Every repeat starts from the same state, and its record proves it. Before a repeat's load every
//! database is reset to the data set (`Reset::Restore`: from the snapshots taken once after the
//! first load, see `snapshot`; `Reset::Reload`: the seeder, where the runner cannot restore, e.g.
//! databases on other machines), every page of the orders and their indexes is read once (the
//! caches start warm, not in whatever state the reset left them), a fingerprint of the data is
//! taken, and the runner waits until both are quiet (`quiet`). What it found is the repeat's
//! `start` in `result.json`: a repeat that began before the databases were quiet, or on other
//! data, is visible there and in the report.

mod quiet;
pub mod snapshot;
pub mod unbudgeted;

use crate::seed::{self, SeedArgs};
use anyhow::{Context, Result};
use orders_bench_engines::Targets;
use orders_bench_engines::stack::Stack;
use orders_bench_model::start::{DatabaseStart, StartState};
pub use snapshot::Snapshots;
use std::time::{Duration, Instant};

/// Data sets smaller than this reload faster than a restore, whose fixed cost is mongod's stop
/// and start (about 3.5 s under a quarter core; 2,000 orders reload in about 1 s): the demo and
/// the experiments restore snapshots only from this size on.
pub const RESTORE_FROM_ORDERS: u64 = 20_000;

/// A reload of a data set smaller than this, in bytes of JSON, runs under the CPU budgets: lifting
/// and putting them back (`stack.sh env` and two `stack.sh budget` calls) costs about 2 s a
/// repeat. Under a quarter core the quick demo's 2,000 orders of 630 B (1.3 MB) reloaded in
/// 0.4–0.6 s and the quick doc-size's 200 of 10 KB (2 MB) in 0.9–1.1 s, but 200 of 100 KB (20 MB)
/// in 9.3–9.9 s (3.2–3.3 s lifted).
pub const LIFT_RELOAD_FROM_BYTES: u64 = 10 << 20;

/// How long the runner waits for quiet databases before a repeat by default.
pub const QUIET_WAIT: Duration = Duration::from_secs(30);

/// How a repeat's data are reset.
#[derive(Debug, Clone)]
pub enum Reset {
    /// The data stay as the previous repeat left them.
    Keep,
    /// The seeder loads the data set again (`round --reseed`; the demo and the experiments for
    /// small data sets), with the local stack's CPU budgets lifted meanwhile when a stack is given
    /// (`Reset::reload` gives it only for a data set worth it).
    Reload(SeedArgs, Option<Stack>),
    /// Both databases are restored from snapshots (the demo and the experiments on the local
    /// stack).
    Restore(Snapshots),
}

impl Reset {
    /// A reload of `seed`, on the local `stack` if there is one: its budgets lifted for the
    /// reload only from `LIFT_RELOAD_FROM_BYTES` on (decided here, once, not before every repeat).
    pub fn reload(seed: SeedArgs, stack: Option<Stack>) -> Self {
        let bytes = seed.profile().approx_doc_bytes().map_or(0, |bytes| bytes * seed.orders);
        Reset::Reload(seed, stack.filter(|_| bytes >= LIFT_RELOAD_FROM_BYTES))
    }

    fn word(&self) -> &'static str {
        match self {
            Reset::Keep => "kept",
            Reset::Reload(..) => "reloaded",
            Reset::Restore(_) => "restored",
        }
    }

    pub fn resets(&self) -> bool {
        !matches!(self, Reset::Keep)
    }
}

/// Resets the data, warms every cache and fingerprints the data; returns what the repeat starts
/// from (`wait_quiet` completes it). On the local stack this runs with the servers' CPU budgets
/// lifted (`unbudgeted`), put back before it returns.
pub async fn reset(reset: &Reset, targets: &Targets, label: &str) -> Result<StartState> {
    let mut start = StartState { reset: reset.word().into(), ..StartState::default() };
    let stack = match reset {
        Reset::Keep => None,
        Reset::Reload(_, stack) => stack.as_ref(),
        Reset::Restore(snapshots) => Some(snapshots.stack()),
    };
    if let Some(stack) = stack {
        let work = reset_and_warm(reset, targets, label, &mut start);
        let ((), lifted) = unbudgeted::without_cpu_budget(stack, work).await?;
        start.cpu_budget_lifted = lifted;
    } else {
        reset_and_warm(reset, targets, label, &mut start).await?;
    }
    Ok(start)
}

async fn reset_and_warm(reset: &Reset, targets: &Targets, label: &str, start: &mut StartState) -> Result<()> {
    if reset.resets() {
        let began = Instant::now();
        match reset {
            Reset::Keep => {}
            Reset::Reload(args, _) => {
                eprintln!("{label} reloading {} orders into every database", args.orders);
                seed::run(args.clone()).await.context("reloading the data set")?;
            }
            Reset::Restore(snapshots) => {
                eprintln!("{label} restoring every database from its snapshot");
                snapshots.restore().await.context("restoring the snapshots")?;
            }
        }
        start.reset_seconds = Some(began.elapsed().as_secs_f64());
    }
    let began = Instant::now();
    // Every database at once: the demo's warm-up took 7 s a repeat one after the other, under a
    // quarter core each.
    let warmed = futures_util::future::join_all(targets.iter().map(|target| async move {
        let mut entry = DatabaseStart::default();
        if let Err(error) = target.backend.warm_and_fingerprint(&mut entry).await {
            entry.notes.push(format!("warm-up or fingerprint failed: {error:#}"));
        }
        (target.name(), entry)
    }))
    .await;
    start.databases.extend(warmed);
    start.warm_seconds = Some(began.elapsed().as_secs_f64());
    Ok(())
}

/// Checkpoints both databases and waits (at most `limit`) until they are quiet, recording it in
/// `start`.
pub async fn wait_quiet(targets: &Targets, limit: Duration, start: &mut StartState, label: &str) {
    quiet::wait(targets, limit, start).await;
    if !start.quiet {
        eprintln!(
            "{label} note: the databases were not quiet after {:.0} s: {}",
            start.waited_seconds,
            start.not_quiet.join("; ")
        );
    }
}

/// `reset`, then `wait_quiet`: a start without load in between.
pub async fn prepare(how: &Reset, targets: &Targets, limit: Duration, label: &str) -> Result<StartState> {
    let mut start = reset(how, targets, label).await?;
    wait_quiet(targets, limit, &mut start, label).await;
    Ok(start)
}
