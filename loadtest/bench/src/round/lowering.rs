//! The staircase moves down when a target fails its first rate. Such a repeat tells only that the
//! target's limit is below where the staircase starts (the probe placed it too high, or the
//! machine was slower than during the probe), and a rate of 0 in the median turns an answer into
//! "the other only". So the repeats after it climb the same staircase started `LOWER_STEPS` rates
//! lower, and once enough repeats measured every target, the one that could not is left out,
//! saying why (the report lists it with the rate it failed).

use orders_bench_model::result::{RatePlan, RepeatResult};

/// How many rates of the staircase's own growth the next repeats start lower.
pub const LOWER_STEPS: u32 = 3;

/// The staircase for the repeats after `repeat`, when a target failed its first rate and the
/// round still climbs the staircase that repeat did (a lower one is already in place otherwise),
/// with what to print.
pub fn after(current: &RatePlan, repeat: &RepeatResult) -> Option<(RatePlan, String)> {
    let failed = repeat.failed_first_rate();
    let climbed = repeat.plan.unwrap_or(*current);
    if failed.is_empty() || climbed.start_rate != current.start_rate {
        return None;
    }
    let lower = current.lowered(LOWER_STEPS);
    (lower.start_rate < current.start_rate).then(|| {
        let words = format!(
            "{} failed the first rate ({} req/s) in repeat {}: any repeat after it starts {LOWER_STEPS} rates lower, at {} req/s",
            failed.join(" and "),
            current.start_rate,
            repeat.index,
            lower.start_rate
        );
        (lower, words)
    })
}

/// Whether fewer than `wanted` counted repeats measured every target (none failed its first rate),
/// in words: a reason for one more repeat.
pub fn unmeasured(repeats: &[RepeatResult], wanted: u32) -> Option<String> {
    if measured(repeats) >= wanted as usize {
        return None;
    }
    let words: Vec<String> = repeats
        .iter()
        .filter(|r| r.counted() && !r.failed_first_rate().is_empty())
        .map(|r| format!("{} failed the first rate of repeat {}", r.failed_first_rate().join(" and "), r.index))
        .collect();
    (!words.is_empty()).then(|| words.join("; "))
}

/// Leaves out the repeats in which a target failed the first rate, when at least `wanted` others
/// measured every target; otherwise they stay, the failed target counted at that first rate.
pub fn supersede(repeats: &mut [RepeatResult], wanted: u32) {
    if measured(repeats) < wanted as usize {
        return;
    }
    for repeat in repeats.iter_mut().filter(|r| r.counted()) {
        let failed = repeat.failed_first_rate();
        if failed.is_empty() {
            continue;
        }
        let first = repeat.plan.map(|p| p.start_rate).unwrap_or_default();
        repeat.superseded = Some(format!(
            "{} failed its first rate ({first} req/s), so it measured only that the limit is below it; \
             repeats on a staircase that started lower measured it",
            failed.join(" and ")
        ));
    }
}

fn measured(repeats: &[RepeatResult]) -> usize {
    repeats.iter().filter(|r| r.counted() && r.failed_first_rate().is_empty()).count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use orders_bench_model::result::TargetResult;
    use orders_bench_model::verdict::MaxRate;
    use std::collections::BTreeMap;
    use std::time::Duration;

    fn plan(start_rate: u32) -> RatePlan {
        RatePlan { start_rate, step: 1, max_rate: 10_000, step_seconds: Duration::from_secs(3), factor: Some(1.2) }
    }

    /// A repeat on `plan(start)` whose targets reached `rates` (0: failed the first rate).
    fn repeat(index: u32, start: u32, rates: [u32; 2]) -> RepeatResult {
        let mut repeat = crate::round::report_tests::repeat(index, "read", true);
        repeat.plan = Some(plan(start));
        repeat.targets = BTreeMap::from_iter(["pg", "mongo"].into_iter().zip(rates).map(|(name, rate)| {
            let target = TargetResult {
                max_rate: MaxRate { rate, first_failed_rate: Some(if rate == 0 { start } else { rate * 2 }) },
                ..repeat.targets.values().next().expect("a target").clone()
            };
            (name.to_owned(), target)
        }));
        repeat
    }

    #[test]
    fn a_target_that_fails_the_first_rate_moves_the_staircase_down_three_of_its_steps_once() {
        let failed = repeat(1, 2700, [4000, 0]);
        let (lower, words) = after(&plan(2700), &failed).expect("lowered");
        assert_eq!(lower.start_rate, 1600, "2700 / 1.2^3 = 1562, two digits");
        assert_eq!((lower.max_rate, lower.factor), (10_000, Some(1.2)), "same top, same growth");
        assert!(words.contains("mongo failed the first rate (2700 req/s) in repeat 1"), "{words}");
        // Already lowered after that repeat: not twice for the same staircase.
        assert_eq!(after(&lower, &failed), None);
        // Failing the lowered staircase's first rate lowers it again.
        assert_eq!(after(&lower, &repeat(2, 1600, [3000, 0])).map(|(p, _)| p.start_rate), Some(930));
        assert_eq!(after(&plan(2700), &repeat(1, 2700, [4000, 3000])), None);
    }

    #[test]
    fn the_failed_repeat_is_left_out_only_once_enough_others_measured_both() {
        let mut repeats =
            vec![repeat(1, 2700, [4000, 0]), repeat(2, 1600, [3900, 2100]), repeat(3, 1600, [4100, 2000])];
        assert!(unmeasured(&repeats, 3).expect("one short").contains("mongo failed the first rate of repeat 1"));
        supersede(&mut repeats, 3);
        assert!(repeats.iter().all(|r| r.superseded.is_none()), "two measured of three: it stays");
        repeats.push(repeat(4, 1600, [4000, 2200]));
        assert_eq!(unmeasured(&repeats, 3), None);
        supersede(&mut repeats, 3);
        let why = repeats[0].left_out().expect("left out");
        assert!(why.contains("mongo failed its first rate (2700 req/s)"), "{why}");
        assert!(repeats[1..].iter().all(RepeatResult::counted));
    }
}
