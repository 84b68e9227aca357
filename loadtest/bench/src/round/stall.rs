//! Telling a stall of the shared machine from a target's limit. The native generator counts every
//! step in short windows (100 ms by intended send time): requests, slow ones (at or above the p95
//! mark), failures and drops per target, and its own worst schedule lag. A window is **stalled**
//! when the generator itself could not send on time (lag of at least half the p95 mark) or when
//! every target was slow in it at once (at least a quarter of each one's requests): one database
//! reaching its limit slows its own target, not the other one and not the generator.
//!
//! A step that failed with stalled windows is judged again without them: if what is left passes
//! (under 5% slow, the p95 mark; failures and drops under their limits) and the stalled windows
//! cover at most a tenth of the step, the stall is **discounted** and the step passes, saying so.
//! A longer stall is not discounted (the step measured the machine, not the target) and the step
//! keeps its failure with the note. Summaries without windows (k6) are left as they are.

use super::verdict::{PassMark, StepResult};
use crate::k6::summary::{Summary, Windows};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A window counts as slow for a target from this share of slow requests on.
const SLOW_SHARE: f64 = 0.25;
/// At most this share of a step's windows may be discounted.
const MAX_DISCOUNTED_SHARE: f64 = 0.1;

/// What the stall review found in one step of one target.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Stall {
    /// Stalled windows and their length in seconds.
    pub windows: usize,
    pub seconds: f64,
    /// Seconds after the step began at which each stalled window starts.
    pub at_s: Vec<f64>,
    /// Requests, slow requests, failures and drops in those windows.
    pub requests: u64,
    pub slow: u64,
    pub failures: u64,
    pub dropped: u64,
    /// The share of slow requests in the rest of the step.
    pub slow_share_outside: f64,
    /// The step failed, and passes once the stall is left out.
    pub discounted: bool,
    pub note: String,
}

/// Which windows of a step were stalled: `targets` are every target's windows of that step,
/// `lag_ms` the generator's worst lag per window.
pub fn stalled_windows(targets: &[&Windows], lag_ms: &[f64], mark: &PassMark) -> Vec<bool> {
    let windows = targets.iter().map(|w| w.count.len()).max().unwrap_or(0).max(lag_ms.len());
    (0..windows)
        .map(|i| {
            let late = lag_ms.get(i).is_some_and(|lag| *lag >= mark.p95_ms / 2.0);
            let all_slow = targets.len() >= 2
                && targets.iter().all(|w| {
                    let count = w.count.get(i).copied().unwrap_or(0);
                    count > 0 && w.slow.get(i).copied().unwrap_or(0) as f64 >= SLOW_SHARE * count as f64
                });
            late || all_slow
        })
        .collect()
}

fn sum_where(values: &[u64], pick: &[bool], stalled: bool) -> u64 {
    values.iter().zip(pick).filter(|(_, s)| **s == stalled).map(|(v, _)| *v).sum()
}

/// Reviews one step of one target given its stalled windows; `None` when none was stalled.
pub fn review_step(step: &mut StepResult, windows: &Windows, stalled: &[bool], mark: &PassMark) -> Option<Stall> {
    let n = stalled.iter().filter(|s| **s).count();
    if n == 0 {
        return None;
    }
    let inside = |values: &[u64]| sum_where(values, stalled, true);
    let outside = |values: &[u64]| sum_where(values, stalled, false);
    let (count, slow) = (outside(&windows.count), outside(&windows.slow));
    let (failures, dropped) = (outside(&windows.failed), outside(&windows.dropped));
    let slow_share_outside = if count == 0 { 1.0 } else { slow as f64 / count as f64 };
    let failed_rate = if count == 0 { 0.0 } else { failures as f64 / count as f64 };
    let passes_outside = count > 0
        && slow_share_outside < 0.05
        && (failures == 0 || failed_rate < mark.max_failed_rate)
        && dropped <= mark.max_dropped;
    let short = n as f64 <= MAX_DISCOUNTED_SHARE * stalled.len() as f64;
    let seconds = n as f64 * windows.ms / 1000.0;
    let at_s: Vec<f64> =
        stalled.iter().enumerate().filter(|(_, s)| **s).map(|(i, _)| i as f64 * windows.ms / 1000.0).collect();
    let discounted = step.complete && !step.passed && passes_outside && short;
    let where_ = at_s.iter().map(|a| format!("{a:.1}")).collect::<Vec<_>>().join(", ");
    let note = if discounted {
        format!(
            "shared stall of {seconds:.1} s (at {where_} s into the step) discounted: without it {:.1}% slow, it \
             passes",
            slow_share_outside * 100.0
        )
    } else if !step.passed && step.complete && !short {
        format!(
            "shared stall of {seconds:.1} s ({:.0}% of the step): too long to discount, the step measured the machine",
            n as f64 / stalled.len() as f64 * 100.0
        )
    } else if !step.passed && step.complete {
        format!("shared stall of {seconds:.1} s, but it fails without it too ({:.1}% slow)", slow_share_outside * 100.0)
    } else {
        format!("shared stall of {seconds:.1} s")
    };
    if discounted {
        step.passed = true;
        step.reasons = vec![];
    }
    Some(Stall {
        windows: n,
        seconds,
        at_s,
        requests: inside(&windows.count),
        slow: inside(&windows.slow),
        failures: inside(&windows.failed),
        dropped: inside(&windows.dropped),
        slow_share_outside,
        discounted,
        note,
    })
}

