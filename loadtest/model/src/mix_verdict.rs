//! How sure the answer for one mix is. A repeat that stalls of the shared machine stopped before
//! either database failed is left out (it measured neither). Each target's repeats must lie within `TOLERANCE` of
//! their median (else the row is **unstable**, and says whose repeats spread how far); a winner is
//! named only when the difference is larger than the spread: every repeat of one target above
//! every repeat of the other, by the maximum passing rate, and not contradicted by the second
//! estimate (the CPU capacity of `capacity`, where both databases have one). Otherwise there is no
//! clear winner, in words.

use super::capacity;
use super::result::RoundResult;
use crate::stats::median;
use crate::target::TargetInfo;
use serde::Serialize;

/// Repeats within ±25% of their median count as agreeing.
pub const TOLERANCE: f64 = 0.25;

/// Medians closer than this (relative), or than one step of the staircase, name no winner,
/// whatever the spread: between runs on the same machine a median moves by a step of the
/// staircase and by about this much (docs/fairness.md).
pub const MIN_DIFFERENCE: f64 = 0.15;

/// The least relative difference of the medians that names a winner in `round`: `MIN_DIFFERENCE`,
/// or one step of its staircase where the steps are coarser (a rate one step higher is within
/// what a rerun moves).
pub fn least_difference(round: &RoundResult) -> f64 {
    let rates = round.plan.rates();
    let coarsest = rates.windows(2).map(|w| f64::from(w[1]) / f64::from(w[0].max(1)) - 1.0).fold(0.0, f64::max);
    MIN_DIFFERENCE.max(coarsest)
}

/// Every value within `TOLERANCE` of the values' median (true for none or one).
pub fn within_tolerance(values: &[f64]) -> bool {
    let Some(median) = median(values) else { return true };
    median > 0.0 && values.iter().all(|v| (v - median).abs() <= TOLERANCE * median + 1e-9)
}

