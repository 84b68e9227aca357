//! The sentences a report opens with, one per mix, short enough to repeat: who held what multiple
//! of whose rate within the repeats, or that there is no clear winner and the first reason why
//! (`model::mix_verdict`, whose verdict the table below gives in full), and what stopped each
//! target. The chart under them is `dots`.

use orders_bench_model::cpu::limit_counts;
use orders_bench_model::mix_verdict::{self, Doubt, MixVerdict, THIN_LEAD_REPEATS, TOLERANCE};
use orders_bench_model::result::RoundResult;
use orders_bench_model::stats::median;
use orders_bench_model::target::TargetInfo;

/// One sentence per round, in report order.
pub fn sentences(rounds: &[&RoundResult]) -> Vec<String> {
    rounds.iter().map(|round| sentence(round)).collect()
}

/// "Reads", "Status updates", "Shop (read 60, product 30, insert 10)": the mix as a sentence
/// starts with it.
pub fn mix_name(round: &RoundResult) -> String {
    let name = match round.name.as_str() {
        "read" => "Reads".to_owned(),
        "insert" => "Inserts".to_owned(),
        "status" => "Status updates".to_owned(),
        "customer" => "A customer's orders".to_owned(),
        "product" => "Product searches".to_owned(),
        other => other.chars().take(1).flat_map(char::to_uppercase).chain(other.chars().skip(1)).collect(),
    };
    if round.mix_weights.len() > 1 && !round.name.contains(':') {
        let mut weights: Vec<(&String, &u32)> = round.mix_weights.iter().collect();
        weights.sort_by(|a, b| b.1.cmp(a.1));
        let weights: Vec<String> = weights.iter().map(|(e, w)| format!("{e} {w}")).collect();
        format!("{name} ({})", weights.join(", "))
    } else {
        name
    }
}

/// "within the three repeats", "in the one repeat".
fn within(n: usize) -> String {
    const WORDS: [&str; 11] = ["no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"];
    match n {
        1 => "in the one repeat".into(),
        n if n < WORDS.len() => format!("within the {} repeats", WORDS[n]),
        n => format!("within the {n} repeats"),
    }
}

/// "2.59–3.39" or "1.00": the ratios' lowest to highest.
fn range(ratios: &[f64]) -> String {
    let low = ratios.iter().copied().fold(f64::INFINITY, f64::min);
    let high = ratios.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if format!("{low:.2}") == format!("{high:.2}") { format!("{low:.2}") } else { format!("{low:.2}–{high:.2}") }
}

fn repeats(list: &[u32]) -> String {
    let words: Vec<String> = list.iter().map(u32::to_string).collect();
    format!("repeat{} {}", if list.len() > 1 { "s" } else { "" }, words.join(", "))
}

/// The target the others are compared with (the highest median rate).
fn leader(verdict: &MixVerdict) -> Option<&TargetInfo> {
    verdict.rates.iter().map(|(t, _)| t).find(|t| verdict.paired.iter().all(|(o, _)| o.name != t.name))
}

/// Whether target `name` never failed in some repeat (its rate there, and a ratio over it, is a
/// lower bound).
pub fn never_failed(round: &RoundResult, name: &str) -> bool {
    round.repeats.iter().any(|r| r.targets.get(name).is_some_and(|t| t.max_rate.first_failed_rate.is_none()))
}

/// "PostgreSQL held 2.96× MongoDB's rate, 2.59–3.39 within the three repeats": the median of the
/// ratios within the repeats ("at least" when the leader never failed in some repeat).
fn held(round: &RoundResult, leader: &TargetInfo, verdict: &MixVerdict) -> String {
    let never_failed = never_failed(round, &leader.name);
    let each: Vec<String> = verdict
        .paired
        .iter()
        .filter(|(_, ratios)| !ratios.is_empty())
        .map(|(other, ratios)| {
            format!(
                "{}{:.2}× {}'s rate, {} {}",
                if never_failed { "at least " } else { "" },
                median(ratios).unwrap_or(1.0),
                other.label,
                range(ratios),
                within(ratios.len())
            )
        })
        .collect();
    format!("{} held {}", leader.label, each.join("; and "))
}

/// Why there is no winner, in a few words, after "no clear winner: ".
fn doubt_words(doubt: &Doubt, leader: &TargetInfo, verdict: &MixVerdict) -> String {
    let Some((other, ratios)) = verdict.paired.first() else { return "only one target was measured".into() };
    let over = format!("{}'s rate was {}× {}'s {}", leader.label, range(ratios), other.label, within(ratios.len()));
    match doubt {
        Doubt::NoPair => format!("no repeat measured both {} and {}", leader.label, other.label),
        Doubt::Behind(list) => format!("{} passed the higher rate in {} ({over})", other.label, repeats(list)),
        Doubt::Close { least, .. } => format!("{over}, under the {:.0}% a winner needs", least * 100.0),
        Doubt::MediansClose { least } => format!("{over}, but the medians are less than {:.0}% apart", least * 100.0),
        Doubt::NotDatabaseLimited => over,
        Doubt::CapacityDisagrees => format!("{over}, but the CPU capacities favour {}", other.label),
        Doubt::ThinLead { held, least } => format!(
            "{over}, in some repeat less than one staircase step past the {:.0}% a winner needs: a lead that thin \
             must hold in {THIN_LEAD_REPEATS} repeats (it held in {held})",
            least * 100.0
        ),
    }
}

