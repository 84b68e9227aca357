//! The part of a report's head that says whether the maximum rates compare the databases at all:
//! the databases' budgets, in words what set each row's limits (the headline's last column:
//! "not database-limited" unless both databases were proven at their budgets in most repeats),
//! CPU seconds per 1,000 requests of each database and service (the cost of a request, which
//! stays comparable when the machine, not a database, set the limit), what limited each target
//! where it first failed, and a warning for rounds in which both targets failed at the same step
//! of every repeat on a saturated machine: there the table measures the shared machine.

use super::doc::Block;
use super::format::{self, NONE};
use orders_bench_model::cpu::{LimitKind, Role, limit_counts};
use orders_bench_model::result::{RepeatResult, RoundResult};
use orders_bench_model::stats::median;
use orders_bench_model::target::TargetInfo;
use std::collections::BTreeMap;

/// Median over the repeats of a component's CPU seconds per 1,000 requests.
fn per_1k(round: &RoundResult, name: &str) -> Option<f64> {
    median(
        &round
            .repeats
            .iter()
            .filter_map(|r| r.cpu.components.iter().find(|c| c.name == name).and_then(|c| c.per_1k_requests))
            .collect::<Vec<_>>(),
    )
}

/// The same for the load generator, whichever it was (k6 or orders-bench load).
fn generator_per_1k(round: &RoundResult) -> Option<f64> {
    let generator = |r: &RepeatResult| {
        r.cpu.components.iter().find(|c| c.role == Role::LoadGenerator).and_then(|c| c.per_1k_requests)
    };
    median(&round.repeats.iter().filter_map(generator).collect::<Vec<_>>())
}

fn kind_counts(round: &RoundResult, target: &str) -> BTreeMap<&'static str, usize> {
    limit_counts(round.repeats.iter().map(|r| &r.cpu), target)
}

