//! How sure the answer for one mix is. A repeat is left out when stalls of the shared machine
//! stopped it or other processes took a share of the machine (`RepeatResult::left_out`). Each
//! target's repeats must lie within `TOLERANCE` of their median, else the row is **unstable**. The
//! winner is judged **repeat by repeat** (within a repeat every target ran at the same moment on
//! the same machine): it is named only when it led every other target by the least difference in
//! every repeat and in the medians, the CPU capacities do not say the opposite, every target it
//! beat was stopped by its own database, and a lead within one staircase step of the threshold
//! held in `THIN_LEAD_REPEATS` repeats. Otherwise: no clear winner, or **not database-limited**.
//! `Doubt` names the first reason, for the report's sentence; `reasons` give them all
//! (docs/fairness.md, "How a step is judged").

use super::capacity;
use super::cpu::limit_counts;
use super::result::{RatePlan, RepeatResult, RoundResult};
use crate::stats::median;
use crate::target::TargetInfo;
use serde::Serialize;
use std::collections::BTreeMap;

/// Repeats within ±25% of their median count as agreeing.
pub const TOLERANCE: f64 = 0.25;

/// Repeats a lead within one step of the least difference must hold in to name a winner
/// (`lead_thin`): three such repeats named PostgreSQL for `insert` in two runs of three on one
/// commit and nobody in the third (docs/fairness.md, "a lead one step past the least difference").
pub const THIN_LEAD_REPEATS: usize = 5;

/// Medians closer than this (relative), or than one step of the staircase, name no winner,
/// whatever the spread: between runs on the same machine a median moves by a step of the
/// staircase and by about this much (docs/fairness.md).
pub const MIN_DIFFERENCE: f64 = 0.15;

/// The least relative difference of the medians that names a winner in `round`: `MIN_DIFFERENCE`,
/// or one step of its staircase where the steps are coarser (a rate one step higher is within
/// what a rerun moves).
pub fn least_difference(round: &RoundResult) -> f64 {
    least_difference_of(&round.plan)
}

fn least_difference_of(plan: &RatePlan) -> f64 {
    MIN_DIFFERENCE.max(coarsest_step(plan))
}

/// The largest relative growth from one rate of `plan` to the next (0.15: ×1.15).
fn coarsest_step(plan: &RatePlan) -> f64 {
    plan.rates().windows(2).map(|w| f64::from(w[1]) / f64::from(w[0].max(1)) - 1.0).fold(0.0, f64::max)
}

/// Within each counted repeat in which both were measured: `leader`'s value over `other`'s
/// (`values` per repeat, by target name). Both at 0 (both failed the first step) is a tie.
fn paired_ratios(per_repeat: &[BTreeMap<String, f64>], leader: &str, other: &str) -> Vec<f64> {
    per_repeat.iter().filter_map(|values| ratio_in(values, leader, other)).collect()
}

/// `leader`'s value over `other`'s in one repeat, when both were measured.
fn ratio_in(values: &BTreeMap<String, f64>, leader: &str, other: &str) -> Option<f64> {
    let (high, low) = (*values.get(leader)?, *values.get(other)?);
    Some(if high == low { 1.0 } else { high / low.max(1.0) })
}

/// Every value within `TOLERANCE` of the values' median (true for none or one).
pub fn within_tolerance(values: &[f64]) -> bool {
    let Some(median) = median(values) else { return true };
    median > 0.0 && values.iter().all(|v| (v - median).abs() <= TOLERANCE * median + 1e-9)
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MixVerdict {
    pub winner: Option<TargetInfo>,
    /// Every target that failed in a counted repeat was stopped by its own database in most of
    /// them (false: the round measured something else for at least one, named in `reasons`).
    pub database_limited: bool,
    /// Every target's repeats within `TOLERANCE` of their median.
    pub stable: bool,
    /// Why the row is unstable or has no clear winner, in words.
    pub reasons: Vec<String>,
    /// Per target, in the round's order: the repeats' maximum passing rates and CPU capacities.
    pub rates: Vec<(TargetInfo, Vec<f64>)>,
    pub capacities: Vec<(TargetInfo, Vec<f64>)>,
    /// Per target other than the one with the highest median rate: within each repeat, that
    /// target's rate over this one's.
    pub paired: Vec<(TargetInfo, Vec<f64>)>,
    /// Why the leader is not named the winner, the first reason that stopped it (`None` with a
    /// winner): what a sentence says in a few words where `reasons` say it in full.
    pub doubt: Option<Doubt>,
}

/// The first thing that kept a leader from being named the winner.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub enum Doubt {
    /// No repeat measured both.
    NoPair,
    /// Another target passed a higher rate in these repeats.
    Behind(Vec<u32>),
    /// In these repeats the two were less than the least difference (`least`) apart.
    Close { repeats: Vec<u32>, least: f64 },
    /// The medians were less than `least` apart.
    MediansClose { least: f64 },
    /// A target it beat was not stopped by its own database.
    NotDatabaseLimited,
    /// The CPU capacities favour the other target.
    CapacityDisagrees,
    /// A lead within one step past `least` that held in `held` repeats of the `THIN_LEAD_REPEATS`.
    ThinLead { held: usize, least: f64 },
}

