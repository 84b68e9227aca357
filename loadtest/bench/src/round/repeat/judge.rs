//! A repeat's verdicts: every step of every target against the pass mark, with the dropped
//! iterations each machine counted, stalls of the shared machine reviewed, and each target's
//! maximum passing rate.

use crate::round::RoundSpec;
use orders_bench_model::result::TargetResult;
use orders_bench_model::verdict::stall;
use orders_bench_model::verdict::{drops_by_target, judge_target, max_passing_rate};
use orders_loadgen::summary::Summary;
use std::collections::BTreeMap;

/// Each target's judged steps and limit. `drop_samples` are the generator's running counts of
/// dropped iterations (read from `start`, step 0's beginning, when it is known); with several load
/// machines, `fleet` has every machine's drops.
pub fn targets(
    spec: &RoundSpec,
    summary: &Summary,
    drop_samples: &[(f64, BTreeMap<String, u64>)],
    start: Option<f64>,
    fleet: Option<&crate::fleet::leader::Combined>,
    label: &str,
) -> BTreeMap<String, TargetResult> {
    let read_drops = (!drop_samples.is_empty())
        .then_some(start)
        .flatten()
        .map(|start| drops_by_target(drop_samples, start, summary));
    let mut judged = BTreeMap::new();
    for (name, target) in &summary.targets {
        let drops = match fleet {
            Some(fleet) => Some(fleet.drops(name)),
            None => read_drops.as_ref().and_then(|drops| drops.get(name).cloned()),
        };
        judged.insert(name.clone(), judge_target(target, summary.run_seconds, &spec.mark, drops.as_deref()));
    }
    stall::review(&mut judged, summary, &spec.mark);
    let mut results = BTreeMap::new();
    for (name, target) in &summary.targets {
        let steps = judged.remove(name).unwrap_or_default();
        for (step, stall) in steps.iter().filter_map(|s| Some((s, s.stall.as_ref()?))) {
            if stall.mattered() {
                eprintln!("{label} {name} step {} @ {} req/s: {}", step.step + 1, step.rate, stall.note);
            }
        }
        let max_rate = max_passing_rate(&steps);
        results.insert(
            name.clone(),
            TargetResult {
                max_rate,
                requests: target.figures.count,
                failures: target.figures.failures,
                dropped_iterations: target.dropped_iterations,
                latency_ms: target.figures.latency_ms,
                endpoints: target.endpoints.iter().map(|(e, f)| (e.clone(), f.count)).collect(),
                steps,
                retired: target.retired,
            },
        );
    }
    results
}

/// "pg max 1200 req/s (failed at 1300); mongo passed every step (≥ 2000 req/s)".
pub fn said(results: &BTreeMap<String, TargetResult>) -> String {
    let verdicts: Vec<String> = results
        .iter()
        .map(|(name, t)| match t.max_rate.first_failed_rate {
            Some(failed) => format!("{name} max {} req/s (failed at {failed})", t.max_rate.rate),
            None => format!("{name} passed every step (≥ {} req/s)", t.max_rate.rate),
        })
        .collect();
    verdicts.join("; ")
}
