//! Two runs side by side (`orders-bench compare A B`), to check a toggle or a rerun. Rounds are
//! matched by name (the mix); each row gives both runs' maximum passing rates (median and every
//! repeat) and CPU capacities per database, the change, whether it is larger than the spread
//! (every repeat of one run beyond every repeat of the other), the ratio in both, and the
//! settings that differ between them (`fastupdate on → off`), so a difference is read beside the
//! knob that made it.

use super::doc::{self, Block};
use super::format::{self, NONE};
use orders_bench_model::mix_verdict;
use orders_bench_model::result::RoundResult;
use orders_bench_model::stats::median;
use std::collections::BTreeMap;

/// The settings a round ran with, by name (PostgreSQL's and MongoDB's, from the first repeat).
fn settings(round: &RoundResult) -> BTreeMap<String, String> {
    let Some(first) = round.repeats.first() else { return BTreeMap::new() };
    round
        .targets()
        .iter()
        .flat_map(|t| {
            let settings = first.explain.settings(&t.name).cloned().unwrap_or_default();
            settings.into_iter().map(|(k, v)| (format!("{} {k}", t.name), v)).collect::<Vec<_>>()
        })
        .collect()
}

/// "pg gin_fastupdate on → off" for every setting that differs.
fn setting_changes(a: &RoundResult, b: &RoundResult) -> Vec<String> {
    let (a, b) = (settings(a), settings(b));
    let mut names: Vec<&String> = a.keys().chain(b.keys()).collect();
    names.sort();
    names.dedup();
    names
        .into_iter()
        .filter(|name| a.get(*name) != b.get(*name))
        .map(|name| {
            let side = |s: &BTreeMap<String, String>| s.get(name).cloned().unwrap_or_else(|| NONE.into());
            format!("{name} {} → {}", side(&a), side(&b))
        })
        .collect()
}

/// Whether every value of one list lies beyond every value of the other.
fn beyond_spread(a: &[f64], b: &[f64]) -> bool {
    orders_bench_model::stats::above(a, b) || orders_bench_model::stats::above(b, a)
}

fn cell(values: &[f64]) -> String {
    match median(values) {
        None => NONE.into(),
        Some(m) => format!(
            "{} ({})",
            format::count(m),
            values.iter().map(|v| format::count(*v)).collect::<Vec<_>>().join(" / ")
        ),
    }
}

fn change(a: &[f64], b: &[f64]) -> String {
    match (median(a), median(b)) {
        (Some(x), Some(y)) if x > 0.0 => format!(
            "{:+.0}%{}",
            (y / x - 1.0) * 100.0,
            if beyond_spread(a, b) { ", beyond the spread" } else { ", within the spread" }
        ),
        _ => NONE.into(),
    }
}

/// The comparison of the rounds `a` and `b` have in common, as Markdown (empty when none).
pub fn markdown(a: &[RoundResult], b: &[RoundResult]) -> String {
    doc::markdown(&blocks(a, b))
}

/// The comparison of the rounds `a` and `b` have in common (nothing when none).
pub fn blocks(a: &[RoundResult], b: &[RoundResult]) -> Vec<Block> {
    let mut rows = Vec::new();
    let mut changes = Vec::new();
    for round_a in a {
        let Some(round_b) = b.iter().find(|r| r.name == round_a.name) else { continue };
        let (va, vb) = (mix_verdict::judge(round_a), mix_verdict::judge(round_b));
        for target in round_a.targets() {
            let (ra, rb) = (va.rates_of(&target.name), vb.rates_of(&target.name));
            let (ca, cb) = (va.capacities_of(&target.name), vb.capacities_of(&target.name));
            rows.push(vec![
                round_a.name.clone(),
                target.label.clone(),
                cell(ra),
                cell(rb),
                change(ra, rb),
                format!(
                    "{} → {}",
                    median(ca).map_or(NONE.into(), format::count),
                    median(cb).map_or(NONE.into(), format::count)
                ),
            ]);
        }
        rows.push(vec![
            round_a.name.clone(),
            format::ratio_words(round_a),
            format::round_ratio(round_a),
            format::round_ratio(round_b),
            format!("{} → {}", va.headline(), vb.headline()),
            String::new(),
        ]);
        let differ = setting_changes(round_a, round_b);
        if !differ.is_empty() {
            changes.push(format!("`{}`: {}", round_a.name, differ.join(", ")));
        }
    }
    if rows.is_empty() {
        return Vec::new();
    }
    let header = ["round", "database", "A max rate (repeats)", "B max rate (repeats)", "change", "CPU capacity A → B"];
    let mut blocks = vec![Block::Table { header: header.iter().map(|h| (*h).to_owned()).collect(), rows }];
    blocks.push(Block::Paragraph(
        "A change is **beyond the spread** when every repeat of one run passed a higher rate than every repeat of \
         the other; within it, the runs do not tell the two apart."
            .into(),
    ));
    if changes.is_empty() {
        blocks.push(Block::Paragraph("Both runs used the same settings.".into()));
    } else {
        blocks.push(Block::Paragraph("Settings that differ (A → B):".into()));
        blocks.push(Block::List(changes));
    }
    blocks
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_is_beyond_the_spread_only_when_the_repeats_do_not_overlap() {
        assert!(beyond_spread(&[1200.0, 1400.0], &[1600.0, 1800.0]));
        assert!(!beyond_spread(&[1200.0, 1700.0], &[1600.0, 1800.0]));
        assert!(!beyond_spread(&[], &[1.0]));
        assert_eq!(change(&[1000.0, 1000.0], &[1500.0, 1600.0]), "+55%, beyond the spread");
        assert_eq!(change(&[1000.0, 1600.0], &[1500.0]), "+15%, within the spread");
    }
}
