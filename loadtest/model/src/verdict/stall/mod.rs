//! Telling a stall of the shared machine from a target's limit, on the short windows (100 ms by
//! intended send time) the native generator counts in every step. A window is **stalled** when the
//! generator itself could not send on time or every target was slow in it at once; a step that
//! failed with stalled windows is judged again without them: its failure stands (`Confirmed`), is
//! **discounted** (the step passes) or leaves the step **inconclusive** (the rate search steps over
//! it, at most `MAX_INCONCLUSIVE` times per target and run). The live view gets the same test
//! (`explains_live`), so a run is not stopped early on a stall; stalls of one target alone are
//! reviewed afterwards (`own`). Summaries without windows (k6) are left as they are. The rules and
//! their thresholds: docs/fairness.md, "How a step is judged".

mod own;

use crate::live::LiveView;
use crate::summary::{Summary, Windows};
use crate::verdict::{Outcome, PassMark, Stall, StepResult};
use std::collections::BTreeMap;

/// A window counts as slow for a target from this share of slow requests on.
const SLOW_SHARE: f64 = 0.25;
/// At most this share of a step's windows may be discounted.
const MAX_DISCOUNTED_SHARE: f64 = 0.1;
/// Steps per target and run the search may step over.
pub const MAX_INCONCLUSIVE: usize = 2;

/// Which windows of a step were stalled: `targets` are every target's windows of that step,
/// `lag_ms` the generator's worst lag per window.
pub fn stalled_windows(targets: &[&Windows], lag_ms: &[f64], mark: &PassMark) -> Vec<bool> {
    let windows = targets.iter().map(|w| w.count.len()).max().unwrap_or(0).max(lag_ms.len());
    let witnesses: Vec<&Windows> = targets
        .iter()
        .copied()
        .filter(|w| (0..w.count.len()).filter(|i| slow_in(w, *i)).count() * 2 <= w.count.len())
        .collect();
    (0..windows)
        .map(|i| {
            let late = lag_ms.get(i).is_some_and(|lag| *lag >= mark.p95_ms / 2.0);
            let all_slow = witnesses.len() >= 2 && witnesses.iter().all(|w| slow_in(w, i));
            late || all_slow
        })
        .collect()
}

/// Window `i` of `w` is slow: at least `SLOW_SHARE` of its requests were.
pub(super) fn slow_in(w: &Windows, i: usize) -> bool {
    let count = w.count.get(i).copied().unwrap_or(0);
    count > 0 && w.slow.get(i).copied().unwrap_or(0) as f64 >= SLOW_SHARE * count as f64
}

pub(super) fn sum_where(values: &[u64], pick: &[bool], stalled: bool) -> u64 {
    values.iter().zip(pick).filter(|(_, s)| **s == stalled).map(|(v, _)| *v).sum()
}

/// The rest of the step, outside the stalled windows, meets the pass mark; and its slow share.
pub(super) fn passes_outside(windows: &Windows, stalled: &[bool], mark: &PassMark) -> (bool, f64) {
    let outside = |values: &[u64]| sum_where(values, stalled, false);
    let (count, slow) = (outside(&windows.count), outside(&windows.slow));
    let (failures, dropped) = (outside(&windows.failed), outside(&windows.dropped));
    let slow_share = if count == 0 { 1.0 } else { slow as f64 / count as f64 };
    let failed_rate = if count == 0 { 0.0 } else { failures as f64 / count as f64 };
    let passes = count > 0
        && slow_share < 0.05
        && (failures == 0 || failed_rate < mark.max_failed_rate)
        && dropped <= mark.max_dropped;
    (passes, slow_share)
}

