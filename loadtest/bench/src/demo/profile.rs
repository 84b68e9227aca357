//! The demo's profile, the one place to retune it: data size, repeats, how long each rate is held,
//! and how every mix's staircase of rates is chosen.
//!
//! Where the databases give up depends on the machine, their budgets and the mix, by a factor of
//! ten and more, so the full demo does not guess: for every mix a short **probe** (one quick run
//! of its own up a steep staircase, 1.5 s per rate, each ×1.3 the one before, stopped once both
//! targets have failed) finds roughly where each target gives up (its *knee*: between its last
//! passing and its first failing rate). The measured staircase then runs from a little below the
//! slower target's knee to a good way above the faster one's in `STEPS` rates that grow by the same
//! factor, so both knees are found with the same relative resolution, and every repeat climbs the
//! same staircase. `--quick` skips the probe and climbs one wide staircase once.
//!
//! Time (two cores, 100,000 orders): a probe round takes 31–47 s (26–42 s with ×1.6 steps); a repeat holds at most `STEPS`
//! rates of 3.5 s and stops three rates after both targets failed; with reseeding and diagnostics a mix
//! takes about three minutes in full, 30 s with `--quick` (measured under the default budgets: the
//! whole demo in 11 min 52 s, `--quick` in 1 min 50 s, builds not counted).

use orders_bench_model::result::{RatePlan, RoundResult, two_digits};
use orders_bench_model::verdict::StepResult;
use std::time::Duration;