impl MixVerdict {
    /// "PostgreSQL", "MongoDB", "no clear winner" or "not database-limited", and "(unstable)"
    /// when it is.
    pub fn headline(&self) -> String {
        let nobody = if self.database_limited { "no clear winner" } else { "not database-limited" };
        let who = self.winner.as_ref().map_or(nobody.to_owned(), |t| t.label.clone());
        if self.stable { who } else { format!("{who} (unstable)") }
    }

    /// Target `name`'s repeats' maximum passing rates.
    pub fn rates_of(&self, name: &str) -> &[f64] {
        values_of(&self.rates, name)
    }

    /// Target `name`'s repeats' CPU capacities.
    pub fn capacities_of(&self, name: &str) -> &[f64] {
        values_of(&self.capacities, name)
    }
}

/// Target `name`'s values in a per-target list (none when it is not there).
fn values_of<'a>(per_target: &'a [(TargetInfo, Vec<f64>)], name: &str) -> &'a [f64] {
    per_target.iter().find(|(t, _)| t.name == name).map_or(&[], |(_, v)| v.as_slice())
}

/// A repeat's maximum passing rate for `target`, when it was measured.
fn max_rate(repeat: &RepeatResult, target: &TargetInfo) -> Option<f64> {
    repeat.targets.get(&target.name).map(|x| f64::from(x.max_rate.rate))
}

/// "1500" or "1500–1600" with `decimals` places: the values' lowest to highest.
fn range_text(values: &[f64], decimals: usize) -> String {
    let (low, high) = span(values);
    if format!("{low:.decimals$}") == format!("{high:.decimals$}") {
        format!("{low:.decimals$}")
    } else {
        format!("{low:.decimals$}–{high:.decimals$}")
    }
}

/// "PostgreSQL 1500–1600, MongoDB 1100": every target's range.
fn ranges(rates: &[(TargetInfo, Vec<f64>)]) -> String {
    rates.iter().map(|(t, runs)| format!("{} {}", t.label, range_text(runs, 0))).collect::<Vec<_>>().join(", ")
}

/// Per counted repeat, each target's value (`value` of the repeat and target, when measured).
fn per_repeat(
    counted: &[&RepeatResult],
    targets: &[TargetInfo],
    value: impl Fn(&RepeatResult, &TargetInfo) -> Option<f64>,
) -> Vec<BTreeMap<String, f64>> {
    counted.iter().map(|r| targets.iter().filter_map(|t| Some((t.name.clone(), value(r, t)?))).collect()).collect()
}

/// Each target's values over the repeats, in the round's order.
fn by_target(targets: &[TargetInfo], per_repeat: &[BTreeMap<String, f64>]) -> Vec<(TargetInfo, Vec<f64>)> {
    targets.iter().map(|t| (t.clone(), per_repeat.iter().filter_map(|v| v.get(&t.name).copied()).collect())).collect()
}

/// A database's CPU per request at the round's first step, in microseconds: the same offered rate
/// in every repeat, so what moves it between repeats is the machine or the database's state.
fn first_step_cpu_us(repeat: &RepeatResult, target: &TargetInfo) -> Option<f64> {
    let step = repeat.targets.get(&target.name)?.steps.first()?;
    let cpu = repeat.cpu.steps.iter().find(|c| c.step == step.step)?;
    let cores = cpu.databases.get(&target.database)?.cores?;
    (step.achieved_rate > 0.0 && cores > 0.0).then(|| cores / step.achieved_rate * 1e6)
}

fn span(values: &[f64]) -> (f64, f64) {
    (values.iter().copied().fold(f64::INFINITY, f64::min), values.iter().copied().fold(f64::NEG_INFINITY, f64::max))
}

/// Every value within `share` of the values' median (false for fewer than two).
fn steady(values: &[f64], share: f64) -> bool {
    values.len() >= 2 && median(values).is_some_and(|m| m > 0.0 && values.iter().all(|v| (v / m - 1.0).abs() <= share))
}