/// The target whose every value lies above every value of every other, if one does (`None` also
/// when a target has no value).
fn clear_leader(values: &[(TargetInfo, Vec<f64>)]) -> Option<&TargetInfo> {
    if values.len() < 2 {
        return None;
    }
    values
        .iter()
        .find(|(t, v)| values.iter().filter(|(o, _)| o.name != t.name).all(|(_, other)| crate::stats::above(v, other)))
        .map(|(t, _)| t)
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MixVerdict {
    pub winner: Option<TargetInfo>,
    /// Every target's repeats within `TOLERANCE` of their median.
    pub stable: bool,
    /// Why the row is unstable or has no clear winner, in words.
    pub reasons: Vec<String>,
    /// Per target, in the round's order: the repeats' maximum passing rates and CPU capacities.
    pub rates: Vec<(TargetInfo, Vec<f64>)>,
    pub capacities: Vec<(TargetInfo, Vec<f64>)>,
}

impl MixVerdict {
    /// "PostgreSQL", "MongoDB" or "no clear winner", and "(unstable)" when it is.
    pub fn headline(&self) -> String {
        let who = self.winner.as_ref().map_or("no clear winner".to_owned(), |t| t.label.clone());
        if self.stable { who } else { format!("{who} (unstable)") }
    }

    /// Target `name`'s repeats' maximum passing rates.
    pub fn rates_of(&self, name: &str) -> &[f64] {
        self.rates.iter().find(|(t, _)| t.name == name).map_or(&[], |(_, v)| v.as_slice())
    }

    /// Target `name`'s repeats' CPU capacities.
    pub fn capacities_of(&self, name: &str) -> &[f64] {
        self.capacities.iter().find(|(t, _)| t.name == name).map_or(&[], |(_, v)| v.as_slice())
    }
}

fn range_text(values: &[f64]) -> String {
    let low = values.iter().copied().fold(f64::INFINITY, f64::min);
    let high = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if low == high { format!("{low:.0}") } else { format!("{low:.0}–{high:.0}") }
}

/// "PostgreSQL 1500–1600, MongoDB 1100": every target's range.
fn ranges(rates: &[(TargetInfo, Vec<f64>)]) -> String {
    rates.iter().map(|(t, runs)| format!("{} {}", t.label, range_text(runs))).collect::<Vec<_>>().join(", ")
}

pub fn judge(round: &RoundResult) -> MixVerdict {
    let counted: Vec<_> = round.repeats.iter().filter(|r| !r.spoiled_by_stalls()).collect();
    let targets = round.targets();
    let rates: Vec<(TargetInfo, Vec<f64>)> = targets
        .iter()
        .map(|t| {
            let runs = counted.iter().filter_map(|r| r.targets.get(&t.name)).map(|x| f64::from(x.max_rate.rate));
            (t.clone(), runs.collect())
        })
        .collect();
    let capacities: Vec<(TargetInfo, Vec<f64>)> = targets
        .iter()
        .map(|t| (t.clone(), counted.iter().filter_map(|r| capacity::of_repeat(r, t)).map(|c| c.rate).collect()))
        .collect();
    let mut reasons = Vec::new();
    let spoiled: Vec<String> =
        round.repeats.iter().filter(|r| r.spoiled_by_stalls()).map(|r| r.index.to_string()).collect();
    if !spoiled.is_empty() {
        reasons.push(format!(
            "repeat {} left out: stalls of the shared machine stopped it before either database failed",
            spoiled.join(", ")
        ));
    }
    for (target, runs) in &rates {
        if !within_tolerance(runs) {
            reasons.push(format!(
                "{}'s repeats reached {} req/s, more than ±{:.0}% around their median",
                target.label,
                range_text(runs),
                TOLERANCE * 100.0
            ));
        }
    }
    let stable = reasons.iter().all(|r| r.contains("left out"));
    let by_rate = clear_leader(&rates);
    let by_capacity = clear_leader(&capacities);
    let all_capacities = capacities.iter().all(|(_, c)| !c.is_empty());
    let least = least_difference(round);
    // The leader's median against the best of the others'.
    let close = by_rate.is_some_and(|leader| {
        let leading = rates.iter().find(|(t, _)| t.name == leader.name).and_then(|(_, v)| median(v));
        let next = rates.iter().filter(|(t, _)| t.name != leader.name).filter_map(|(_, v)| median(v)).reduce(f64::max);
        leading.zip(next).is_some_and(|(high, low)| high > 0.0 && high / low.max(1e-9) < 1.0 + least - 1e-9)
    });
    let winner = match (by_rate, all_capacities, by_capacity) {
        (Some(_), _, _) if close => {
            reasons.push(format!("the medians differ by less than {:.0}% ({} req/s)", least * 100.0, ranges(&rates)));
            None
        }
        (None, _, _) => {
            reasons.push(format!("the maximum passing rates overlap ({} req/s)", ranges(&rates)));
            None
        }
        (Some(leader), true, Some(other)) if other.name != leader.name => {
            reasons.push(format!(
                "the maximum passing rates favour {} but the CPU capacities {}",
                leader.label, other.label
            ));
            None
        }
        (Some(leader), _, _) => Some(leader.clone()),
    };
    MixVerdict { winner, stable, reasons, rates, capacities }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeats_agree_within_a_quarter_of_their_median() {
        assert!(within_tolerance(&[1800.0, 1800.0, 1400.0]), "1,400 is 22% below 1,800");
        assert!(!within_tolerance(&[1400.0, 1400.0, 850.0]), "850 is 39% below");
        assert!(!within_tolerance(&[2300.0, 2300.0, 3000.0]), "3,000 is 30% above");
        assert!(within_tolerance(&[]) && within_tolerance(&[5.0]));
        assert!(!within_tolerance(&[0.0, 0.0]), "a median of 0 says nothing");
    }

    fn leader(values: &[&[f64]]) -> Option<String> {
        let named: Vec<(TargetInfo, Vec<f64>)> =
            values.iter().enumerate().map(|(i, v)| (TargetInfo::unnamed(&format!("t{i}")), v.to_vec())).collect();
        clear_leader(&named).map(|t| t.name.clone())
    }

    #[test]
    fn a_leader_needs_every_repeat_above_every_repeat_of_every_other() {
        assert_eq!(leader(&[&[8700.0, 8700.0], &[2300.0, 3000.0]]).as_deref(), Some("t0"));
        assert_eq!(leader(&[&[1200.0, 1400.0], &[1300.0]]), None, "overlapping ranges");
        assert_eq!(leader(&[&[900.0], &[1000.0, 1200.0]]).as_deref(), Some("t1"));
        assert_eq!(leader(&[&[], &[1.0]]), None);
        assert_eq!(leader(&[&[900.0], &[1000.0, 1200.0], &[1100.0]]), None, "above one, not all");
        assert_eq!(leader(&[&[900.0], &[1300.0, 1200.0], &[1100.0]]).as_deref(), Some("t1"));
    }
}