/// Rates per measured staircase. 12 (from 14): on a machine whose CPU per request was 1.8× the one
/// this was first tuned on, 14 made the demo take 16 min 11 s; the growth per step stays capped at
/// `MAX_FACTOR`, and a winner needs more than one step's difference anyway.
const STEPS: u32 = 12;
/// The staircase starts this far below the slower target's knee and ends this far above the
/// faster one's.
const BELOW: f64 = 0.6;
const ABOVE: f64 = 1.6;
/// Growth per step is kept within these bounds, whatever the knees.
const MIN_FACTOR: f64 = 1.06;
const MAX_FACTOR: f64 = 1.2;

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Staircase {
    /// One staircase for every mix.
    Fixed(RatePlan),
    /// A probe first, then a staircase placed around the knees it found, held `step_seconds`.
    Probed { probe: RatePlan, step_seconds: Duration },
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Profile {
    pub orders: u64,
    pub repeats: u32,
    /// Repeats a round may add while a target's repeats disagree (`RoundSpec::extra_repeats`).
    pub extra_repeats: u32,
    /// The whole demo's time: a round adds a repeat only if it fits.
    pub time_budget: Duration,
    pub staircase: Staircase,
    /// The round's mix before every repeat's staircase, unjudged (`RoundSpec::lead_in`).
    pub lead_in: Duration,
}

/// `orders-bench demo`: about twelve minutes on two cores.
pub fn full() -> Profile {
    Profile {
        orders: 100_000,
        repeats: 3,
        extra_repeats: 2,
        time_budget: Duration::from_secs(14 * 60),
        staircase: Staircase::Probed {
            // ×1.3 (from ×1.6): a knee between two rates ×1.6 apart is known only within ±26%, and
            // both targets' knees fell between 420 and 670 in one probe while PostgreSQL then
            // passed the whole staircase placed around them (≥ 860) in one repeat of three and
            // 660 in the others (docs/fairness.md, "the probe's resolution").
            probe: RatePlan {
                start_rate: 100,
                step: 1,
                max_rate: 100_000,
                step_seconds: Duration::from_millis(1500),
                factor: Some(1.3),
            },
            // 3.5 s (from 4): with 12 rates, what kept the whole demo under 15 minutes on a
            // machine with 1.8× the CPU per request (docs/fairness.md, "step length").
            step_seconds: Duration::from_millis(3500),
        },
        lead_in: crate::round::lead_in::LENGTH,
    }
}

/// `orders-bench demo --quick`: about three minutes.
pub fn quick() -> Profile {
    Profile {
        orders: 2_000,
        repeats: 1,
        extra_repeats: 0,
        time_budget: Duration::from_secs(5 * 60),
        staircase: Staircase::Fixed(RatePlan {
            // 200 (from 100): the lowest limit of the quick demo's debug services in CI was 380
            // req/s (MongoDB's insert), so the steps below 200 only cost three steps a mix.
            start_rate: 200,
            step: 1,
            max_rate: 100_000,
            step_seconds: Duration::from_secs(2),
            factor: Some(1.3),
        }),
        // 2,000 orders span about 160 pages: their transient after a checkpoint is over sooner.
        lead_in: Duration::from_secs(2),
    }
}

impl Profile {
    /// The same with `--step-duration` (the measured staircase's hold time).
    pub fn with_step_seconds(mut self, seconds: Duration) -> Self {
        match &mut self.staircase {
            Staircase::Fixed(plan) => plan.step_seconds = seconds,
            Staircase::Probed { step_seconds, .. } => *step_seconds = seconds,
        }
        self
    }
}

/// Where a target of a probe gave up: the geometric middle of the rate of its first real failure
/// and the pass before it (half its first rate when that failed, the highest rate when none did).
/// A probe's steps are short, so one stall can fail a step the target then passes again at higher
/// rates: a failure followed only by passes (two, or one where the probe ended) is taken for such
/// a stall and stepped over. (A pass followed by another failure is not enough: just beyond its
/// limit a target may still pass a 1.5 s step before its queue has grown.)
pub fn knee(round: &RoundResult, target: &str) -> Option<f64> {
    knee_of(&round.repeats.first()?.targets.get(target)?.steps)
}

fn knee_of(steps: &[StepResult]) -> Option<f64> {
    let mut complete: Vec<&StepResult> = steps.iter().filter(|s| s.complete).collect();
    complete.sort_by_key(|s| s.rate);
    let stall = |i: usize| {
        let next = &complete[i + 1..(i + 3).min(complete.len())];
        !next.is_empty() && next.iter().all(|s| s.passed)
    };
    let failure = (0..complete.len()).find(|&i| !complete[i].passed && !stall(i));
    let last_pass = |before: usize| complete[..before].iter().rev().find(|s| s.passed).map(|s| s.rate);
    Some(match failure {
        Some(i) => match last_pass(i) {
            Some(passed) => (f64::from(passed) * f64::from(complete[i].rate)).sqrt(),
            None => f64::from(complete[i].rate) / 2.0,
        },
        None => f64::from(last_pass(complete.len())?),
    })
}

/// The measured staircase around the probe's knees (at least one).
pub fn around(knees: &[f64], step_seconds: Duration) -> RatePlan {
    let low = knees.iter().copied().fold(f64::INFINITY, f64::min).max(10.0);
    let high = knees.iter().copied().fold(0.0, f64::max).max(low);
    let (start, end) = (low * BELOW, high * ABOVE);
    let factor = (end / start).powf(1.0 / f64::from(STEPS - 1)).clamp(MIN_FACTOR, MAX_FACTOR);
    let start_rate = two_digits(start).max(1);
    // Far enough for STEPS rates whatever the rounding; then cut at the last of them.
    let beyond = (f64::from(start_rate) * factor.powi(STEPS as i32) * 2.0).min(f64::from(u32::MAX / 4)) as u32;
    let plan = RatePlan { start_rate, step: 1, max_rate: beyond, step_seconds, factor: Some(factor) };
    let max_rate = plan.rates().get(STEPS as usize - 1).copied().unwrap_or(start_rate);
    RatePlan { max_rate, ..plan }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(rate: u32, passed: bool) -> StepResult {
        StepResult {
            step: 0,
            rate,
            offered: 0,
            count: 0,
            achieved_rate: 0.0,
            failures: 0,
            failed_rate: 0.0,
            p50_ms: None,
            p95_ms: None,
            p99_ms: None,
            dropped: 0,
            complete: true,
            passed,
            reasons: Vec::new(),
            stall: None,
        }
    }

    #[test]
    fn a_probe_step_failed_by_a_stall_and_passed_above_does_not_place_the_knee() {
        let steps = [step(420, true), step(670, false), step(1100, true), step(1800, true), step(2900, false)];
        let knee = knee_of(&steps).expect("knee");
        assert!((knee - (1800.0f64 * 2900.0).sqrt()).abs() < 1e-9, "{knee}");
        // A failure passed again at the probe's last step was a stall too.
        let at_the_end = [step(1100, true), step(1800, false), step(2900, true)];
        assert_eq!(knee_of(&at_the_end), Some(2900.0));
        // One lucky pass just beyond the limit does not move it.
        let lucky = [step(670, true), step(1100, false), step(1800, true), step(2900, false)];
        let knee = knee_of(&lucky).expect("knee");
        assert!((knee - (670.0f64 * 1100.0).sqrt()).abs() < 1e-9, "{knee}");
        assert_eq!(knee_of(&[step(100, false), step(160, false)]), Some(50.0));
        assert_eq!(knee_of(&[step(100, true), step(160, true)]), Some(160.0));
        let mut unfinished = step(260, false);
        unfinished.complete = false;
        assert_eq!(knee_of(&[step(100, true), unfinished]), Some(100.0));
    }

    #[test]
    fn the_staircase_spans_both_knees_in_ten_steps() {
        let plan = around(&[1500.0, 3800.0], Duration::from_secs(3));
        let rates = plan.rates();
        assert_eq!(rates.len(), STEPS as usize, "{rates:?}");
        assert_eq!(rates[0], 900, "0.6 of the slower knee");
        assert!(*rates.last().expect("rates") >= 5600, "1.6 of the faster knee: {rates:?}");
        assert_eq!(plan.step_seconds, Duration::from_secs(3));
    }

    #[test]
    fn close_knees_still_get_a_step_of_six_percent_and_far_ones_at_most_35() {
        let close = around(&[1000.0, 1000.0], Duration::from_secs(3)).rates();
        assert!(close.windows(2).all(|w| f64::from(w[1]) / f64::from(w[0]) >= 1.04), "{close:?}");
        let far = around(&[100.0, 20_000.0], Duration::from_secs(3)).rates();
        assert_eq!(far.len(), STEPS as usize);
        assert!(far.windows(2).all(|w| f64::from(w[1]) / f64::from(w[0]) <= 1.4), "{far:?}");
    }

    #[test]
    fn the_full_demo_probes_and_the_quick_one_climbs_once() {
        assert!(matches!(full().staircase, Staircase::Probed { .. }));
        assert_eq!((full().orders, full().repeats), (100_000, 3));
        let quick = quick().with_step_seconds(Duration::from_secs(1));
        assert_eq!((quick.orders, quick.repeats), (2_000, 1));
        assert!(matches!(quick.staircase, Staircase::Fixed(plan) if plan.step_seconds == Duration::from_secs(1)));
    }
}