/// "load generator ×2, database ×1" over the repeats.
fn limits(round: &RoundResult, target: &str) -> String {
    let counts = kind_counts(round, target);
    if counts.is_empty() {
        return NONE.into();
    }
    counts
        .iter()
        .map(|(k, n)| if round.repeats.len() > 1 { format!("{k} ×{n}") } else { (*k).to_owned() })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The load generator's CPU per request over the cheaper database's (both per 1,000 of their own
/// requests), and which database that was: the generator must cost a small fraction of what it
/// measures, or it shares the machine with the databases on unequal terms.
pub fn generator_share(round: &RoundResult) -> Option<(f64, TargetInfo)> {
    let generator = generator_per_1k(round)?;
    let (cheaper, target) = round
        .targets()
        .into_iter()
        .filter_map(|t| Some((per_1k(round, &t.database)?, t)))
        .filter(|(db, _)| *db > 0.0)
        .min_by(|a, b| a.0.total_cmp(&b.0))?;
    Some((generator / cheaper, target))
}

fn pair(round: &RoundResult, target: &TargetInfo) -> String {
    match (per_1k(round, &target.database), per_1k(round, &target.service)) {
        (None, None) => NONE.into(),
        (db, svc) => format!("{} + {}", format::seconds(db, 3), format::seconds(svc, 3)),
    }
}

/// The headline's words on what set a round's limits: "both databases, at their budgets" when
/// each target's database was proven the limit in more than half of the repeats, else "not
/// database-limited" and what was.
pub fn limit_words(round: &RoundResult) -> String {
    let mut limited = Vec::new();
    let mut not = Vec::new();
    let targets = round.targets();
    for target in &targets {
        let label = target.label.as_str();
        let counts = kind_counts(round, &target.name);
        let database = counts.get("database").copied().unwrap_or(0);
        if counts.is_empty() {
            not.push(format!("{label} never failed (the staircase ended first)"));
        } else if database * 2 > round.repeats.len() {
            limited.push(label);
        } else {
            not.push(format!("{label}: {}", limits(round, &target.name)));
        }
    }
    match (limited.len(), not.is_empty()) {
        (n, _) if n == targets.len() && n == 2 => "both databases, at their budgets".into(),
        (n, _) if n == targets.len() => "every database, at its budget".into(),
        (0, _) => format!("**not database-limited**: {}", not.join("; ")),
        _ => format!("**not database-limited**: {} (the {} database was)", not.join("; "), limited.join(", ")),
    }
}

pub fn cpu_table(rounds: &[&RoundResult]) -> Block {
    let targets = rounds.first().map(|r| r.targets()).unwrap_or_default();
    let rows = rounds
        .iter()
        .map(|r| {
            let mut row = vec![r.name.clone()];
            row.extend(targets.iter().map(|t| pair(r, t)));
            row.push(format::seconds(generator_per_1k(r), 3));
            row.push(generator_share(r).map_or(NONE.into(), |(share, t)| format!("{share:.2} of {}", t.database)));
            row.push(targets.iter().map(|t| limits(r, &t.name)).collect::<Vec<_>>().join(" / "));
            row
        })
        .collect();
    let mut header = vec!["mix".to_owned()];
    for (i, t) in targets.iter().enumerate() {
        header.push(if i == 0 {
            format!("{} + {}, CPU s per 1,000 requests", t.label, t.service)
        } else {
            format!("{} + {}", t.label, t.service)
        });
    }
    header.extend([
        "load generator".to_owned(),
        "load generator ÷ cheaper database".to_owned(),
        format!(
            "limit at the first failed step ({})",
            targets.iter().map(|t| t.label.as_str()).collect::<Vec<_>>().join(" / ")
        ),
    ]);
    Block::Table { header, rows }
}

/// Rounds in which, in every repeat, both targets first failed at the same rate while the machine
/// was busy with something other than just their database.
pub fn shared_limit(rounds: &[&RoundResult]) -> Vec<String> {
    rounds
        .iter()
        .filter(|round| {
            !round.repeats.is_empty()
                && round.repeats.iter().all(|r| {
                    let targets = round.targets();
                    let first: Vec<Option<u32>> = targets
                        .iter()
                        .map(|t| r.targets.get(&t.name).and_then(|t| t.max_rate.first_failed_rate))
                        .collect();
                    let kinds: Vec<_> = targets.iter().map(|t| r.cpu.limits.get(&t.name).map(|l| l.kind)).collect();
                    first.first().is_some_and(Option::is_some)
                        && first.iter().all(|f| *f == first[0])
                        && kinds.iter().all(|k| {
                            matches!(k, Some(LimitKind::LoadGenerator | LimitKind::Service | LimitKind::Machine))
                        })
                })
        })
        .map(|round| format!("`{}`", round.name))
        .collect()
}

/// How many targets the rounds compare, in words ("two", "three"), and their services as a
/// sentence names them ("both services", "the three services").
pub fn target_count_words(rounds: &[&RoundResult]) -> (String, String) {
    match rounds.first().map_or(2, |r| r.targets().len()) {
        2 => ("two".into(), "both services".into()),
        3 => ("three".into(), "the three services".into()),
        n => (n.to_string(), format!("the {n} services")),
    }
}

/// The budgets the rounds ran under, in one paragraph.
pub fn budget_paragraph(rounds: &[&RoundResult]) -> Option<Block> {
    let mut labels: Vec<&str> = rounds.iter().filter_map(|r| r.budget.as_deref()).collect();
    labels.dedup();
    let (machines, services) = target_count_words(rounds);
    let text = match labels.as_slice() {
        [] => return None,
        [one] if one.starts_with("no budgets") => format!(
            "**No budgets**: {one}. A limit found may be the machine's; the last column of the table says which \
             rows are not database-limited."
        ),
        [one] if one.starts_with("UNEQUAL") => format!("**{one}**: the databases did not get the same resources."),
        [one] => format!(
            "**Database budgets**: {one}, like {machines} equal database machines; the load generator, {services} \
             and the runner share the rest of this machine."
        ),
        several => format!("**Database budgets differ between rounds**: {}.", several.join("; ")),
    };
    Some(Block::Paragraph(text))
}

/// The warning that the machine, not a database, set some rows' limits, when it did.
pub fn machine_warning(rounds: &[&RoundResult]) -> Option<Block> {
    let shared = shared_limit(rounds);
    (!shared.is_empty()).then(|| {
        Block::Paragraph(format!(
            "**The machine, not a database, set these limits** in {}: in every repeat both targets first failed at \
             the same step while the CPU was (nearly) saturated and no database was at its budget. They shared the \
             cores with each other and with the load generator, so those rows measure this machine; compare the \
             CPU per request below, give the databases smaller budgets (--db-cpus), or give each database a machine \
             of its own (infra/).",
            shared.join(", ")
        ))
    })
}

/// CPU seconds per 1,000 requests and each target's limit, per round.
pub fn cpu_blocks(rounds: &[&RoundResult]) -> Vec<Block> {
    vec![
        Block::Paragraph(
            "CPU seconds per 1,000 requests (median of the repeats; database + its service), and what limited each \
             target where it first failed (see CPU in each round):"
                .into(),
        ),
        cpu_table(rounds),
    ]
}
