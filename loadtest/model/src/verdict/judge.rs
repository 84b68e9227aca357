//! The pass mark and the rate search on a generator's summary. A step passes for a target when its
//! p95 is under the mark, its failed share under the limit and it dropped no iteration; the
//! **maximum passing rate** is the highest step rate that passed with every lower step passing
//! too (a lucky pass above a failure does not count; `≥` when nothing failed, "below the first
//! rate" when the first step failed); with repeats, the median of the maxima and their range.
//! Dropped iterations per step come from the native generator's own counts, or from k6's running
//! count (its shortfall without one). A step failed by a stall of the shared machine is recognised
//! afterwards (`super::stall`). The full rules: docs/fairness.md, "How a step is judged".

use super::{MaxRate, PassMark, RateSummary, StepResult};
use crate::summary::{StepSummary, Summary, TargetSummary};
use std::collections::BTreeMap;

/// Requests started late enough to carry the next step's tag, not dropped.
fn boundary_tolerance(offered: u64) -> u64 {
    (offered / 50).max(2)
}

/// A step's dropped iterations from its shortfall, when no running count was read.
fn shortfall_drops(step: &StepSummary, k6_dropped_any: bool) -> u64 {
    let offered = step.offered_iterations.round() as u64;
    let shortfall = offered.saturating_sub(step.figures.count);
    if k6_dropped_any && shortfall > boundary_tolerance(offered) { shortfall } else { 0 }
}

/// Every target's drops per step ([`drops_per_step`]) from k6's running counts read at `samples`
/// (seconds after the origin, each target's cumulative count by name).
pub fn drops_by_target(
    samples: &[(f64, BTreeMap<String, u64>)],
    scenario_start: f64,
    summary: &Summary,
) -> BTreeMap<String, Vec<u64>> {
    let own = |name: &str| -> Vec<(f64, u64)> {
        samples.iter().map(|(t, counts)| (*t, counts.get(name).copied().unwrap_or(0))).collect()
    };
    summary
        .targets
        .iter()
        .map(|(name, target)| {
            (name.clone(), drops_per_step(&own(name), scenario_start, &target.steps, target.dropped_iterations))
        })
        .collect()
}

/// Spreads k6's running count of dropped iterations, read at `samples` (seconds after the origin,
/// cumulative count), over the steps (`scenario_start`: when step 0 began, same clock). Whatever
/// the readings missed of k6's final `total` goes to the last step that had begun.
pub fn drops_per_step(samples: &[(f64, u64)], scenario_start: f64, steps: &[StepSummary], total: u64) -> Vec<u64> {
    let at = |t: f64| -> f64 {
        let Some(first) = samples.first() else { return 0.0 };
        if t <= first.0 {
            return 0.0;
        }
        match samples.iter().position(|s| s.0 >= t) {
            None => samples.last().map_or(0.0, |s| s.1 as f64),
            Some(i) => {
                let (a, b) = (samples[i - 1], samples[i]);
                a.1 as f64 + (b.1 as f64 - a.1 as f64) * (t - a.0) / (b.0 - a.0).max(1e-9)
            }
        }
    };
    let mut drops: Vec<u64> = steps
        .iter()
        .map(|s| (at(scenario_start + s.to_s) - at(scenario_start + s.from_s)).round().max(0.0) as u64)
        .collect();
    let seen: u64 = drops.iter().sum();
    let last_begun =
        samples.last().map(|s| s.0 - scenario_start).and_then(|t| steps.iter().rposition(|s| s.from_s <= t));
    if let Some(last) = last_begun.or(if steps.is_empty() { None } else { Some(steps.len() - 1) }) {
        drops[last] += total.saturating_sub(seen);
    }
    drops
}

pub fn judge_step(step: &StepSummary, dropped: u64, complete: bool, mark: &PassMark) -> StepResult {
    let offered = step.offered_iterations.round() as u64;
    let count = step.figures.count;
    let failed_rate = if count == 0 { 0.0 } else { step.figures.failures as f64 / count as f64 };
    let p95 = step.figures.latency_ms.p95.filter(|_| count > 0);
    let mut reasons = Vec::new();
    if complete {
        match p95 {
            Some(p95) if p95 >= mark.p95_ms => reasons.push(format!("p95 {p95:.1} ms ≥ {} ms", mark.p95_ms)),
            None => reasons.push("no request completed".to_owned()),
            _ => {}
        }
        if failed_rate >= mark.max_failed_rate && step.figures.failures > 0 {
            reasons.push(format!("failed {:.2}% ≥ {}%", failed_rate * 100.0, mark.max_failed_rate * 100.0));
        }
        if dropped > mark.max_dropped {
            reasons.push(format!("dropped ~{dropped}"));
        }
    }
    StepResult {
        step: step.step,
        rate: step.rate,
        offered,
        count,
        achieved_rate: step.figures.achieved_rate,
        failures: step.figures.failures,
        failed_rate,
        p50_ms: step.figures.latency_ms.p50.filter(|_| count > 0),
        p95_ms: p95,
        p99_ms: step.figures.latency_ms.p99.filter(|_| count > 0),
        dropped,
        complete,
        passed: complete && reasons.is_empty(),
        reasons,
        stall: None,
    }
}

