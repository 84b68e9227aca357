//! A repeat's first phase, everything before the load: the data reset and the databases quiet
//! (`fresh`), the plan log turned on, the pools filled, a GIN pending list prefilled when asked,
//! the lead-in, the fairness gate and the `/diagnostics` snapshot the run's figures start from.

use super::write_json;
use crate::diagnostics::{self, Snapshot};
use crate::fresh;
use crate::round::{RoundSpec, Setup, fairness};
use anyhow::{Result, bail};
use orders_bench_engines::{PlanLog, WalStats};
use orders_bench_model::fairness::Fairness;
use orders_bench_model::start::StartState;
use orders_dataset::manifest;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

/// Where the load starts from.
pub struct Prepared {
    pub client: diagnostics::Client,
    pub start_state: StartState,
    /// The plan log, marked where it stood before the load, and the target whose log it is.
    pub plan_log: Option<(String, Box<dyn PlanLog>)>,
    pub before: Snapshot,
    pub fairness: Fairness,
    pub wal_before: BTreeMap<String, WalStats>,
    /// What makes the repeat's figures less complete than usual, so far.
    pub notes: Vec<String>,
}

pub async fn prepare(spec: &RoundSpec, setup: &Setup, dir: &Path, label: &str) -> Result<Prepared> {
    let mut notes = Vec::new();
    let mut start_state = fresh::reset(&spec.reset, &setup.targets, label).await?;
    let mut plan_log = match spec.plan_log_ms {
        Some(threshold) => enable_plan_log(setup, threshold, &mut notes).await,
        None => None,
    };
    let client = diagnostics::Client::new(&setup.targets)?;
    client.wait_ready(spec.settle).await?;
    if spec.warm_pools {
        crate::round::launch::fill_pools(setup, dir, pool_clients(&client, setup).await).await?;
    }
    fresh::wait_quiet(&setup.targets, spec.quiet_wait, &mut start_state, label).await;
    if spec.prefill > 0 {
        crate::round::launch::prefill(spec, setup, dir, spec.prefill).await?;
    }
    let mut inserted: BTreeMap<String, u64> =
        setup.targets.iter().map(|t| (t.name(), u64::from(spec.prefill))).collect();
    if let Some(length) = spec.lead_in {
        let (lead_in, orders) = crate::round::lead_in::run(spec, setup, dir, length).await?;
        for (name, n) in orders {
            *inserted.entry(name).or_default() += n;
        }
        if let Some(failed) = crate::round::lead_in::failures_said(&lead_in) {
            notes.push(format!("the lead-in had failures, recorded and not judged: {failed}"));
        }
        start_state.lead_in = Some(lead_in);
    }
    let (before, fairness) = gate(&client, setup, &inserted, spec.settle).await?;
    let wal_before = super::evidence::wal_by_target(&setup.targets).await;
    write_json(&dir.join("diagnostics-before.json"), &before)?;
    if !fairness.ok {
        let list = fairness.mismatches().join("\n  ");
        if !spec.allow_mismatch {
            bail!(
                "fairness gate: the comparison would be unfair, refusing to run (--allow-mismatch overrides):\n  {list}"
            );
        }
        eprintln!("{label} WARNING: fairness gate failed, running anyway (--allow-mismatch):\n  {list}");
    }
    if let Some((_, log)) = &mut plan_log
        && let Err(error) = log.mark().await
    {
        notes.push(format!("no plan log: {error:#}"));
        plan_log = None;
    }
    Ok(Prepared { client, start_state, plan_log, before, fairness, wal_before, notes })
}

/// The plan log of the first target whose engine keeps one (`Backend::plan_log`), turned on at
/// `threshold` ms; `None`, with a note when turning it on failed, where none is kept.
async fn enable_plan_log(setup: &Setup, threshold: f64, notes: &mut Vec<String>) -> Option<(String, Box<dyn PlanLog>)> {
    for target in setup.targets.iter() {
        match target.backend.plan_log(threshold).await {
            Some(Ok(log)) => return Some((target.name(), log)),
            Some(Err(error)) => {
                notes.push(format!("no plan log: {error:#}"));
                return None;
            }
            None => {}
        }
    }
    None
}

/// The fairness gate, retried for a few seconds while only the data set differs (statistics may
/// lag a freshly loaded table); a mismatch of settings is final at once.
async fn gate(
    client: &diagnostics::Client,
    setup: &Setup,
    inserted: &BTreeMap<String, u64>,
    settle: Duration,
) -> Result<(Snapshot, Fairness)> {
    let mut attempt = 0;
    loop {
        let manifest = manifest::read(&setup.manifest).ok();
        let snapshot = client.settled(0.0, settle).await?;
        let seen = fairness::look(&setup.targets, &snapshot, manifest.as_ref()).await;
        let verdict = fairness::check_all(manifest.as_ref(), inserted, &seen);
        attempt += 1;
        if !fairness::may_settle(&verdict) || attempt >= 4 {
            return Ok((snapshot, verdict));
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// Clients enough to open every pooled connection of every service: the largest pool, at least 16.
async fn pool_clients(client: &diagnostics::Client, setup: &Setup) -> u32 {
    let snapshot = client.snapshot(0.0).await.ok();
    let pools = snapshot.map(|s| {
        let pools = setup.targets.iter().filter_map(|t| t.backend.facts(s.get(&t.name()), None).pool_size);
        pools.filter_map(|p| p.parse::<f64>().ok()).fold(0.0, f64::max)
    });
    (pools.unwrap_or(0.0) as u32).max(16)
}