/// Reviews one step of one target given its stalled windows; `None` when none was stalled.
/// `inconclusive_so_far`: steps of this target already stepped over in this run.
pub fn review_step(
    step: &mut StepResult,
    windows: &Windows,
    stalled: &[bool],
    mark: &PassMark,
    inconclusive_so_far: usize,
) -> Option<Stall> {
    let n = stalled.iter().filter(|s| **s).count();
    if n == 0 {
        return None;
    }
    let (passes, slow_share_outside) = passes_outside(windows, stalled, mark);
    let short = n as f64 <= MAX_DISCOUNTED_SHARE * stalled.len() as f64;
    let (seconds, share) = span(windows, stalled);
    let failed = step.complete && !step.passed;
    let outcome = match (failed, passes, short) {
        (false, _, _) => Outcome::Noted,
        (true, false, _) => Outcome::Confirmed,
        (true, true, true) => Outcome::Discounted,
        (true, true, false) if inconclusive_so_far < MAX_INCONCLUSIVE => Outcome::Inconclusive,
        (true, true, false) => Outcome::Confirmed,
    };
    let outside = format!("{:.1}% slow without it", slow_share_outside * 100.0);
    let note = match outcome {
        Outcome::Noted => format!("shared stall of {seconds:.1} s, passed anyway"),
        Outcome::Discounted => format!("shared stall of {seconds:.1} s discounted ({outside}, it passes)"),
        Outcome::Inconclusive => format!(
            "shared stall of {seconds:.1} s ({share:.0}% of the step, too much to discount; {outside}): inconclusive, \
             the search steps over it"
        ),
        Outcome::Confirmed if passes => format!(
            "shared stall of {seconds:.1} s ({share:.0}% of the step; {outside}), and {MAX_INCONCLUSIVE} steps were \
             already inconclusive: counted as failed"
        ),
        Outcome::Confirmed => format!("shared stall of {seconds:.1} s, but it fails without it too ({outside})"),
    };
    if outcome == Outcome::Discounted {
        step.passed = true;
        step.reasons = vec![];
    }
    Some(stall(windows, stalled, (passes, slow_share_outside), outcome, note))
}

/// How long the windows `stalled` picks out of `windows` last, seconds, and their share of the step, %.
pub(super) fn span(windows: &Windows, stalled: &[bool]) -> (f64, f64) {
    let n = stalled.iter().filter(|s| **s).count() as f64;
    (n * windows.ms / 1000.0, n / stalled.len().max(1) as f64 * 100.0)
}

/// The `Stall` of the windows `stalled` picks out of `windows`; `outside`: whether the rest of the
/// step passes, and its slow share (`passes_outside`).
pub(super) fn stall(
    windows: &Windows,
    stalled: &[bool],
    outside: (bool, f64),
    outcome: Outcome,
    note: String,
) -> Stall {
    let inside = |values: &[u64]| sum_where(values, stalled, true);
    Stall {
        windows: stalled.iter().filter(|s| **s).count(),
        seconds: span(windows, stalled).0,
        at_s: stalled.iter().enumerate().filter(|(_, s)| **s).map(|(i, _)| i as f64 * windows.ms / 1000.0).collect(),
        requests: inside(&windows.count),
        slow: inside(&windows.slow),
        failures: inside(&windows.failed),
        dropped: inside(&windows.dropped),
        slow_share_outside: outside.1,
        passes_outside: outside.0,
        outcome,
        note,
    }
}

/// Reviews every step of every target of a run (`steps`: the verdicts per target, in the
/// summary's step order).
pub fn review(steps: &mut BTreeMap<String, Vec<StepResult>>, summary: &Summary, mark: &PassMark) {
    let generator = summary.load_generator.as_ref();
    let names: Vec<String> = steps.keys().cloned().collect();
    let step_count = steps.values().map(Vec::len).max().unwrap_or(0);
    let mut inconclusive: BTreeMap<String, usize> = BTreeMap::new();
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
            let so_far = inconclusive.entry(name.clone()).or_default();
            if let Some(step) = steps.get_mut(name).and_then(|s| s.get_mut(k)) {
                step.stall = review_step(step, target_windows, &stalled, mark, *so_far);
                *so_far += usize::from(step.inconclusive());
            }
        }
    }
    // Then stalls of one target alone, which need every step's verdict.
    for (name, target_steps) in steps.iter_mut() {
        let Some(target) = summary.targets.get(name) else { continue };
        let windows: Vec<Option<&Windows>> = target.steps.iter().map(|s| s.windows.as_ref()).collect();
        own::review(target_steps, &windows, mark);
    }
}

