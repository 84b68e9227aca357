//! The demo's regime check: before its mixes, reads at a few low rates on both targets at once,
//! under the run's CPU budget and under a quota of every core (the reference), and what the budget
//! changed in each database's CPU per request. The rule that reads it lives here too: the budget
//! favours neither engine while MongoDB ÷ PostgreSQL moves by at most `HOLDS_WITHIN`.

use crate::stats::median;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One database at one step, the median over the repeats.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Cost {
    pub cpu_us_per_request: Option<f64>,
    /// Cores used (none without a CPU reading).
    pub cores: Option<f64>,
    /// `cores` ÷ the budget's cores (none without a budget).
    pub budget_share: Option<f64>,
    /// The share of quota periods the kernel throttled (none without a budget).
    pub throttled_share: Option<f64>,
    /// Context switches of its threads per request: waits it chose, and preemptions.
    pub voluntary_per_request: Option<f64>,
    pub involuntary_per_request: Option<f64>,
}

/// How far the budget may move MongoDB ÷ PostgreSQL of the CPU per request and still favour
/// neither engine.
pub const HOLDS_WITHIN: f64 = 0.10;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RegimeCheck {
    /// The run's CPU budget per database, in cores, and the reference's quota (every core).
    pub budget_cores: f64,
    pub reference_cores: f64,
    pub mix: String,
    /// One row per offered rate, lowest first.
    pub steps: Vec<RegimeStep>,
    /// Folder of the check's two rounds, relative to the run's folder.
    pub dir: String,
}

/// Each target's database cost at one rate (keyed by target name), under the budget and with every core.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RegimeStep {
    pub rate: u32,
    pub budget: BTreeMap<String, Cost>,
    pub reference: BTreeMap<String, Cost>,
}

fn us(costs: &BTreeMap<String, Cost>, name: &str) -> Option<f64> {
    costs.get(name)?.cpu_us_per_request.filter(|u| *u > 0.0)
}

impl RegimeCheck {
    /// Target `name`'s CPU per request under the budget and with every core: the medians over the
    /// rates where both were measured.
    pub fn costs(&self, name: &str) -> Option<(f64, f64)> {
        let pairs: Vec<(f64, f64)> =
            self.steps.iter().filter_map(|s| Some((us(&s.budget, name)?, us(&s.reference, name)?))).collect();
        let budget = median(&pairs.iter().map(|p| p.0).collect::<Vec<_>>())?;
        Some((budget, median(&pairs.iter().map(|p| p.1).collect::<Vec<_>>())?))
    }

    /// Target `name`'s CPU per request under the budget ÷ with every core, the median over the rates.
    pub fn change(&self, name: &str) -> Option<f64> {
        median(
            &self.steps.iter().filter_map(|s| Some(us(&s.budget, name)? / us(&s.reference, name)?)).collect::<Vec<_>>(),
        )
    }

    /// The share of quota periods the kernel throttled target `name`'s database under the budget.
    pub fn throttled(&self, name: &str) -> Option<f64> {
        median(&self.steps.iter().filter_map(|s| s.budget.get(name)?.throttled_share).collect::<Vec<_>>())
    }

    /// MongoDB ÷ PostgreSQL of the CPU per request under the budget, ÷ the same with every core: the
    /// median over the rates. Above 1, the budget makes MongoDB pay more than PostgreSQL.
    pub fn shift(&self) -> Option<f64> {
        let at = |s: &RegimeStep| {
            let budget = us(&s.budget, "mongo")? / us(&s.budget, "pg")?;
            Some(budget / (us(&s.reference, "mongo")? / us(&s.reference, "pg")?))
        };
        median(&self.steps.iter().filter_map(at).collect::<Vec<_>>())
    }

    /// Whether the budget favours neither engine (`None` when the check measured too little).
    pub fn holds(&self) -> Option<bool> {
        Some((self.shift()? - 1.0).abs() <= HOLDS_WITHIN)
    }

    /// Whether a mix's answer, PostgreSQL's maximum rate ÷ MongoDB's `ratio` under the budget,
    /// would change sides with every core: the shift moves the ratio to `ratio / shift`.
    pub fn would_flip(&self, ratio: f64) -> bool {
        match self.shift() {
            Some(shift) if ratio.is_finite() && ratio > 0.0 => (ratio > 1.0) != (ratio / shift > 1.0),
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn costs(pg: f64, mongo: f64, throttled: f64) -> BTreeMap<String, Cost> {
        let cost = |us: f64| Cost { cpu_us_per_request: Some(us), throttled_share: Some(throttled), ..Cost::default() };
        BTreeMap::from([("pg".to_owned(), cost(pg)), ("mongo".to_owned(), cost(mongo))])
    }

    /// A rate, and PostgreSQL's and MongoDB's µs a request under the budget, then with every core.
    type Row = (u32, (f64, f64), (f64, f64));

    fn check(steps: &[Row]) -> RegimeCheck {
        RegimeCheck {
            budget_cores: 0.25,
            reference_cores: 2.0,
            mix: "read".into(),
            steps: steps
                .iter()
                .map(|&(rate, b, r)| RegimeStep { rate, budget: costs(b.0, b.1, 0.2), reference: costs(r.0, r.1, 0.0) })
                .collect(),
            dir: "regime".into(),
        }
    }

    #[test]
    fn a_budget_that_moves_both_engines_alike_favours_neither() {
        // Both 20% dearer under the budget: the ratio does not move.
        let alike = check(&[(150, (60.0, 120.0), (50.0, 100.0)), (300, (48.0, 96.0), (40.0, 80.0))]);
        assert!((alike.shift().expect("shift") - 1.0).abs() < 1e-9);
        assert_eq!(alike.holds(), Some(true));
        assert!((alike.change("pg").expect("pg") - 1.2).abs() < 1e-9);
        assert_eq!(alike.costs("mongo"), Some((108.0, 90.0)));
        assert_eq!(alike.throttled("pg"), Some(0.2));
        assert!(!alike.would_flip(1.05), "no shift, no flip");
    }

    #[test]
    fn a_budget_that_makes_mongodb_pay_is_named_and_flips_the_close_answers() {
        // MongoDB 30% dearer under the budget, PostgreSQL unchanged.
        let mongo_pays = check(&[(150, (50.0, 130.0), (50.0, 100.0)), (300, (40.0, 104.0), (40.0, 80.0))]);
        let shift = mongo_pays.shift().expect("shift");
        assert!((shift - 1.3).abs() < 1e-9, "{shift}");
        assert_eq!(mongo_pays.holds(), Some(false));
        assert!(mongo_pays.would_flip(1.2), "PostgreSQL 1.2x under the budget is 0.92x with every core");
        assert!(!mongo_pays.would_flip(1.5), "1.5x stays PostgreSQL's");
        assert!(!mongo_pays.would_flip(0.8), "MongoDB's lead only grows");
    }

    #[test]
    fn a_check_that_measured_nothing_says_nothing() {
        let empty = check(&[]);
        assert_eq!((empty.shift(), empty.holds(), empty.change("pg")), (None, None, None));
        assert!(!empty.would_flip(1.01));
    }
}
