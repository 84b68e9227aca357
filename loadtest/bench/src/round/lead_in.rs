//! The lead-in: the round's own mix at a constant rate below the staircase's first step, on every
//! target at once, after the checkpoint and right before the load that is judged (`LeadIn` in
//! `result.json` says why). It is a warm-up of the work itself, where the pool warm-up only opens
//! connections: its requests are not judged, but every one must succeed, and every target must
//! have inserted the same orders (the fairness gate counts them), or the repeat stops with the
//! figures.

use super::launch::{Tolerance, constant_rate, side_load};
use super::{RoundSpec, Setup};
use anyhow::{Result, bail};
use orders_bench_model::start::{LeadIn, LeadInTarget};
use std::path::Path;
use std::time::Duration;

/// The lead-in's rate as a share of the staircase's first: the first step sits at 0.6 of the
/// slower target's knee in the demo, so this is about a third of it.
pub const SHARE_OF_FIRST_STEP: f64 = 0.6;

/// The lead-in's length in the demo and the experiments (`round --lead-in`'s default too).
pub const LENGTH: Duration = Duration::from_secs(4);

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
/// what every target answered and the orders it inserted on each (the same on every target).
pub async fn run(spec: &RoundSpec, setup: &Setup, dir: &Path, length: Duration) -> Result<(LeadIn, u64)> {
    let rate = rate(spec);
    let args = constant_rate(&spec.mix, rate, length, 4, spec.prefer_minimal);
    let what = format!("lead-in at {rate} req/s");
    let summary = side_load(setup, &args, &dir.join("lead-in-summary.json"), &what, Tolerance::None).await?;
    let mut lead_in = LeadIn { rate, seconds: length.as_secs_f64(), targets: Default::default() };
    let mut inserted = Vec::new();
    for (name, target) in &summary.targets {
        let figures = &target.figures;
        lead_in.targets.insert(
            name.clone(),
            LeadInTarget { requests: figures.count, failures: figures.failures, p95_ms: figures.latency_ms.p95 },
        );
        inserted.push((name, target.endpoints.get("insert").map_or(0, |e| e.count - e.failures)));
    }
    let first = inserted.first().map_or(0, |(_, n)| *n);
    if inserted.iter().any(|(_, n)| *n != first) {
        let counts: Vec<String> = inserted.iter().map(|(name, n)| format!("{name} {n}")).collect();
        bail!("the lead-in inserted different numbers of orders ({}): the data would differ", counts.join(", "));
    }
    Ok((lead_in, first))
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

    #[test]
    fn no_lead_in_is_zero_or_none() {
        assert_eq!(parse_length("0"), Ok(Duration::ZERO));
        assert_eq!(parse_length("none"), Ok(Duration::ZERO));
        assert_eq!(parse_length("4s"), Ok(Duration::from_secs(4)));
        assert!(parse_length("soon").is_err());
    }
}
