//! The run's `read` and `insert` rows held against the published studies that measured the same
//! requests (docs/studies.md): direction and ratio beside theirs, and from this run's own figures
//! what set its ratio: whether each database's CPU per request at its capacity step accounts for
//! it, and what the regime check found the budget did to that cost.

use orders_bench_model::capacity;
use orders_bench_model::result::RoundResult;
use orders_bench_model::stats::median;

/// What a study found for one mix: PostgreSQL's rate ÷ MongoDB's (a range), or only a direction.
struct Study {
    mix: &'static str,
    name: &'static str,
    /// PostgreSQL ÷ MongoDB, lowest and highest, when the study gave figures.
    ratio: Option<(f64, f64)>,
    said: &'static str,
}

const STUDIES: [Study; 3] = [
    Study {
        mix: "read",
        name: "S1",
        ratio: None,
        said: "MongoDB led on reads (Go services on droplets, 1,000,000 orders; figures not in our summary)",
    },
    Study {
        mix: "read",
        name: "S3",
        ratio: Some((44_000.0 / 41_000.0, 44_000.0 / 38_000.0)),
        said: "PostgreSQL led finds by id, about 44,000 against 38,000–41,000/s (Java runner, 8 CPUs each)",
    },
    Study {
        mix: "insert",
        name: "S1",
        ratio: Some((5_964.0 / 3_966.0, 5_964.0 / 3_966.0)),
        said: "PostgreSQL led single inserts, 5,964 against 3,966 req/s (fastupdate on)",
    },
];

/// PostgreSQL's and MongoDB's median CPU per request at their capacity steps (µs).
fn costs(round: &RoundResult) -> Option<(f64, f64)> {
    let targets = round.targets();
    let of = |name: &str| {
        let target = targets.iter().find(|t| t.name == name)?;
        let each: Vec<f64> =
            round.repeats.iter().filter_map(|r| capacity::of_repeat(r, target)).map(|c| c.cpu_us_per_request).collect();
        median(&each)
    };
    Some((of("pg")?, of("mongo")?))
}

/// One sentence per study about one of the run's rounds.
fn sentence(round: &RoundResult, study: &Study) -> Option<String> {
    let (pg, mongo) = (round.max_rate.get("pg")?.median, round.max_rate.get("mongo")?.median);
    if pg <= 0.0 || mongo <= 0.0 {
        return None;
    }
    let ours = pg / mongo;
    let leader = |r: f64| if r >= 1.0 { "PostgreSQL" } else { "MongoDB" };
    let direction = match study.ratio {
        Some((low, high)) if (ours >= 1.0) == (low >= 1.0) && (ours >= 1.0) == (high >= 1.0) => format!(
            "the same direction; ours is {} theirs ({:.2} against {})",
            if ours > high * 1.15 {
                "larger than"
            } else if ours < low / 1.15 {
                "smaller than"
            } else {
                "close to"
            },
            ours,
            if (high - low).abs() < 0.005 { format!("{low:.2}") } else { format!("{low:.2}–{high:.2}") }
        ),
        Some(_) => format!("**the opposite direction**: {} leads here ({ours:.2})", leader(ours)),
        None if study.said.starts_with(leader(ours)) => format!("the same direction ({ours:.2})"),
        None => format!("**the opposite direction**: {} leads here ({ours:.2})", leader(ours)),
    };
    let evidence = match costs(round) {
        Some((pg_us, mongo_us)) => {
            let cost_ratio = mongo_us / pg_us;
            let accounts = (ours / cost_ratio - 1.0).abs() <= 0.25;
            format!(
                "per request PostgreSQL's database spent {pg_us:.0} µs and MongoDB's {mongo_us:.0} at their capacity steps \
                 ({cost_ratio:.2}×), which {}",
                if accounts {
                    "accounts for the ratio of the rates"
                } else {
                    "does not account for the ratio of the rates: latency, not CPU, set it"
                }
            )
        }
        None => {
            "no capacity step measured the databases' CPU per request (no budget, or no step used half of it)".into()
        }
    };
    let regime = round.regime.as_ref().and_then(|c| c.shift()).map_or(String::new(), |s| {
        format!("; the regime check found the budget moved MongoDB ÷ PostgreSQL of that cost by {s:.2}×")
    });
    Some(format!("**`{}` against {}** ({}): {direction}. Here {evidence}{regime}.", round.name, study.name, study.said))
}

/// The findings for every round whose mix a study measured.
pub fn held_against(rounds: &[&RoundResult]) -> Vec<String> {
    rounds
        .iter()
        .filter(|r| r.mix_weights.len() <= 1)
        .flat_map(|round| STUDIES.iter().filter(|s| s.mix == round.mix).filter_map(|s| sentence(round, s)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use orders_bench_model::verdict::RateSummary;
    use std::collections::BTreeMap;

    fn round(mix: &str, pg: f64, mongo: f64) -> RoundResult {
        let mut round: RoundResult = serde_json::from_value(serde_json::json!({
            "name": mix, "mix": mix, "mix_weights": {mix: 1}, "started_at": "", "finished_at": "",
            "plan": {"start_rate": 1, "step": 1, "max_rate": 1, "step_seconds": 1.0},
            "pass_mark": {"p95_ms": 50.0, "max_failed_rate": 0.01, "max_dropped": 0},
            "data_set": null, "machine": {"cores": 2, "os": "test"}, "fairness_overridden": false,
            "repeats": [], "max_rate": {}
        }))
        .expect("a round");
        let summary =
            |m: f64| RateSummary { median: m, min: m as u32, max: m as u32, runs: vec![m as u32], lower_bound: false };
        round.max_rate = BTreeMap::from([("pg".to_owned(), summary(pg)), ("mongo".to_owned(), summary(mongo))]);
        round
    }

    #[test]
    fn reads_are_held_against_s1_and_s3_and_a_reversal_is_named() {
        let read = round("read", 2700.0, 1000.0);
        let said = held_against(&[&read]);
        assert_eq!(said.len(), 2, "{said:?}");
        assert!(said[0].contains("against S1") && said[0].contains("**the opposite direction**"), "{said:?}");
        assert!(said[1].contains("against S3") && said[1].contains("larger than theirs"), "{said:?}");
        assert!(said[1].contains("no capacity step"), "no repeats, no CPU evidence: {said:?}");
    }

    #[test]
    fn inserts_are_held_against_s1_and_a_mix_no_study_ran_is_not() {
        let insert = round("insert", 1500.0, 1000.0);
        let said = held_against(&[&insert, &round("status", 1000.0, 1000.0)]);
        assert_eq!(said.len(), 1, "{said:?}");
        assert!(said[0].contains("the same direction; ours is close to theirs (1.50 against 1.50)"), "{said:?}");
        let mongo_ahead = held_against(&[&round("insert", 900.0, 1000.0)]);
        assert!(mongo_ahead[0].contains("MongoDB leads here (0.90)"), "{mongo_ahead:?}");
    }
}
