//! The lead-in: the round's own mix at a constant rate below the staircase's first step, on every
//! target at once, after the checkpoint and right before the load that is judged (`LeadIn` in
//! `result.json` says why). It is a warm-up of the work itself, where the pool warm-up only opens
//! connections: its requests are not judged. Its failures are recorded in `result.json` and
//! the report (F1 itself can arrive here: a cached generic plan's sequential scans under the
//! experiment's prefilled pending list), and the staircase that follows judges; the orders each
//! target inserted go to the fairness gate, which expects them in that target's database.

use super::launch::{Tolerance, constant_rate, side_load};
use super::{RoundSpec, Setup};
use anyhow::Result;
use orders_bench_model::start::{LeadIn, LeadInTarget};
use orders_loadgen::summary::Summary;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

/// The lead-in's rate as a share of the staircase's first: the first step sits at 0.6 of the
/// slower target's knee in the demo, so this is about a third of it.
pub const SHARE_OF_FIRST_STEP: f64 = 0.6;

/// The lead-in's length in the demo and the experiments (`round --lead-in`'s default too).
pub const LENGTH: Duration = Duration::from_secs(4);

/// What the lead-in accepts of every target: any failures, as long as it was sent requests.
pub(super) const TOLERANCE: Tolerance = Tolerance::Recorded;

/// `--lead-in`: a duration, or `0` / `none` for no lead-in.
pub fn parse_length(text: &str) -> Result<Duration, String> {
    match text.trim() {
        "0" | "none" => Ok(Duration::ZERO),
        other => orders_loadgen::duration::parse(other),
    }
}

/// The lead-in's constant rate for `spec`: a share of its first step, at least 1 request a second.
pub fn rate(spec: &RoundSpec) -> u32 {
    let first = spec.plan.rates().first().copied().unwrap_or(1);
    ((f64::from(first) * SHARE_OF_FIRST_STEP).round() as u32).max(1)
}

/// Runs the lead-in of `spec` for `length` (its summary in `dir/lead-in-summary.json`); returns
/// what every target answered and the orders each inserted. Failed requests do not stop the round:
/// they are said on the terminal and recorded.
pub async fn run(
    spec: &RoundSpec,
    setup: &Setup,
    dir: &Path,
    length: Duration,
) -> Result<(LeadIn, BTreeMap<String, u64>)> {
    let rate = rate(spec);
    let args = constant_rate(&spec.mix, rate, length, 4, spec.prefer_minimal);
    let what = format!("lead-in at {rate} req/s");
    let summary = side_load(setup, &args, &dir.join("lead-in-summary.json"), &what, TOLERANCE).await?;
    let (lead_in, inserted) = outcome(&summary, rate, length);
    if let Some(failed) = failures_said(&lead_in) {
        eprintln!("the {what} had failures (recorded; the staircase judges): {failed}");
    }
    Ok((lead_in, inserted))
}

/// The lead-in as `result.json` records it, and the orders each target inserted (its successful
/// inserts), from the generator's summary.
pub fn outcome(summary: &Summary, rate: u32, length: Duration) -> (LeadIn, BTreeMap<String, u64>) {
    let mut lead_in = LeadIn { rate, seconds: length.as_secs_f64(), targets: Default::default() };
    let mut inserted = BTreeMap::new();
    for (name, target) in &summary.targets {
        let figures = &target.figures;
        lead_in.targets.insert(
            name.clone(),
            LeadInTarget { requests: figures.count, failures: figures.failures, p95_ms: figures.latency_ms.p95 },
        );
        inserted.insert(name.clone(), target.endpoints.get("insert").map_or(0, |e| e.count - e.failures));
    }
    (lead_in, inserted)
}

/// "pg 161 of 480 failed (p95 2,900 ms)" for every target with failures; `None` when none had any.
pub fn failures_said(lead_in: &LeadIn) -> Option<String> {
    let failed: Vec<String> = lead_in
        .targets
        .iter()
        .filter(|(_, t)| t.failures > 0)
        .map(|(name, t)| {
            let p95 = t.p95_ms.map_or_else(String::new, |p| format!(" (p95 {p:.0} ms)"));
            format!("{name} {} of {} failed{p95}", t.failures, t.requests)
        })
        .collect();
    (!failed.is_empty()).then(|| failed.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use orders_bench_model::result::RatePlan;

    #[test]
    fn the_lead_in_runs_below_the_first_step() {
        let plan = RatePlan {
            start_rate: 570,
            step: 1,
            max_rate: 2000,
            step_seconds: Duration::from_millis(3500),
            factor: Some(1.12),
        };
        let spec = crate::round::launch::tests::spec_with(plan);
        assert_eq!(rate(&spec), 342);
        let tiny = RatePlan { start_rate: 1, step: 1, max_rate: 2, step_seconds: Duration::from_secs(1), factor: None };
        assert_eq!(rate(&crate::round::launch::tests::spec_with(tiny)), 1, "at least one request a second");
    }

    /// The gin experiment's lead-in on a fresh clone: F1 itself arrived in it (PostgreSQL's product
    /// searches on generic-plan scans) and stopped the experiment after 74 s.
    fn f1_in_the_lead_in() -> Summary {
        let mut summary = Summary::parse(orders_loadgen::summary::FIXTURE).expect("fixture");
        let template = summary.targets.values().next().expect("a target").clone();
        summary.targets.clear();
        for (name, failed, inserts_failed) in [("mongo", 0, 0), ("pg", 161, 8)] {
            let mut target = template.clone();
            target.figures.count = 480;
            target.figures.failures = failed;
            target.endpoints.retain(|endpoint, _| endpoint == "insert");
            let insert = target.endpoints.get_mut("insert").expect("the fixture's shop mix inserts");
            (insert.count, insert.failures) = (48, inserts_failed);
            summary.targets.insert(name.into(), target);
        }
        summary
    }

    #[test]
    fn failures_in_the_lead_in_are_recorded_and_the_round_goes_on() {
        let summary = f1_in_the_lead_in();
        assert!(TOLERANCE.accepts(480, 161), "a lead-in failure must not abort the round");
        assert!(TOLERANCE.accepts(480, 480), "the staircase judges even a target that failed everything");
        assert!(!TOLERANCE.accepts(0, 0), "a target that was sent nothing is a broken run");
        let (lead_in, inserted) = outcome(&summary, 120, LENGTH);
        assert_eq!((lead_in.targets["pg"].requests, lead_in.targets["pg"].failures), (480, 161));
        assert_eq!(inserted, BTreeMap::from([("mongo".to_string(), 48), ("pg".to_string(), 40)]));
        let said = failures_said(&lead_in).expect("failures are said");
        assert!(said.starts_with("pg 161 of 480 failed"), "{said}");
        assert_eq!(lead_in.targets["mongo"].failures, 0);
        let clean = LeadIn {
            targets: [("pg".to_string(), LeadInTarget { requests: 9, failures: 0, p95_ms: None })].into(),
            ..lead_in
        };
        assert_eq!(failures_said(&clean), None);
    }

    #[test]
    fn no_lead_in_is_zero_or_none() {
        assert_eq!(parse_length("0"), Ok(Duration::ZERO));
        assert_eq!(parse_length("none"), Ok(Duration::ZERO));
        assert_eq!(parse_length("4s"), Ok(Duration::from_secs(4)));
        assert!(parse_length("soon").is_err());
    }
}
