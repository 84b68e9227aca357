//! When the staircase has said all it can, judged on the live figures of either generator: every
//! target has failed three steps in a row (`EarlyStop::observe`), and which targets to retire before
//! that (`EarlyStop::to_retire`). A step counts as failed by its own figures so far, or by the
//! iterations dropped while it ran, and only when no stall of the shared machine explains it
//! (`orders_bench_model::verdict::stall::explains_live`).

use orders_bench_model::verdict::PassMark;
use orders_bench_model::verdict::stall;
use orders_loadgen::live::LiveView;
use std::collections::{BTreeMap, BTreeSet};

/// Whether step `i` of `target` failed by its own figures so far (p95 or failed share at or above
/// the mark) and no stall of the whole machine explains it (`orders_bench_model::verdict::stall`).
fn step_failed(view: &LiveView, target: &str, i: usize, mark: &PassMark) -> bool {
    view.steps.get(target).and_then(|s| s.get(&i)).is_some_and(|s| {
        s.count > 0
            && (s.p95_ms.is_some_and(|p| p >= mark.p95_ms) || s.failed_rate >= mark.max_failed_rate)
            && !stall::explains_live(view, target, i, mark)
    })
}

/// Failed steps in a row after which a target is retired while another is still measured: one
/// more than the early stop needs. A stall of the shared machine that straddles a step boundary
/// can fail two short steps in a row (a probe's 1.5 s steps fail from 75 ms slow on each side),
/// and a target already retired could not show with later passes that it was a stall, so the
/// rule that takes a target off the staircase wants a third; a target past its limit fails every
/// step, so this costs one step of its load.
const RETIRE_AFTER: usize = 3;

/// Decides when the staircase has said all it can: every target has failed `STOP_AFTER` steps in
/// a row (a failed step followed by a pass was a moment, not a limit), and the last of those
/// failures has run in full. Also which targets to retire before that (`to_retire`).
#[derive(Debug, Default)]
pub struct EarlyStop {
    /// Per target, the last of its first `STOP_AFTER` failed steps in a row.
    pub first_failed: BTreeMap<String, usize>,
    /// Per target, its running count of dropped iterations when each step was first seen running:
    /// the difference between two steps' counts is what the earlier one dropped.
    dropped_at_start: BTreeMap<String, BTreeMap<usize, u64>>,
}

/// Failed steps in a row after which a target's limit counts as found. Three, as for retiring:
/// the live figures place a request in the step it was answered in, so a stall of one database
/// near the end of a step also fails the next step live (its backlog is answered there), while the
/// verdict, which places a request in the step it was due in, passes that next step. With two, a
/// 0.9 s autovacuum stall of PostgreSQL's stopped every `status` repeat of the demo before its limit.
const STOP_AFTER: usize = RETIRE_AFTER;

impl EarlyStop {
    /// Looks at the latest view; true means stop now.
    pub fn observe(&mut self, view: &LiveView, targets: &[String], mark: &PassMark) -> bool {
        let Some(current) = view.current_step() else { return false };
        for target in targets {
            let dropped = view.dropped.get(target).copied().unwrap_or(0);
            self.dropped_at_start.entry(target.clone()).or_default().entry(current).or_insert(dropped);
            if self.first_failed.contains_key(target) {
                continue;
            }
            // Only steps that are over are judged (the next one has begun).
            let failed = |i: usize| {
                step_failed(view, target, i, mark)
                    || (self.dropped_in(target, i) > mark.max_dropped && !stall::explains_live(view, target, i, mark))
            };
            let in_a_row = |last: usize| (last + 1 - STOP_AFTER..=last).all(failed);
            if let Some(last) = (STOP_AFTER - 1..current).find(|&i| in_a_row(i)) {
                self.first_failed.insert(target.clone(), last);
            }
        }
        let all_failed = targets.iter().all(|t| self.first_failed.contains_key(t));
        all_failed && self.first_failed.values().max().is_some_and(|last| current > *last)
    }

    /// Iterations `target` dropped while step `step` ran (up to the next step seen), as far as the
    /// views observed so far tell; 0 for a step not seen start and end. A stall of the machine drops
    /// iterations in one step, a target past its limit in every step: only the second is a limit.
    fn dropped_in(&self, target: &str, step: usize) -> u64 {
        let Some(counts) = self.dropped_at_start.get(target) else { return 0 };
        let start = counts.get(&step);
        let end = counts.range(step + 1..).next().map(|(_, count)| count);
        start.zip(end).map_or(0, |(start, end)| end.saturating_sub(*start))
    }

