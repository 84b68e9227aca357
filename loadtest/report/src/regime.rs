//! The report's statement of the regime: from the demo's regime check, per database its CPU per
//! read under the budget against a quota of every core and how often the kernel throttled it, and
//! whether the budget moved MongoDB ÷ PostgreSQL by more than the rule allows; where it did, the
//! mixes whose answer would change sides with every core.

use crate::doc::Block;
use orders_bench_model::regime::HOLDS_WITHIN;
use orders_bench_model::result::RoundResult;

/// PostgreSQL's maximum rate ÷ MongoDB's, the medians, when both are figures.
fn ratio(round: &RoundResult) -> Option<f64> {
    let (pg, mongo) = (round.max_rate.get("pg")?.median, round.max_rate.get("mongo")?.median);
    (pg > 0.0 && mongo > 0.0).then(|| pg / mongo)
}

/// The paragraph, when the rounds carry a check.
pub fn paragraph(rounds: &[&RoundResult]) -> Option<Block> {
    let check = rounds.iter().find_map(|r| r.regime.as_ref())?;
    let rates: Vec<String> = check.steps.iter().map(|s| s.rate.to_string()).collect();
    let each: Vec<String> = rounds
        .first()
        .map(|r| r.targets())
        .unwrap_or_default()
        .iter()
        .filter_map(|t| {
            let (budget, reference) = check.costs(&t.name)?;
            let throttled = check
                .throttled(&t.name)
                .map_or(String::new(), |s| format!(", throttled in {:.0}% of its periods", s * 100.0));
            Some(format!(
                "{}'s database {budget:.0} µs a read against {reference:.0} ({:.2}×{throttled})",
                t.label,
                budget / reference
            ))
        })
        .collect();
    let verdict = match check.shift() {
        None => "too little was measured to say whether the budget favours one engine".to_owned(),
        Some(shift) if check.holds() == Some(true) => format!(
            "MongoDB ÷ PostgreSQL of the CPU per read is {shift:.2}× under the budget what it is with every core: within \
             ±{:.0}%, so at these rates the budget favours neither engine",
            HOLDS_WITHIN * 100.0
        ),
        Some(shift) => {
            let who = if shift > 1.0 { "MongoDB" } else { "PostgreSQL" };
            let flips: Vec<&str> = rounds
                .iter()
                .filter(|r| ratio(r).is_some_and(|x| check.would_flip(x)))
                .map(|r| r.name.as_str())
                .collect();
            format!(
                "MongoDB ÷ PostgreSQL of the CPU per read is {shift:.2}× under the budget what it is with every core: \
                 **{who} pays {:.0}% more for the budget** than the other, beyond ±{:.0}%; every ratio below leans that \
                 way by about as much{}",
                ((shift.max(1.0 / shift)) - 1.0) * 100.0,
                HOLDS_WITHIN * 100.0,
                if flips.is_empty() {
                    ", and no mix's answer would change sides".to_owned()
                } else {
                    format!(", and the answer of {} would change sides with every core", flips.join(", "))
                }
            )
        }
    };
    Some(Block::Paragraph(format!(
        "**The regime** (reads at {} req/s, both targets at once, before the mixes; under {} CPU against a quota of \
         all {} cores, the same cgroups and counter; docs/fairness.md, \"The budget regime\"; files in `{}/`): {}. {}.",
        rates.join(" and "),
        check.budget_cores,
        check.reference_cores,
        check.dir,
        if each.is_empty() { "no database measured".to_owned() } else { each.join("; ") },
        verdict
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use orders_bench_model::regime::{RegimeCheck, RegimeStep};
    use orders_bench_model::step_cost::Cost;
    use orders_bench_model::verdict::RateSummary;
    use std::collections::BTreeMap;

    fn check(mongo_under_budget: f64) -> RegimeCheck {
        let costs = |pg: f64, mongo: f64| {
            let cost = |us| Cost { cpu_us_per_request: Some(us), throttled_share: Some(0.1), ..Cost::default() };
            BTreeMap::from([("pg".to_owned(), cost(pg)), ("mongo".to_owned(), cost(mongo))])
        };
        RegimeCheck {
            budget_cores: 0.25,
            reference_cores: 2.0,
            mix: "read".into(),
            steps: vec![RegimeStep {
                rate: 150,
                budget: costs(50.0, mongo_under_budget),
                reference: costs(50.0, 100.0),
            }],
            dir: "regime".into(),
        }
    }

    fn round(name: &str, pg: f64, mongo: f64, regime: RegimeCheck) -> RoundResult {
        let mut round: RoundResult = serde_json::from_value(serde_json::json!({
            "name": name, "mix": name, "mix_weights": {}, "started_at": "", "finished_at": "",
            "plan": {"start_rate": 1, "step": 1, "max_rate": 1, "step_seconds": 1.0},
            "pass_mark": {"p95_ms": 50.0, "max_failed_rate": 0.01, "max_dropped": 0},
            "data_set": null, "machine": {"cores": 2, "os": "test"}, "fairness_overridden": false,
            "repeats": [], "max_rate": {}
        }))
        .expect("a round");
        let summary = |median: f64| RateSummary {
            median,
            min: median as u32,
            max: median as u32,
            runs: vec![median as u32],
            lower_bound: false,
        };
        round.max_rate = BTreeMap::from([("pg".to_owned(), summary(pg)), ("mongo".to_owned(), summary(mongo))]);
        round.regime = Some(regime);
        round
    }

    #[test]
    fn the_regime_is_stated_and_a_fair_one_says_so() {
        let read = round("read", 2000.0, 1000.0, check(105.0));
        let Some(Block::Paragraph(text)) = paragraph(&[&read]) else { panic!("no paragraph") };
        assert!(text.contains("favours neither engine") && text.contains("1.05×"), "{text}");
        assert!(text.contains("throttled in 10%") && text.contains("under 0.25 CPU against"), "{text}");
    }

    #[test]
    fn a_budget_that_makes_mongodb_pay_names_the_answers_it_would_flip() {
        let (read, insert) =
            (round("read", 2000.0, 1000.0, check(130.0)), round("insert", 1200.0, 1000.0, check(130.0)));
        let Some(Block::Paragraph(text)) = paragraph(&[&read, &insert]) else { panic!("no paragraph") };
        assert!(text.contains("MongoDB pays 30% more"), "{text}");
        assert!(text.contains("the answer of insert would change sides"), "{text}");
        assert!(!text.contains("read would"), "2.0x stays PostgreSQL's: {text}");
    }

    #[test]
    fn rounds_without_a_check_get_no_paragraph() {
        let mut read = round("read", 2000.0, 1000.0, check(100.0));
        read.regime = None;
        assert!(paragraph(&[&read]).is_none());
    }
}