/// All steps of a target; a step is complete when the run lasted past its end and the target was
/// still being loaded then (a retired target's later steps did not run for it). `drops`: per
/// step, from `drops_per_step`, when the running count was read.
pub fn judge_target(
    target: &TargetSummary,
    run_seconds: f64,
    mark: &PassMark,
    drops: Option<&[u64]>,
) -> Vec<StepResult> {
    let loaded_until = target.retired.map_or(run_seconds, |r| r.at_s.min(run_seconds));
    let mut steps: Vec<StepResult> = target
        .steps
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let dropped = match (s.dropped_iterations, drops) {
                (Some(exact), _) => exact,
                (None, Some(drops)) => drops.get(i).copied().unwrap_or(0),
                (None, None) => shortfall_drops(s, target.dropped_iterations > 0),
            };
            judge_step(s, dropped, s.to_s <= loaded_until + 0.05, mark)
        })
        .collect();
    // k6 saw drops but no step's shortfall shows them (all within tolerance): blame the step that
    // fell shortest, so the total is never lost.
    if target.dropped_iterations > mark.max_dropped && steps.iter().all(|s| s.dropped == 0) {
        let worst = steps.iter_mut().filter(|s| s.complete).max_by_key(|s| s.offered.saturating_sub(s.count));
        if let Some(worst) = worst {
            worst.dropped = target.dropped_iterations;
            worst.passed = false;
            worst.reasons.push(format!("dropped ~{} (k6 total)", target.dropped_iterations));
        }
    }
    steps
}

/// Steps a stall of the machine left inconclusive (`stall`) are stepped over.
pub fn max_passing_rate(steps: &[StepResult]) -> MaxRate {
    let mut rate = 0;
    for step in steps.iter().filter(|s| s.complete && !s.inconclusive()) {
        if !step.passed {
            return MaxRate { rate, first_failed_rate: Some(step.rate) };
        }
        rate = step.rate;
    }
    MaxRate { rate, first_failed_rate: None }
}

