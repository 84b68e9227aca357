//! The answer in full, under the first screen's sentences (`answer`): per mix, both databases'
//! maximum passing rates with every repeat shown, the capacity their CPU allows beside them
//! (`model::capacity`), the ratio, the leader's rate over the other's within each repeat, and a
//! winner named only when that comparison is beyond its spread (`model::mix_verdict`), with the
//! words that say why not, or why a row is unstable. Its chart, folded with the reasoning, draws
//! the same with the capacities: one column per mix and database, a dot per repeat, a bar at the
//! median, a diamond at the median capacity.

use super::doc::Block;
use super::format::{self, NONE};
use crate::charts;
use orders_bench_model::mix_verdict::{self, MixVerdict};
use orders_bench_model::result::RoundResult;
use orders_bench_model::stats::median;
use std::fmt::Write as _;

fn runs_text(values: &[f64]) -> String {
    if values.is_empty() {
        return NONE.into();
    }
    values.iter().map(|v| format::count(*v)).collect::<Vec<_>>().join(" / ")
}

/// "PostgreSQL ÷ MongoDB 1.00 / 1.25 / 1.26": the leader's rate over each other target's, repeat
/// by repeat (what the winner is judged on).
fn within_repeats(verdict: &MixVerdict) -> String {
    let Some((leader, _)) = verdict.rates.iter().find(|(t, _)| verdict.paired.iter().all(|(o, _)| o.name != t.name))
    else {
        return NONE.into();
    };
    let cells: Vec<String> = verdict
        .paired
        .iter()
        .filter(|(_, ratios)| !ratios.is_empty())
        .map(|(other, ratios)| {
            let each: Vec<String> = ratios.iter().map(|r| format!("{r:.2}")).collect();
            format!("{} ÷ {} {}", leader.label, other.label, each.join(" / "))
        })
        .collect();
    if cells.is_empty() { NONE.into() } else { cells.join("; ") }
}

/// The table: mix | per database its repeats and capacity | ratio | answer | why.
pub fn table(rounds: &[&RoundResult]) -> Block {
    let rows = rounds
        .iter()
        .map(|round| {
            let verdict = mix_verdict::judge(round);
            let mut row = vec![round.name.clone()];
            for target in round.targets() {
                let runs = verdict.rates_of(&target.name);
                let lower_bound = round.max_rate.get(&target.name).is_some_and(|s| s.lower_bound);
                row.push(match median(runs) {
                    Some(m) => {
                        format!("{}{} ({})", if lower_bound { "≥ " } else { "" }, format::count(m), runs_text(runs))
                    }
                    None => NONE.into(),
                });
                row.push(median(verdict.capacities_of(&target.name)).map_or(NONE.into(), format::count));
            }
            row.push(format::round_ratio(round));
            row.push(within_repeats(&verdict));
            row.push(verdict.headline());
            row.push(if verdict.reasons.is_empty() { NONE.into() } else { verdict.reasons.join("; ") });
            row
        })
        .collect();
    let mut header = vec!["mix".to_owned()];
    for target in rounds.first().map(|r| r.targets()).unwrap_or_default() {
        header.push(format!("{} max rate, req/s", target.label));
        header.push(format!("{} CPU capacity", target.label));
    }
    header.extend([
        "ratio".to_owned(),
        "leader ÷ other, within each repeat".to_owned(),
        "answer".to_owned(),
        "why not clearer".to_owned(),
    ]);
    Block::Table { header, rows }
}

/// The paragraph under the table: what the columns mean.
pub fn legend() -> Block {
    Block::Paragraph(format!(
        "Max rate: the median of the repeats (every repeat in brackets); CPU capacity: what the database's CPU \
         budget would serve at the CPU one request took at its highest passing step (median over the repeats; \
         none without a budget). Both databases ran at the same moment in every repeat, so a winner is judged repeat \
         by repeat: it is named only when, within every repeat, its rate was at least {:.0}% above the other's \
         and so is the ratio of the medians (and more than one step of the \
         staircase), the capacities do not say the opposite and every target it beat was stopped by its own \
         database; a lead that clears the {:.0}% by less than one step of the staircase in some repeat must hold in \
         {} repeats (such a lead named a winner in some runs and none in others). A row says **not database-limited** when a target that failed was stopped by something else \
         (the machine, the generator, its service) in most repeats: its rate says nothing of its database. A row is **unstable** when a database's repeats spread more than ±{:.0}% around their \
         median; it says whether the CPU per request moved with them (the machine) or alone.",
        mix_verdict::MIN_DIFFERENCE * 100.0,
        mix_verdict::MIN_DIFFERENCE * 100.0,
        mix_verdict::THIN_LEAD_REPEATS,
        mix_verdict::TOLERANCE * 100.0
    ))
}

const WIDTH: f64 = 640.0;
const HEIGHT: f64 = 320.0;
const LEFT: f64 = 64.0;
const TOP: f64 = 36.0;
const BOTTOM: f64 = 44.0;