/// "both stopped by their own database", or each target's: what set the limits, as the table's
/// "what set the limits" judges it (its database in more than half of the repeats).
fn stops(round: &RoundResult) -> String {
    let targets = round.targets();
    let each: Vec<(bool, String)> = targets
        .iter()
        .map(|t| {
            let counts = limit_counts(round.repeats.iter().map(|r| &r.cpu), &t.name);
            let database = counts.get("database").copied().unwrap_or(0);
            if counts.is_empty() {
                (false, format!("{} never failed (the staircase ended first)", t.label))
            } else if database * 2 > round.repeats.len() {
                (true, format!("{} stopped by its own database", t.label))
            } else {
                let words: Vec<String> = counts.iter().map(|(kind, n)| format!("{kind} ×{n}")).collect();
                (false, format!("{} not by its database ({})", t.label, words.join(", ")))
            }
        })
        .collect();
    match each.len() {
        2 if each.iter().all(|(db, _)| *db) => "both stopped by their own database".into(),
        n if n > 2 && each.iter().all(|(db, _)| *db) => "each stopped by its own database".into(),
        _ => each.into_iter().map(|(_, words)| words).collect::<Vec<_>>().join(", "),
    }
}

/// The first repeat's reason when no repeat of `round` counts.
fn every_repeat_left_out(round: &RoundResult) -> Option<String> {
    if round.repeats.iter().any(|r| r.counted()) {
        return None;
    }
    round.repeats.first()?.left_out().map(|why| format!("repeat {}: {why}", round.repeats[0].index))
}

fn sentence(round: &RoundResult) -> String {
    let verdict = mix_verdict::judge(round);
    let name = mix_name(round);
    if let Some(why) = every_repeat_left_out(round) {
        return format!("**{name}**: not measured: every repeat was left out ({why}).");
    }
    let Some(leader) = leader(&verdict).filter(|_| verdict.rates.len() >= 2) else {
        let rates: Vec<String> = verdict
            .rates
            .iter()
            .map(|(t, runs)| format!("{} {} req/s", t.label, median(runs).map_or("–".into(), crate::format::count)))
            .collect();
        return format!("**{name}**: only one target: {}.", rates.join(", "));
    };
    let answer = match (&verdict.winner, &verdict.doubt) {
        (Some(_), _) => held(round, leader, &verdict),
        (None, doubt) => {
            let nobody = if verdict.database_limited { "no clear winner" } else { "not database-limited, no winner" };
            match doubt {
                Some(doubt) => format!("{nobody}: {}", doubt_words(doubt, leader, &verdict)),
                None => nobody.to_owned(),
            }
        }
    };
    let unstable = if verdict.stable {
        String::new()
    } else {
        format!("; **unstable**: repeats spread more than ±{:.0}% around their median", TOLERANCE * 100.0)
    };
    format!("**{name}**: {answer}; {}{unstable}.", stops(round))
}

#[cfg(test)]
mod tests {
    use super::*;
    use orders_bench_model::cpu::{ComponentCpu, Role, StepCpu};
    use std::collections::BTreeMap;

    #[test]
    fn a_mix_whose_every_repeat_was_left_out_says_so_and_names_no_winner() {
        let mut round = crate::fixtures::round("read", "read", "2026-12-07T15:00:00Z", &[(3000, 1000), (3100, 1000)]);
        let counted = &sentences(&[&round])[0];
        assert!(counted.contains("PostgreSQL") && !counted.contains("not measured"), "{counted}");
        for repeat in &mut round.repeats {
            // Every component measured (else other processes cannot be told apart).
            repeat.cpu.components = vec![ComponentCpu {
                name: "postgres".into(),
                role: Role::Database,
                target: Some("pg".into()),
                note: None,
                cpu_seconds: Some(10.0),
                cores_used: None,
                per_1k_requests: None,
            }];
            repeat.cpu.steps = vec![StepCpu {
                step: 0,
                rate: 1000,
                machine_busy_cores: Some(1.9),
                components_cores: Some(0.6),
                others_cores: Some(1.3),
                cores: BTreeMap::new(),
                databases: BTreeMap::new(),
                generator: None,
            }];
        }
        let sentence = &sentences(&[&round])[0];
        assert!(sentence.starts_with("**Reads**: not measured: every repeat was left out"), "{sentence}");
        assert!(sentence.contains("other processes took 1.30 cores"), "{sentence}");
        let verdict = mix_verdict::judge(&round);
        assert_eq!(verdict.winner, None);
        assert!(!verdict.database_limited, "nothing says a database set the rates");
    }
}