    /// The targets of `targets`, not in `retired` yet, whose last `RETIRE_AFTER` steps that are
    /// over all failed by their own figures (not by the running count of dropped iterations, which
    /// cannot say which step dropped them): their limit is known, so the native generator can stop
    /// loading them while the others are still measured (`round::drive`).
    pub fn to_retire(
        &self,
        view: &LiveView,
        targets: &[String],
        mark: &PassMark,
        retired: &BTreeSet<String>,
    ) -> Vec<String> {
        let Some(current) = view.current_step() else { return Vec::new() };
        targets
            .iter()
            .filter(|t| !retired.contains(*t))
            .filter(|t| {
                (RETIRE_AFTER..=current).any(|end| (end - RETIRE_AFTER..end).all(|i| step_failed(view, t, i, mark)))
            })
            .cloned()
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::k6::live::tests::view;

    #[test]
    fn the_run_stops_once_every_target_failed_three_steps_in_a_row() {
        let targets = vec!["pg".to_owned(), "mongo".to_owned()];
        let mark = PassMark::default();
        let mut stop = EarlyStop::default();
        let ok = (100, 5.0);
        let slow = (100, 90.0);
        assert!(!stop.observe(&view(&[ok, slow, slow], &[ok, ok, ok], 0), &targets, &mark), "step 2 still running");
        assert!(!stop.observe(&view(&[ok, slow, slow, slow], &[ok, ok, slow, ok], 0), &targets, &mark));
        assert_eq!(stop.first_failed.get("pg"), None, "pg's third failure still runs");
        assert!(!stop.observe(&view(&[ok, slow, slow, slow, slow], &[ok, ok, slow, slow, ok], 0), &targets, &mark));
        assert_eq!(stop.first_failed.get("pg"), Some(&3));
        assert_eq!(stop.first_failed.get("mongo"), None, "mongo failed two steps and passed the next: a moment");
        let mongo_fails = [ok, ok, slow, slow, ok, slow, slow, slow];
        let running = view(&[ok, slow, slow, slow, slow, slow, slow, slow], &mongo_fails, 0);
        assert!(!stop.observe(&running, &targets, &mark), "mongo's step 7 still running");
        let done =
            view(&[ok, slow, slow, slow, slow, slow, slow, slow, slow], &[mongo_fails.as_slice(), &[ok]].concat(), 0);
        assert!(stop.observe(&done, &targets, &mark), "mongo's third failure in a row (step 7) is over");
        assert_eq!(stop.first_failed.get("mongo"), Some(&7));
    }

    #[test]
    fn a_target_is_retired_after_three_failed_steps_in_a_row_that_are_over_and_only_once() {
        let targets = vec!["pg".to_owned(), "mongo".to_owned()];
        let mark = PassMark::default();
        let stop = EarlyStop::default();
        let (ok, slow) = ((100, 5.0), (100, 90.0));
        let mut retired = BTreeSet::new();
        let running = view(&[ok, slow, slow, slow], &[ok, ok, ok, ok], 0);
        assert!(stop.to_retire(&running, &targets, &mark, &retired).is_empty(), "pg's third failure still runs");
        let two = view(&[ok, slow, slow, ok, (3, 5.0)], &[ok, ok, ok, ok, (3, 5.0)], 0);
        assert!(stop.to_retire(&two, &targets, &mark, &retired).is_empty(), "two failures and a pass: a moment");
        let over = view(&[ok, slow, slow, slow, (3, 90.0)], &[ok, ok, ok, ok, (3, 5.0)], 0);
        assert_eq!(stop.to_retire(&over, &targets, &mark, &retired), ["pg"]);
        retired.insert("pg".to_owned());
        assert!(stop.to_retire(&over, &targets, &mark, &retired).is_empty(), "told once");
        // Dropped iterations alone (a running count) retire nobody.
        let dropping = view(&[ok, ok, ok, ok], &[ok, ok, ok, ok], 40);
        assert!(stop.to_retire(&dropping, &targets, &mark, &BTreeSet::new()).is_empty());
    }

    #[test]
    fn dropped_iterations_fail_a_step_and_three_such_steps_in_a_row_stop_the_run() {
        let targets = vec!["pg".to_owned()];
        let mark = PassMark::default();
        let mut stop = EarlyStop::default();
        let ok = (100, 5.0);
        // One step that dropped iterations (a moment: the next steps drop none) stops nothing.
        for (steps, dropped) in [(1, 0), (2, 40), (3, 40), (4, 40), (5, 40)] {
            assert!(!stop.observe(&view(&vec![ok; steps], &[], dropped), &targets, &mark), "step {steps}");
        }
        assert_eq!(stop.first_failed.get("pg"), None, "only the first step dropped iterations");
        // Steps 4, 5 and 6 (from 0) each drop some: the limit is found once step 6 is over.
        for (steps, dropped) in [(6, 50), (7, 60)] {
            assert!(!stop.observe(&view(&vec![ok; steps], &[], dropped), &targets, &mark), "step {steps}");
        }
        assert_eq!(stop.first_failed.get("pg"), None, "two steps in a row dropped iterations");
        assert!(stop.observe(&view(&[ok; 8], &[], 70), &targets, &mark), "step 6 (the third) is over");
        assert_eq!(stop.first_failed.get("pg"), Some(&6));
    }
}