pub fn summarize(rates: &[MaxRate]) -> Option<RateSummary> {
    let mut runs: Vec<u32> = rates.iter().map(|r| r.rate).collect();
    runs.sort_unstable();
    let n = runs.len();
    let median = match n {
        0 => return None,
        _ if n % 2 == 1 => f64::from(runs[n / 2]),
        _ => (f64::from(runs[n / 2 - 1]) + f64::from(runs[n / 2])) / 2.0,
    };
    Some(RateSummary {
        median,
        min: runs[0],
        max: runs[n - 1],
        lower_bound: rates.iter().any(|r| !r.saturated()),
        runs: rates.iter().map(|r| r.rate).collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::summary::{FIXTURE, Figures, Latency, Summary};

    fn step(index: usize, rate: u32, count: u64, failures: u64, p95: f64) -> StepSummary {
        StepSummary {
            step: index,
            from_s: index as f64 * 10.0,
            to_s: (index + 1) as f64 * 10.0,
            rate,
            offered_iterations: f64::from(rate) * 10.0,
            figures: Figures {
                count,
                achieved_rate: count as f64 / 10.0,
                failures,
                latency_ms: Latency { p50: Some(p95 / 3.0), p95: Some(p95), ..Latency::default() },
            },
            dropped_iterations: None,
            windows: None,
        }
    }

    fn results(passes: &[bool]) -> Vec<StepResult> {
        passes
            .iter()
            .enumerate()
            .map(|(i, ok)| {
                let rate = 100 * (i as u32 + 1);
                let p95 = if *ok { 10.0 } else { 80.0 };
                judge_step(&step(i, rate, u64::from(rate) * 10, 0, p95), 0, true, &PassMark::default())
            })
            .collect()
    }

    #[test]
    fn the_pass_mark_checks_p95_failures_and_drops() {
        let mark = PassMark::default();
        assert!(judge_step(&step(0, 100, 1000, 0, 49.9), 0, true, &mark).passed);
        let slow = judge_step(&step(0, 100, 1000, 0, 50.0), 0, true, &mark);
        assert_eq!(slow.reasons, ["p95 50.0 ms ≥ 50 ms"]);
        let failing = judge_step(&step(0, 100, 1000, 10, 5.0), 0, true, &mark);
        assert_eq!(failing.reasons, ["failed 1.00% ≥ 1%"]);
        assert!(judge_step(&step(0, 100, 1000, 9, 5.0), 0, true, &mark).passed, "0.9% is under 1%");
        let dropping = judge_step(&step(0, 100, 990, 0, 5.0), 1, true, &mark);
        assert_eq!((dropping.dropped, dropping.reasons.clone()), (1, vec!["dropped ~1".to_owned()]));
        let unfinished = judge_step(&step(0, 100, 10, 0, 500.0), 0, false, &mark);
        assert!(!unfinished.passed && unfinished.reasons.is_empty(), "an unfinished step is not judged");
    }

    #[test]
    fn without_running_counts_drops_are_shortfalls_beyond_two_percent() {
        assert_eq!(shortfall_drops(&step(0, 100, 900, 0, 5.0), true), 100);
        assert_eq!(shortfall_drops(&step(0, 100, 980, 0, 5.0), true), 0, "late starts tagged with the next step");
        assert_eq!(shortfall_drops(&step(0, 100, 900, 0, 5.0), false), 0, "k6 dropped nothing: requests still running");
    }

    #[test]
    fn running_counts_of_drops_are_spread_over_the_steps_they_were_seen_in() {
        let steps: Vec<StepSummary> = (0..4).map(|i| step(i, 100, 1000, 0, 5.0)).collect();
        // Steps of 10 s starting 1 s after the origin; drops begin during step 2 (21..31 s).
        let samples = [(0.5, 0), (11.0, 0), (21.0, 0), (26.0, 50), (31.0, 100), (36.0, 300)];
        assert_eq!(
            drops_per_step(&samples, 1.0, &steps, 300),
            [0, 0, 100, 200],
            "the rest goes to the last step begun"
        );
        assert_eq!(drops_per_step(&[], 0.0, &steps, 7), [0, 0, 0, 7]);
    }

    #[test]
    fn the_max_rate_is_the_last_pass_before_the_first_failure() {
        assert_eq!(
            max_passing_rate(&results(&[true, true, false, true])),
            MaxRate { rate: 200, first_failed_rate: Some(300) }
        );
        assert_eq!(max_passing_rate(&results(&[false, true])), MaxRate { rate: 0, first_failed_rate: Some(100) });
        let unsaturated = max_passing_rate(&results(&[true, true, true]));
        assert_eq!(unsaturated, MaxRate { rate: 300, first_failed_rate: None });
        assert!(!unsaturated.saturated());
    }

    #[test]
    fn a_step_a_stall_left_inconclusive_is_stepped_over() {
        let mut steps = results(&[true, false, true, false]);
        steps[1].stall = Some(crate::verdict::Stall {
            windows: 8,
            seconds: 0.8,
            at_s: vec![],
            requests: 400,
            slow: 390,
            failures: 0,
            dropped: 0,
            slow_share_outside: 0.01,
            passes_outside: true,
            outcome: crate::verdict::Outcome::Inconclusive,
            note: String::new(),
        });
        assert_eq!(max_passing_rate(&steps), MaxRate { rate: 300, first_failed_rate: Some(400) });
    }

    #[test]
    fn unfinished_steps_neither_pass_nor_fail() {
        let mut steps = results(&[true, false]);
        steps[1].complete = false;
        steps[1].passed = false;
        assert_eq!(max_passing_rate(&steps), MaxRate { rate: 100, first_failed_rate: None });
    }

    #[test]
    fn the_steps_of_a_retired_target_from_its_retirement_on_did_not_run_for_it() {
        let summary = Summary::parse(FIXTURE).expect("fixture");
        let mut pg = summary.targets["pg"].clone();
        pg.retired = Some(crate::summary::Retired { step: 1, at_s: pg.steps[1].from_s + 0.1 });
        let steps = judge_target(&pg, summary.run_seconds, &PassMark::default(), None);
        assert!(steps[0].complete && steps[0].passed, "{:?}", steps[0]);
        assert!(!steps[1].complete && !steps[1].passed && steps[1].reasons.is_empty(), "{:?}", steps[1]);
        assert_eq!(max_passing_rate(&steps), MaxRate { rate: 100, first_failed_rate: None });
        // Retired at the very end of the run: every step ran.
        pg.retired = Some(crate::summary::Retired { step: 1, at_s: summary.run_seconds });
        let steps = judge_target(&pg, summary.run_seconds, &PassMark::default(), None);
        assert!(steps[1].complete && !steps[1].passed);
    }

    #[test]
    fn repeats_give_the_median_and_the_range() {
        let rate = |rate, failed| MaxRate { rate, first_failed_rate: failed };
        let odd = summarize(&[rate(300, Some(400)), rate(100, Some(200)), rate(200, Some(300))]).expect("runs");
        assert_eq!((odd.median, odd.min, odd.max, odd.lower_bound), (200.0, 100, 300, false));
        assert_eq!(odd.runs, [300, 100, 200], "in run order");
        let even = summarize(&[rate(100, Some(200)), rate(200, None)]).expect("runs");
        assert_eq!((even.median, even.lower_bound), (150.0, true));
        assert_eq!(summarize(&[]), None);
    }

    #[test]
    fn the_real_summary_passes_its_first_step_and_fails_its_second() {
        let summary = Summary::parse(FIXTURE).expect("fixture");
        for (name, target) in &summary.targets {
            let steps = judge_target(target, summary.run_seconds, &PassMark::default(), None);
            assert!(steps[0].passed, "{name}: {:?}", steps[0]);
            assert!(!steps[1].passed && steps[1].dropped > 1000, "{name}: {:?}", steps[1]);
            assert_eq!(max_passing_rate(&steps), MaxRate { rate: 100, first_failed_rate: Some(1100) });
        }
    }
}
