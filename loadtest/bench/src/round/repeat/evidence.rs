//! A repeat's explaining figures: each backend's reading of the snapshots before, during and
//! after the run, its write-ahead log over it and its plan log's scans (where the engine has
//! them), and the CPU report with the component that set each target's limit.

use crate::diagnostics::Snapshot;
use orders_bench_engines::{PlanLog, Targets, WalStats};
use orders_bench_model::cpu::CpuReport;
use orders_bench_model::explain::Explain;
use orders_bench_model::limit;
use orders_bench_model::result::TargetResult;
use std::collections::BTreeMap;

/// Every target's explaining figures from the snapshots before, during and after the run, each
/// backend reading its own engine's part; `writes` gives a target's write requests.
pub fn explain_all(
    targets: &Targets,
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
/// target. The figures are server-wide: a target's own where its database has a server of its
/// own, shared with the other targets of its server where it has not.
pub async fn wal_by_target(targets: &Targets) -> BTreeMap<String, WalStats> {
    let read = targets.iter().map(|t| async move { (t.name(), t.backend.wal_stats().await) });
    futures_util::future::join_all(read).await.into_iter().filter_map(|(name, wal)| Some((name, wal?))).collect()
}

/// Each target's write-ahead log over the run, where its engine read one before and after.
pub fn add_wal(
    explain: &mut Explain,
    targets: &Targets,
    before: &BTreeMap<String, WalStats>,
    after: &BTreeMap<String, WalStats>,
) {
    for target in targets.iter() {
        let name = target.name();
        if let (Some(figures), Some(b), Some(a)) = (explain.0.get_mut(&name), before.get(&name), after.get(&name)) {
            target.backend.add_wal(figures, b, a);
        }
    }
}

/// The plan log's scans since its mark, in the figures of the target whose log it is.
pub async fn add_scans(explain: &mut Explain, target: &str, log: &dyn PlanLog) {
    if let Some(figures) = explain.0.get_mut(target) {
        log.add_scans(figures).await;
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