/// Why `spreading`'s rates spread, from their own CPU figures, or `None` without them. A target's
/// rate moved with what one request cost when its rate times its CPU per request at the first step
/// held within ±15% from repeat to repeat; when that is so and every database's cost moved
/// together (their ratio within ±10%), the shared machine was faster in some repeats than in
/// others. Otherwise the cost does not account for the spread, and the words say so.
fn why_spread(
    counted: &[&RepeatResult],
    targets: &[TargetInfo],
    rate_runs: &[BTreeMap<String, f64>],
    spreading: &[&TargetInfo],
) -> Option<String> {
    let cpu = per_repeat(counted, targets, first_step_cpu_us);
    let costs = by_target(targets, &cpu);
    if costs.iter().any(|(_, v)| v.len() < 2) || targets.len() < 2 {
        return None;
    }
    let words: Vec<String> = costs.iter().map(|(t, v)| format!("{} {} µs", t.label, range_text(v, 0))).collect();
    let explained = |target: &TargetInfo| {
        let work: Vec<f64> = rate_runs
            .iter()
            .zip(&cpu)
            .filter_map(|(rates, costs)| Some(rates.get(&target.name)? * costs.get(&target.name)?))
            .collect();
        steady(&work, MIN_DIFFERENCE)
    };
    let together = (1..targets.len()).all(|k| steady(&paired_ratios(&cpu, &targets[0].name, &targets[k].name), 0.1))
        && costs.iter().all(|(_, v)| {
            let (low, high) = span(v);
            high / low > 1.0 + MIN_DIFFERENCE
        });
    let names = spreading.iter().map(|t| t.label.as_str()).collect::<Vec<_>>().join(" and ");
    Some(if spreading.iter().all(|t| explained(t)) && together {
        format!(
            "{names}'s rate moved with its CPU per request at the first step, and every database's moved together ({}): the shared machine ran faster in some repeats than in others, which the comparison within each repeat cancels",
            words.join(", ")
        )
    } else if spreading.iter().all(|t| explained(t)) {
        format!("{names}'s rate moved with its own CPU per request at the first step ({})", words.join(", "))
    } else {
        format!(
            "the CPU per request at the first step ({}) does not account for {names}'s spread: latency, not CPU per request, moved",
            words.join(", ")
        )
    })
}

/// "1, 3": repeat numbers in words.
fn list(repeats: &[u32]) -> String {
    repeats.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")
}

/// The target with the highest median of `rates` (the first of equals), if any has one.
fn leader_of(rates: &[(TargetInfo, Vec<f64>)]) -> Option<TargetInfo> {
    // The first of equals: `max_by` keeps the last, so look from the end.
    rates
        .iter()
        .rev()
        .filter_map(|(t, v)| Some((t, median(v)?)))
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(t, _)| t.clone())
}

/// Whether `target`'s own database stopped it in more than half of the counted repeats in which it
/// failed (`None`: it never failed, so its rate is a lower bound), and what stopped it, in words
/// ("database ×1, not CPU ×2").
fn stopped_by_database(counted: &[&RepeatResult], target: &TargetInfo) -> Option<(bool, String)> {
    let counts = limit_counts(counted.iter().map(|r| &r.cpu), &target.name);
    let failed: usize = counts.values().sum();
    let database = counts.get("database").copied().unwrap_or(0);
    let words = counts.iter().map(|(kind, n)| format!("{kind} ×{n}")).collect::<Vec<_>>().join(", ");
    (failed > 0).then_some((database * 2 > failed, words))
}

/// Per counted repeat, each target's rate as the ratios within a repeat compare it: a target that
/// failed the staircase's first rate (the repeat's own, else `plan`'s) counts at that rate: it did less, so a lead over it
/// is at least that (not the leader's rate over 1).
pub fn compared_rates(
    counted: &[&RepeatResult],
    targets: &[TargetInfo],
    plan: &RatePlan,
) -> Vec<BTreeMap<String, f64>> {
    let first = |r: &RepeatResult| f64::from(r.plan.as_ref().unwrap_or(plan).start_rate.max(1));
    per_repeat(counted, targets, |r, t| max_rate(r, t).map(|v| if v > 0.0 { v } else { first(r) }))
}

