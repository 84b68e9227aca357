//! A repeat's explaining figures: each backend's reading of the snapshots before, during and
//! after the run, PostgreSQL's WAL over it and the plan log's scans, and the CPU report with the
//! component that set each target's limit.

use crate::backend::postgres;
use crate::diagnostics::Snapshot;
use crate::round::{Setup, plan_log};
use orders_bench_model::cpu::CpuReport;
use orders_bench_model::explain::{EngineExplain, Explain};
use orders_bench_model::limit;
use orders_bench_model::plans::ScanAttribution;
use orders_bench_model::result::TargetResult;
use std::collections::BTreeMap;

/// Every target's explaining figures from the snapshots before, during and after the run, each
/// backend reading its own engine's part; `writes` gives a target's write requests.
pub fn explain_all(
    targets: &crate::backend::Targets,
    before: &Snapshot,
    polled: &[Snapshot],
    after: &Snapshot,
    writes: impl Fn(&str) -> u64,
) -> Explain {
    let mut explain = Explain::default();
    for target in targets.iter() {
        let name = target.name();
        let polled: Vec<(f64, &serde_json::Value)> = polled.iter().map(|p| (p.at_s, p.get(&name))).collect();
        let figures = target.backend.explain(before.get(&name), &polled, after.get(&name), writes(&name));
        explain.0.insert(name, figures);
    }
    explain
}

/// The write-ahead log of every target whose engine has one to read (`Backend::wal_stats`), by
/// target. PostgreSQL's figures are server-wide: a target's own where its database has a server of
/// its own (the hybrid's on the local stack), orders-pg's and its together where they share one.
pub async fn wal_by_target(targets: &crate::backend::Targets) -> BTreeMap<String, postgres::WalStats> {
    let read = targets.iter().map(|t| async move { (t.name(), t.backend.wal_stats().await) });
    futures_util::future::join_all(read).await.into_iter().filter_map(|(name, wal)| Some((name, wal?))).collect()
}

/// Each PostgreSQL target's WAL records, full-page images and flushes over the run.
pub fn add_wal(
    explain: &mut Explain,
    before: &BTreeMap<String, postgres::WalStats>,
    after: &BTreeMap<String, postgres::WalStats>,
) {
    for (name, figures) in explain.0.iter_mut() {
        if let (EngineExplain::Pg(pg), Some(b), Some(a)) = (figures, before.get(name), after.get(name)) {
            pg.add_wal_stats(a.records - b.records, a.fpi - b.fpi, a.flushes.zip(b.flushes).map(|(a, b)| a - b));
        }
    }
}

/// The plan log's sequential scans since `from`, attributed to the plans that ran them, beside
/// the scans PostgreSQL counted.
pub async fn add_scans(explain: &mut Explain, setup: &Setup, threshold: f64, from: &plan_log::Position) {
    let mut scans = plan_log::read(&setup.databases.database_url, from, threshold)
        .await
        .unwrap_or_else(|error| ScanAttribution::failed(threshold, format!("{error:#}")));
    if let Some(pg) = explain.pg_mut() {
        scans.unattributed = pg.seq_scans.map(|counted| counted - scans.seq_scans() as f64);
        pg.scans = Some(scans);
    }
}

/// For every target that failed, the component that set its limit, from the CPU of the step the
/// rate search stopped at (the first failure it did not step over).
pub fn add_limits(
    cpu: &mut CpuReport,
    results: &BTreeMap<String, TargetResult>,
    components: &[orders_bench_model::cpu::Component],
) {
    for (name, target) in results {
        let failed = target
            .max_rate
            .first_failed_rate
            .and_then(|rate| target.steps.iter().find(|s| s.complete && !s.passed && s.rate == rate));
        if let Some(step_cpu) = failed.and_then(|f| cpu.steps.iter().find(|s| s.step == f.step)) {
            let limit = limit::limit(name, step_cpu, components, cpu.cores);
            cpu.limits.insert(name.clone(), limit);
        }
    }
}