/// Reviews every step of every target of a run (`steps`: the verdicts per target, in the
/// summary's step order).
pub fn review(steps: &mut BTreeMap<String, Vec<StepResult>>, summary: &Summary, mark: &PassMark) {
    let generator = summary.load_generator.as_ref();
    let names: Vec<String> = steps.keys().cloned().collect();
    let step_count = steps.values().map(Vec::len).max().unwrap_or(0);
    for k in 0..step_count {
        let windows: Vec<(&String, &Windows)> =
            names.iter().filter_map(|n| Some((n, summary.targets.get(n)?.steps.get(k)?.windows.as_ref()?))).collect();
        if windows.is_empty() {
            continue;
        }
        let lag: &[f64] = generator.and_then(|g| g.step(k)).map_or(&[], |s| &s.window_lag_max_ms);
        let all: Vec<&Windows> = windows.iter().map(|(_, w)| *w).collect();
        let stalled = stalled_windows(&all, lag, mark);
        for (name, target_windows) in windows {
            if let Some(step) = steps.get_mut(name).and_then(|s| s.get_mut(k)) {
                step.stall = review_step(step, target_windows, &stalled, mark);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::k6::summary::{Figures, Latency, StepSummary};
    use crate::round::verdict::judge_step;

    /// 40 windows of 100 ms with `per_window` requests; `slow[i]` slow ones in window i.
    fn windows(per_window: u64, slow: &[(usize, u64)]) -> Windows {
        let mut w = Windows {
            ms: 100.0,
            count: vec![per_window; 40],
            slow: vec![0; 40],
            failed: vec![0; 40],
            dropped: vec![0; 40],
        };
        for (i, s) in slow {
            w.slow[*i] = *s;
        }
        w
    }

    fn failed_step(p95: f64) -> StepResult {
        let summary = StepSummary {
            step: 3,
            from_s: 12.0,
            to_s: 16.0,
            rate: 500,
            offered_iterations: 2000.0,
            figures: Figures {
                count: 2000,
                achieved_rate: 500.0,
                failures: 0,
                latency_ms: Latency { p50: Some(0.6), p95: Some(p95), ..Latency::default() },
            },
            dropped_iterations: Some(0),
            windows: None,
        };
        judge_step(&summary, 0, true, &PassMark::default())
    }

    #[test]
    fn a_stall_both_targets_saw_is_discounted_and_the_step_passes() {
        // 200 ms in which nearly every request of both targets was slow: 100 of 2,000 = p95 at the mark.
        let pg = windows(50, &[(20, 48), (21, 50), (22, 3)]);
        let mongo = windows(50, &[(20, 40), (21, 50)]);
        let stalled = stalled_windows(&[&pg, &mongo], &[], &PassMark::default());
        assert_eq!(stalled.iter().filter(|s| **s).count(), 2);
        let mut step = failed_step(62.0);
        assert!(!step.passed);
        let stall = review_step(&mut step, &pg, &stalled, &PassMark::default()).expect("a stall");
        assert!(stall.discounted && step.passed && step.reasons.is_empty(), "{stall:?}");
        assert_eq!((stall.requests, stall.slow, stall.at_s.clone()), (100, 98, vec![2.0, 2.1]));
        assert!(stall.note.contains("discounted"), "{}", stall.note);
    }

    #[test]
    fn a_target_slow_on_its_own_is_a_limit_not_a_stall() {
        // pg is slow all through the step, mongo only in one window: pg still fails without it.
        let pg = windows(50, &(0..40).map(|i| (i, 15)).collect::<Vec<_>>());
        let mongo = windows(50, &[(5, 30)]);
        let stalled = stalled_windows(&[&pg, &mongo], &[], &PassMark::default());
        assert_eq!(stalled.iter().filter(|s| **s).count(), 1, "only where both were slow");
        let mut step = failed_step(80.0);
        let stall = review_step(&mut step, &pg, &stalled, &PassMark::default()).expect("noted");
        assert!(!stall.discounted && !step.passed);
        assert!(stall.note.contains("fails without it too"), "{}", stall.note);
    }

    #[test]
    fn a_long_shared_stall_is_not_discounted() {
        let slow: Vec<(usize, u64)> = (10..16).map(|i| (i, 50)).collect();
        let (pg, mongo) = (windows(50, &slow), windows(50, &slow));
        let stalled = stalled_windows(&[&pg, &mongo], &[], &PassMark::default());
        let mut step = failed_step(120.0);
        let stall = review_step(&mut step, &pg, &stalled, &PassMark::default()).expect("noted");
        assert!(!stall.discounted && !step.passed, "600 ms of 4 s is more than a tenth");
        assert!(stall.note.contains("too long"), "{}", stall.note);
    }

    #[test]
    fn a_generator_that_could_not_send_on_time_marks_its_window() {
        let quiet = windows(50, &[]);
        let mut lag = vec![0.2; 40];
        lag[7] = 31.0;
        let stalled = stalled_windows(&[&quiet, &quiet], &lag, &PassMark::default());
        assert_eq!(stalled.iter().position(|s| *s), Some(7));
        assert_eq!(stalled.iter().filter(|s| **s).count(), 1);
        let mut passing = failed_step(10.0);
        let stall = review_step(&mut passing, &quiet, &stalled, &PassMark::default()).expect("noted");
        assert!(passing.passed && !stall.discounted, "a passing step stays as it is");
    }
}