/// Whether the comparison itself is unsure, for deciding on another repeat: the leader's rate over
/// another target's, within each counted repeat (`compared_rates` on `plan`), spreads more than
/// `TOLERANCE` around its median (in words). Rates that spread together (the machine's speed)
/// leave it settled.
pub fn comparison_unsettled(counted: &[&RepeatResult], targets: &[TargetInfo], plan: &RatePlan) -> Option<String> {
    let runs = compared_rates(counted, targets, plan);
    let leader = leader_of(&by_target(targets, &runs))?;
    targets.iter().filter(|t| t.name != leader.name).find_map(|other| {
        let ratios = paired_ratios(&runs, &leader.name, &other.name);
        (!within_tolerance(&ratios)).then(|| {
            format!(
                "within each repeat {}'s rate over {}'s ({}) spread more than ±{:.0}% around its median",
                leader.label,
                other.label,
                ratios.iter().map(|r| format!("{r:.2}")).collect::<Vec<_>>().join(", "),
                TOLERANCE * 100.0
            )
        })
    })
}

/// Whether a winner would be named on a thin lead, for deciding on another repeat: within every
/// counted repeat the leader's rate over another target's (`compared_rates` on `plan`) reached the
/// least difference, but in some repeat by less than one step of the staircase beyond it, so one
/// step of either target in that repeat would have named nobody (in words). Three repeats that
/// each pass a threshold by a step name a winner in some runs and none in others (docs/fairness.md,
/// "a lead of one step"); more repeats decide it.
pub fn lead_thin(counted: &[&RepeatResult], targets: &[TargetInfo], plan: &RatePlan) -> Option<String> {
    let runs = compared_rates(counted, targets, plan);
    let leader = leader_of(&by_target(targets, &runs))?;
    let least = least_difference_of(plan);
    targets.iter().filter(|t| t.name != leader.name).find_map(|other| {
        let ratios = paired_ratios(&runs, &leader.name, &other.name);
        one_step_past(&ratios, least, plan).then(|| thin_words(&leader, other, &ratios, least))
    })
}

/// Every ratio (a leader's rate over another's, within each repeat) reaches `1 + least`, the
/// lowest by less than one step of `plan`'s staircase beyond it.
fn one_step_past(ratios: &[f64], least: f64, plan: &RatePlan) -> bool {
    let lowest = ratios.iter().copied().fold(f64::INFINITY, f64::min);
    let step = 1.0 + coarsest_step(plan);
    !ratios.is_empty() && lowest >= 1.0 + least - 1e-9 && lowest < (1.0 + least) * step - 1e-9
}

/// Why a lead is thin, in words.
fn thin_words(leader: &TargetInfo, other: &TargetInfo, ratios: &[f64], least: f64) -> String {
    format!(
        "within each repeat {}'s rate over {}'s ({}) passed the least difference ({:.0}%) by less than one step of the staircase in some repeat: a lead that thin names a winner in some runs and none in others",
        leader.label,
        other.label,
        ratios.iter().map(|r| format!("{r:.2}")).collect::<Vec<_>>().join(", "),
        least * 100.0
    )
}

