//! A stall of one target alone, told from its limit by what came after: a failed step whose slow
//! requests sit in a short run of the target's own windows (the rest of the step meets the pass
//! mark), followed by two complete steps at higher rates that the target passes; a target past its
//! limit does not pass higher rates. Such a step is marked **inconclusive**, within the same
//! `stall::MAX_INCONCLUSIVE` as shared stalls. It runs after `stall`'s review of the whole machine,
//! once every step's verdict is known. Where such stalls came from: docs/fairness.md, "How a step
//! is judged".

use super::{MAX_INCONCLUSIVE, passes_outside, slow_in, span, stall};
use crate::summary::Windows;
use crate::verdict::{Outcome, PassMark, Stall, StepResult};

/// At most this share of a step's windows may be the stall.
const MAX_STALL_SHARE: f64 = 0.25;
/// Complete steps after it the target must pass.
const PASSES_AFTER: usize = 2;

/// Reviews the steps of one target; `windows[k]`: its windows of step `k`, where the generator
/// recorded them.
pub fn review(steps: &mut [StepResult], windows: &[Option<&Windows>], mark: &PassMark) {
    for k in 0..steps.len() {
        let step = &steps[k];
        let open =
            step.stall.as_ref().is_none_or(|s| !matches!(s.outcome, Outcome::Discounted | Outcome::Inconclusive));
        if !(step.complete && !step.passed && open)
            || steps.iter().filter(|s| s.inconclusive()).count() >= MAX_INCONCLUSIVE
        {
            continue;
        }
        let after: Vec<&StepResult> = steps[k + 1..].iter().filter(|s| s.complete).take(PASSES_AFTER).collect();
        if after.len() < PASSES_AFTER || !after.iter().all(|s| s.passed && s.rate > step.rate) {
            continue;
        }
        let Some(own) = windows.get(k).copied().flatten() else { continue };
        if let Some(stall) = own_stall(own, mark) {
            steps[k].stall = Some(stall);
        }
    }
}

/// The stall of a step whose slow windows are few and whose rest passes; `None` otherwise.
fn own_stall(own: &Windows, mark: &PassMark) -> Option<Stall> {
    let slow: Vec<bool> = (0..own.count.len()).map(|i| slow_in(own, i)).collect();
    let n = slow.iter().filter(|s| **s).count();
    let (passes, slow_share_outside) = passes_outside(own, &slow, mark);
    if n == 0 || n as f64 > MAX_STALL_SHARE * slow.len() as f64 || !passes {
        return None;
    }
    let (seconds, share) = span(own, &slow);
    let note = format!(
        "this target alone was slow for {seconds:.1} s ({share:.0}% of the step; {:.1}% slow without it) and passed \
         the next {PASSES_AFTER} steps at higher rates: a stall of its own, not its limit; inconclusive, the search \
         steps over it",
        slow_share_outside * 100.0
    );
    Some(stall(own, &slow, (true, slow_share_outside), Outcome::Inconclusive, note))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verdict::max_passing_rate;

    fn step(index: usize, rate: u32, passed: bool) -> StepResult {
        StepResult {
            step: index,
            rate,
            offered: u64::from(rate) * 4,
            count: u64::from(rate) * 4,
            achieved_rate: f64::from(rate),
            failures: 0,
            failed_rate: 0.0,
            p50_ms: Some(1.0),
            p95_ms: Some(if passed { 2.0 } else { 160.0 }),
            p99_ms: None,
            dropped: 0,
            complete: true,
            passed,
            reasons: if passed { vec![] } else { vec!["p95 160.0 ms ≥ 50 ms".into()] },
            stall: None,
        }
    }

    /// 40 windows of 20 requests; all of them slow in windows `from..to`.
    fn windows(from: usize, to: usize) -> Windows {
        let mut w =
            Windows { ms: 100.0, count: vec![20; 40], slow: vec![0; 40], failed: vec![0; 40], dropped: vec![0; 40] };
        for i in from..to {
            w.slow[i] = 20;
        }
        w
    }

    #[test]
    fn a_short_stall_of_its_own_followed_by_two_passes_is_stepped_over() {
        let mut steps = vec![step(0, 100, true), step(1, 200, false), step(2, 300, true), step(3, 400, true)];
        let stalled = windows(10, 13);
        review(&mut steps, &[None, Some(&stalled), None, None], &PassMark::default());
        let stall = steps[1].stall.as_ref().expect("reviewed");
        assert_eq!((stall.outcome, stall.windows), (Outcome::Inconclusive, 3), "{stall:?}");
        assert!(!steps[1].passed, "not a pass: stepped over");
        assert_eq!(max_passing_rate(&steps).rate, 400);
    }

    #[test]
    fn a_limit_a_long_slowdown_or_too_few_passes_after_it_stand() {
        let mark = PassMark::default();
        let stalled = windows(10, 13);
        // Fails again after one pass: its limit.
        let mut limit = vec![step(0, 100, false), step(1, 200, true), step(2, 300, false)];
        review(&mut limit, &[Some(&stalled), None, None], &mark);
        assert!(limit[0].stall.is_none());
        // Slow in half of the step: an overload, not a stall.
        let mut long = vec![step(0, 100, false), step(1, 200, true), step(2, 300, true)];
        let overloaded = windows(0, 20);
        review(&mut long, &[Some(&overloaded), None, None], &mark);
        assert!(long[0].stall.is_none());
        // The run ended (or the target was retired) before two more steps.
        let mut last = vec![step(0, 100, true), step(1, 200, false), step(2, 300, true)];
        review(&mut last, &[None, Some(&stalled), None], &mark);
        assert!(last[1].stall.is_none());
        assert_eq!(max_passing_rate(&last).rate, 100);
    }

    #[test]
    fn at_most_max_inconclusive_steps_are_stepped_over() {
        let stalled = windows(5, 7);
        // Fails at 100, 400 and 700, passing the two steps after each.
        let mut steps: Vec<StepResult> = (0..9).map(|i| step(i, 100 * (i as u32 + 1), i % 3 != 0)).collect();
        let windows: Vec<Option<&Windows>> = (0..9).map(|_| Some(&stalled)).collect();
        review(&mut steps, &windows, &PassMark::default());
        let stepped_over: Vec<usize> = steps.iter().filter(|s| s.stall.is_some()).map(|s| s.step).collect();
        assert_eq!(stepped_over, [0, 3], "MAX_INCONCLUSIVE = {MAX_INCONCLUSIVE}");
        assert_eq!(max_passing_rate(&steps).first_failed_rate, Some(700), "the third stands");
    }
}