/// A log-scale dot chart: per mix a column for each database (repeats as dots, a bar at the
/// median rate, a diamond at the median capacity).
pub fn chart(rounds: &[&RoundResult]) -> String {
    let verdicts: Vec<(String, MixVerdict)> = rounds.iter().map(|r| (r.name.clone(), mix_verdict::judge(r))).collect();
    let all: Vec<f64> = verdicts
        .iter()
        .flat_map(|(_, v)| v.rates.iter().chain(&v.capacities).flat_map(|(_, x)| x.iter().copied()))
        .filter(|x| x.is_finite() && *x > 0.0)
        .collect();
    // The decades around the values; 1 to 10 when there is none (every target failed its first
    // step: an empty minimum is infinite, and the tick loop below then never ended).
    let lowest = all.iter().copied().fold(f64::INFINITY, f64::min);
    let low = if lowest.is_finite() { 10f64.powf(lowest.max(1.0).log10().floor()) } else { 1.0 };
    let high = 10f64.powf(all.iter().copied().fold(1.0, f64::max).log10().ceil()).max(low * 10.0);
    let plot_h = HEIGHT - TOP - BOTTOM;
    let y = |v: f64| TOP + (1.0 - (v.max(low).log10() - low.log10()) / (high.log10() - low.log10())) * plot_h;
    let column = (WIDTH - LEFT - 20.0) / verdicts.len().max(1) as f64;
    let mut svg = format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" height="{HEIGHT}" font-family="sans-serif" font-size="11"><rect x="0" y="0" width="{WIDTH}" height="{HEIGHT}" fill="white"/><text x="{}" y="20" font-size="14" text-anchor="middle">Maximum passing rate per repeat (dots), median (bar), CPU capacity (diamond)</text>"#,
        WIDTH / 2.0
    );
    let mut tick = low;
    while tick <= high * 1.0001 {
        let _ = write!(
            svg,
            r##"<line x1="{LEFT}" y1="{0:.1}" x2="{1:.1}" y2="{0:.1}" stroke="#eee"/><text x="{2:.1}" y="{3:.1}" text-anchor="end">{4}</text>"##,
            y(tick),
            WIDTH - 20.0,
            LEFT - 6.0,
            y(tick) + 4.0,
            format::count(tick)
        );
        tick *= 10.0;
    }
    let _ = write!(
        svg,
        r#"<text x="14" y="{0:.1}" text-anchor="middle" transform="rotate(-90 14 {0:.1})">req/s per target (log)</text>"#,
        TOP + plot_h / 2.0
    );
    for (i, (name, verdict)) in verdicts.iter().enumerate() {
        let center = LEFT + column * (i as f64 + 0.5);
        let _ = write!(
            svg,
            r#"<text x="{center:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
            HEIGHT - BOTTOM + 16.0,
            name.replace('&', "&amp;").replace('<', "&lt;")
        );
        let targets = &verdict.rates;
        for (k, (target, _)) in targets.iter().enumerate() {
            let color = charts::color(k);
            let x = center + (k as f64 - (targets.len() as f64 - 1.0) / 2.0) * column * 0.35;
            for (n, rate) in verdict.rates_of(&target.name).iter().enumerate() {
                let _ = write!(
                    svg,
                    r#"<circle cx="{:.1}" cy="{:.1}" r="4" fill="{color}" opacity="0.75"/>"#,
                    x + (n as f64 - 1.0) * 4.0,
                    y(rate.max(low))
                );
            }
            if let Some(m) = median(verdict.rates_of(&target.name)) {
                let _ = write!(
                    svg,
                    r#"<line x1="{0:.1}" y1="{1:.1}" x2="{2:.1}" y2="{1:.1}" stroke="{color}" stroke-width="3"/>"#,
                    x - 10.0,
                    y(m.max(low)),
                    x + 10.0
                );
            }
            if let Some(c) = median(verdict.capacities_of(&target.name)) {
                let (cx, cy) = (x + 14.0, y(c.max(low)));
                let _ = write!(
                    svg,
                    r#"<path d="M{0:.1} {cy:.1} L{cx:.1} {1:.1} L{2:.1} {cy:.1} L{cx:.1} {3:.1} Z" fill="white" stroke="{color}" stroke-width="1.5"/>"#,
                    cx - 5.0,
                    cy - 5.0,
                    cx + 5.0,
                    cy + 5.0
                );
            }
        }
    }
    for (k, target) in rounds.first().map(|r| r.targets()).unwrap_or_default().iter().enumerate() {
        let color = charts::color(k);
        let x = LEFT + 10.0 + k as f64 * 110.0;
        let _ = write!(
            svg,
            r#"<circle cx="{x:.1}" cy="{:.1}" r="4" fill="{color}"/><text x="{:.1}" y="{:.1}">{}</text>"#,
            TOP + 8.0,
            x + 8.0,
            TOP + 12.0,
            target.label
        );
    }
    svg.push_str("</svg>\n");
    svg
}