pub fn judge(round: &RoundResult) -> MixVerdict {
    let counted: Vec<&RepeatResult> = round.repeats.iter().filter(|r| r.counted()).collect();
    let targets = round.targets();
    let rate_runs = per_repeat(&counted, &targets, max_rate);
    let compared = compared_rates(&counted, &targets, &round.plan);
    let capacity_runs = per_repeat(&counted, &targets, |r, t| capacity::of_repeat(r, t).map(|c| c.rate));
    let rates = by_target(&targets, &rate_runs);
    let capacities = by_target(&targets, &capacity_runs);
    let mut reasons = Vec::new();
    for repeat in &round.repeats {
        if let Some(why) = repeat.left_out() {
            reasons.push(format!("repeat {} left out: {why}", repeat.index));
        }
    }
    let mut spreading = Vec::new();
    for (target, runs) in &rates {
        if !within_tolerance(runs) {
            spreading.push(target);
            reasons.push(format!(
                "{}'s repeats reached {} req/s, more than ±{:.0}% around their median",
                target.label,
                range_text(runs, 0),
                TOLERANCE * 100.0
            ));
        }
    }
    let stable = spreading.is_empty();
    if !stable && let Some(why) = why_spread(&counted, &targets, &rate_runs, &spreading) {
        reasons.push(why);
    }
    let leader = leader_of(&rates);
    let least = least_difference(round);
    let not_by_database: Vec<(&TargetInfo, String)> = targets
        .iter()
        .filter_map(|t| match stopped_by_database(&counted, t) {
            Some((false, words)) => Some((t, words)),
            _ => None,
        })
        .collect();
    for (target, words) in &not_by_database {
        reasons.push(format!(
            "{}'s own database did not stop it in most repeats ({words}): its rate is what the rest of the machine allowed",
            target.label
        ));
    }
    let mut paired = Vec::new();
    let mut winner = leader.clone().filter(|_| targets.len() >= 2);
    let mut doubt = None;
    // The first doubt is the one a sentence gives.
    let mut doubt_of = |d: Doubt| {
        doubt.get_or_insert(d);
        None
    };
    if let Some(leader) = &leader {
        for other in targets.iter().filter(|t| t.name != leader.name) {
            let ratios = paired_ratios(&compared, &leader.name, &other.name);
            let behind: Vec<u32> = counted
                .iter()
                .zip(&compared)
                .filter(|(_, v)| v.get(&leader.name).zip(v.get(&other.name)).is_some_and(|(l, o)| l < o))
                .map(|(r, _)| r.index)
                .collect();
            let typical = median(&ratios);
            // Repeats in which the leader was not ahead by the least difference: a winner must be,
            // in every repeat (a ratio near the threshold then names no winner in any run,
            // rather than one in some runs and none in others).
            let short: Vec<u32> = counted
                .iter()
                .zip(&compared)
                .filter(|(_, v)| ratio_in(v, &leader.name, &other.name).is_some_and(|r| r < 1.0 + least - 1e-9))
                .map(|(r, _)| r.index)
                .collect();
            let of_medians = median(values_of(&rates, &leader.name))
                .zip(median(values_of(&rates, &other.name)))
                .map(|(high, low)| if high == low { 1.0 } else { high / low.max(1.0) });
            if ratios.is_empty() {
                reasons.push(format!("no repeat measured both {} and {}", leader.label, other.label));
                winner = doubt_of(Doubt::NoPair);
            } else if !behind.is_empty() {
                reasons.push(format!(
                    "{} passed a higher rate than {} in repeat {} (within each repeat {}'s rate over {}'s: {})",
                    other.label,
                    leader.label,
                    list(&behind),
                    leader.label,
                    other.label,
                    range_text(&ratios, 2)
                ));
                winner = doubt_of(Doubt::Behind(behind));
            } else if !short.is_empty() {
                reasons.push(format!(
                    "within each repeat {}'s rate over {}'s was {} (median {:.2}): less than {:.0}% apart in repeat {} ({} req/s)",
                    leader.label,
                    other.label,
                    range_text(&ratios, 2),
                    typical.unwrap_or(1.0),
                    least * 100.0,
                    list(&short),
                    ranges(&rates)
                ));
                winner = doubt_of(Doubt::Close { repeats: short, least });
            } else if of_medians.is_none_or(|m| m < 1.0 + least - 1e-9) {
                reasons.push(format!(
                    "the medians differ by less than {:.0}% ({:.2}; {} req/s)",
                    least * 100.0,
                    of_medians.unwrap_or(1.0),
                    ranges(&rates)
                ));
                winner = doubt_of(Doubt::MediansClose { least });
            } else if not_by_database.iter().any(|(t, _)| t.name == other.name) {
                winner = doubt_of(Doubt::NotDatabaseLimited);
            } else {
                let by_capacity = paired_ratios(&capacity_runs, &leader.name, &other.name);
                if median(&by_capacity).is_some_and(|m| m < 1.0) {
                    reasons.push(format!(
                        "the maximum passing rates favour {} but the CPU capacities {}",
                        leader.label, other.label
                    ));
                    winner = doubt_of(Doubt::CapacityDisagrees);
                } else if counted.len() < THIN_LEAD_REPEATS && one_step_past(&ratios, least, &round.plan) {
                    let thin = thin_words(leader, other, &ratios, least);
                    reasons.push(format!("{thin}; it held in {} of the {THIN_LEAD_REPEATS} it needs", counted.len()));
                    winner = doubt_of(Doubt::ThinLead { held: counted.len(), least });
                }
            }
            paired.push((other.clone(), ratios));
        }
    }
    // With every repeat left out, nothing says a database set the rates.
    let database_limited = not_by_database.is_empty() && !counted.is_empty();
    MixVerdict { winner, database_limited, stable, reasons, rates, capacities, paired, doubt }
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

    #[test]
    fn paired_ratios_compare_within_each_repeat() {
        let runs: Vec<BTreeMap<String, f64>> = [(630.0, 630.0), (500.0, 400.0), (700.0, 0.0), (0.0, 0.0)]
            .iter()
            .map(|(a, b)| BTreeMap::from([("a".to_owned(), *a), ("b".to_owned(), *b)]))
            .chain([BTreeMap::from([("a".to_owned(), 9.0)])])
            .collect();
        assert_eq!(
            paired_ratios(&runs, "a", "b"),
            [1.0, 1.25, 700.0, 1.0],
            "a tie is 1, a repeat without b is left out"
        );
    }
}