/// While a run goes on: would the stall review clear `target`'s failure at `step` (discounted or
/// inconclusive)? False without windows (k6) or without a stalled window.
pub fn explains_live(view: &LiveView, target: &str, step: usize, mark: &PassMark) -> bool {
    let all: Vec<&Windows> = view.windows.values().filter_map(|steps| steps.get(&step)).collect();
    let Some(own) = view.windows.get(target).and_then(|steps| steps.get(&step)) else { return false };
    let lag = view.lag_ms.get(&step).map_or(&[][..], Vec::as_slice);
    let stalled = stalled_windows(&all, lag, mark);
    stalled.iter().any(|s| *s) && passes_outside(own, &stalled, mark).0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::summary::{Figures, Latency, StepSummary};
    use crate::verdict::judge_step;

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
    fn a_short_stall_both_targets_saw_is_discounted_and_the_step_passes() {
        // 200 ms in which nearly every request of both targets was slow: 100 of 2,000 = p95 at the mark.
        let pg = windows(50, &[(20, 48), (21, 50), (22, 3)]);
        let mongo = windows(50, &[(20, 40), (21, 50)]);
        let stalled = stalled_windows(&[&pg, &mongo], &[], &PassMark::default());
        assert_eq!(stalled.iter().filter(|s| **s).count(), 2);
        let mut step = failed_step(62.0);
        assert!(!step.passed);
        let stall = review_step(&mut step, &pg, &stalled, &PassMark::default(), 0).expect("a stall");
        assert_eq!(stall.outcome, Outcome::Discounted, "{stall:?}");
        assert!(step.passed && step.reasons.is_empty());
        assert_eq!((stall.requests, stall.slow, stall.at_s.clone()), (100, 98, vec![2.0, 2.1]));
        assert!(stall.note.contains("discounted"), "{}", stall.note);
        assert!(stall.mattered());
    }

    #[test]
    fn a_target_slow_on_its_own_is_a_limit_not_a_stall() {
        // pg is slow again and again through the step, mongo in one window: pg still fails without it.
        let pg = windows(50, &(0..40).filter(|i| i % 5 < 2).map(|i| (i, 15)).collect::<Vec<_>>());
        let mongo = windows(50, &[(5, 30)]);
        let stalled = stalled_windows(&[&pg, &mongo], &[], &PassMark::default());
        assert_eq!(stalled.iter().filter(|s| **s).count(), 1, "only where both were slow");
        let mut step = failed_step(80.0);
        let stall = review_step(&mut step, &pg, &stalled, &PassMark::default(), 0).expect("noted");
        assert_eq!(stall.outcome, Outcome::Confirmed);
        assert!(!step.passed);
        assert!(stall.note.contains("fails without it too"), "{}", stall.note);
        assert!(!stall.mattered(), "it failed anyway: not worth a line in the report");
    }

    #[test]
    fn a_target_past_its_limit_is_no_witness_of_a_stall() {
        // mongo is slow nearly everywhere; pg's one slow burst is then pg's own.
        let mongo = windows(50, &(0..36).map(|i| (i, 50)).collect::<Vec<_>>());
        let pg = windows(50, &[(10, 50), (11, 50)]);
        let stalled = stalled_windows(&[&pg, &mongo], &[], &PassMark::default());
        assert!(stalled.iter().all(|s| !s), "{stalled:?}");
        let late = stalled_windows(&[&pg, &mongo], &[0.0; 40].map(|_| 30.0), &PassMark::default());
        assert!(late.iter().all(|s| *s), "the generator's lag still counts");
    }

    #[test]
    fn a_long_shared_stall_leaves_the_step_inconclusive_a_bounded_number_of_times() {
        let slow: Vec<(usize, u64)> = (10..16).map(|i| (i, 50)).collect();
        let (pg, mongo) = (windows(50, &slow), windows(50, &slow));
        let stalled = stalled_windows(&[&pg, &mongo], &[], &PassMark::default());
        let mut step = failed_step(120.0);
        let stall = review_step(&mut step, &pg, &stalled, &PassMark::default(), 0).expect("noted");
        assert_eq!(stall.outcome, Outcome::Inconclusive, "600 ms of 4 s is more than a tenth");
        assert!(!step.passed && stall.note.contains("inconclusive"), "{}", stall.note);
        let mut again = failed_step(120.0);
        let third = review_step(&mut again, &pg, &stalled, &PassMark::default(), MAX_INCONCLUSIVE).expect("noted");
        assert_eq!(third.outcome, Outcome::Confirmed, "no more than {MAX_INCONCLUSIVE} per run");
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
        let stall = review_step(&mut passing, &quiet, &stalled, &PassMark::default(), 0).expect("noted");
        assert!(passing.passed);
        assert_eq!(stall.outcome, Outcome::Noted);
    }

    #[test]
    fn the_live_view_does_not_count_a_stalled_step_as_a_failure() {
        let slow: Vec<(usize, u64)> = (10..16).map(|i| (i, 50)).collect();
        let mut view = LiveView::default();
        for target in ["pg", "mongo"] {
            view.windows.entry(target.into()).or_default().insert(3, windows(50, &slow));
        }
        assert!(explains_live(&view, "pg", 3, &PassMark::default()));
        view.windows.get_mut("mongo").expect("mongo").insert(3, windows(50, &[]));
        assert!(!explains_live(&view, "pg", 3, &PassMark::default()), "only pg was slow: its own limit");
        assert!(!explains_live(&view, "pg", 4, &PassMark::default()), "no windows, no stall");
    }
}
