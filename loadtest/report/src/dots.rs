//! The chart of a report's first screen: one row per mix, every repeat's maximum passing rate as a
//! dot per target (hollow: the target never failed, so the rate is a lower bound; faint: a repeat
//! left out for stalls of the machine), a line over each target's repeats with a tick at their
//! median, and the verdict at the end of the row. The axis is logarithmic when the rates span more
//! than five times, else linear from 0, and says which. 960 px wide, so it reads at a glance.

use crate::answer;
use crate::charts;
use crate::format;
use orders_bench_model::mix_verdict::{self, MixVerdict};
use orders_bench_model::result::RoundResult;
use orders_bench_model::stats::median;
use std::fmt::Write as _;

const WIDTH: f64 = 960.0;
const LEFT: f64 = 180.0;
const RIGHT: f64 = 170.0;
const TOP: f64 = 58.0;
const ROW: f64 = 54.0;
const BOTTOM: f64 = 46.0;
/// The rates' highest over their lowest from which the axis is logarithmic.
const LOG_FROM: f64 = 5.0;

fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// The 1, 2, 5 × 10ⁿ steps from the one at or below `low` to the one at or above `high`.
fn log_ticks(low: f64, high: f64) -> Vec<f64> {
    let start = 10f64.powf(low.max(1.0).log10().floor());
    let steps = (0..30).flat_map(|p| [1.0, 2.0, 5.0].map(|m| m * start * 10f64.powi(p)));
    let mut ticks = Vec::new();
    for tick in steps {
        if tick <= low {
            ticks.clear();
        }
        ticks.push(tick);
        if tick >= high {
            break;
        }
    }
    ticks
}

/// 0 to a round number at or above `high`, in about five steps.
fn linear_ticks(high: f64) -> Vec<f64> {
    let raw = high.max(1.0) / 5.0;
    let power = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0].iter().map(|m| m * power).find(|s| *s >= raw).unwrap_or(10.0 * power);
    (0..=(high.max(1.0) / step).ceil() as usize).map(|i| i as f64 * step).collect()
}

struct Axis {
    ticks: Vec<f64>,
    log: bool,
}

impl Axis {
    fn of(values: &[f64]) -> Self {
        let low = values.iter().copied().filter(|v| *v > 0.0).fold(f64::INFINITY, f64::min);
        let high = values.iter().copied().fold(0.0, f64::max);
        if low.is_finite() && high / low > LOG_FROM {
            Self { ticks: log_ticks(low, high), log: true }
        } else {
            Self { ticks: linear_ticks(high), log: false }
        }
    }

    fn x(&self, value: f64) -> f64 {
        let (first, last) = (self.ticks[0], self.ticks[self.ticks.len() - 1]);
        let f = if self.log {
            (value.max(first).log10() - first.log10()) / (last.log10() - first.log10())
        } else {
            (value - first) / (last - first)
        };
        LEFT + f.clamp(0.0, 1.0) * (WIDTH - LEFT - RIGHT)
    }
}

/// One dot: its rate, repeat number, and whether it is a lower bound or left out.
struct Dot {
    rate: f64,
    repeat: u32,
    never_failed: bool,
    left_out: bool,
}

fn dots(round: &RoundResult, target: &str) -> Vec<Dot> {
    round
        .repeats
        .iter()
        .filter_map(|r| {
            let t = r.targets.get(target)?;
            Some(Dot {
                rate: f64::from(t.max_rate.rate),
                repeat: r.index,
                never_failed: t.max_rate.first_failed_rate.is_none(),
                left_out: !r.counted(),
            })
        })
        .collect()
}

/// The verdict at the end of a row: the winner and its ratio (the median within the repeats, "≥"
/// when the winner never failed in some), or the table's words; "unstable" goes on a line below.
fn verdict_text(round: &RoundResult, verdict: &MixVerdict) -> (String, &'static str) {
    match (&verdict.winner, verdict.paired.first()) {
        (Some(winner), Some((_, ratios))) => {
            let index = verdict.rates.iter().position(|(t, _)| t.name == winner.name).unwrap_or(0);
            let ratio = median(ratios).unwrap_or(1.0);
            let at_least = if answer::never_failed(round, &winner.name) { "≥ " } else { "" };
            (format!("{} {at_least}{ratio:.2}×", winner.label), charts::color(index))
        }
        _ if verdict.database_limited => ("no clear winner".into(), "#555"),
        _ => ("not database-limited".into(), "#555"),
    }
}

pub fn chart(rounds: &[&RoundResult]) -> String {
    let targets = rounds.first().map(|r| r.targets()).unwrap_or_default();
    let all: Vec<f64> = rounds
        .iter()
        .flat_map(|r| targets.iter().flat_map(|t| dots(r, &t.name)).map(|d| d.rate).collect::<Vec<_>>())
        .collect();
    let axis = Axis::of(&all);
    let height = TOP + ROW * rounds.len() as f64 + BOTTOM;
    let bottom = TOP + ROW * rounds.len() as f64;
    let mut svg = format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="answer-dots" viewBox="0 0 {WIDTH} {height}" width="{WIDTH}" height="{height}" font-family="sans-serif" font-size="12"><rect x="0" y="0" width="{WIDTH}" height="{height}" fill="white"/><text x="{}" y="20" font-size="15" text-anchor="middle">Maximum passing rate of every repeat, per mix and target</text>"#,
        WIDTH / 2.0
    );
    legend(&mut svg, &targets, rounds);
    for i in 0..rounds.len() {
        let top = TOP + ROW * i as f64;
        if i % 2 == 0 {
            let _ = write!(svg, r##"<rect x="0" y="{top}" width="{WIDTH}" height="{ROW}" fill="#f6f8fa"/>"##);
        }
    }
    for tick in &axis.ticks {
        let x = axis.x(*tick);
        let _ = write!(
            svg,
            r##"<line x1="{x:.1}" y1="{TOP}" x2="{x:.1}" y2="{bottom}" stroke="#ddd"/><text x="{x:.1}" y="{:.1}" text-anchor="middle">{}</text>"##,
            bottom + 15.0,
            format::count(*tick)
        );
    }
    let _ = write!(
        svg,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">maximum passing rate, req/s per target ({} scale)</text>"#,
        LEFT + (WIDTH - LEFT - RIGHT) / 2.0,
        bottom + 36.0,
        if axis.log { "logarithmic" } else { "linear" }
    );
    for (i, round) in rounds.iter().enumerate() {
        row(&mut svg, &axis, round, &targets, TOP + ROW * (i as f64 + 0.5));
    }
    svg.push_str("</svg>\n");
    svg
}

fn legend(svg: &mut String, targets: &[orders_bench_model::target::TargetInfo], rounds: &[&RoundResult]) {
    let mut x = LEFT;
    let y = 42.0;
    for (k, target) in targets.iter().enumerate() {
        let _ = write!(
            svg,
            r#"<circle cx="{x:.1}" cy="{:.1}" r="5" fill="{}"/><text x="{:.1}" y="{y}">{}</text>"#,
            y - 4.0,
            charts::color(k),
            x + 9.0,
            escape(&target.label)
        );
        x += 30.0 + 7.0 * target.label.len() as f64;
    }
    let _ = write!(
        svg,
        r##"<circle cx="{x:.1}" cy="{:.1}" r="5" fill="white" stroke="#555" stroke-width="1.5"/><text x="{:.1}" y="{y}">never failed (at least)</text>"##,
        y - 4.0,
        x + 9.0
    );
    x += 170.0;
    let _ = write!(
        svg,
        r##"<line x1="{x:.1}" y1="{:.1}" x2="{x:.1}" y2="{:.1}" stroke="#555" stroke-width="2"/><text x="{:.1}" y="{y}">median</text>"##,
        y - 11.0,
        y + 3.0,
        x + 6.0
    );
    if rounds.iter().any(|r| r.repeats.iter().any(|r| !r.counted())) {
        let _ = write!(
            svg,
            r##"<text x="{:.1}" y="{y}" fill="#777">faint: left out (stalls, or other processes)</text>"##,
            x + 70.0
        );
    }
}

fn row(
    svg: &mut String,
    axis: &Axis,
    round: &RoundResult,
    targets: &[orders_bench_model::target::TargetInfo],
    center: f64,
) {
    let name = answer::mix_name(round);
    let (first, rest) = name.split_once(" (").map_or((name.as_str(), None), |(a, b)| (a, Some(b)));
    let _ = write!(
        svg,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="end" font-weight="bold">{}</text>"#,
        LEFT - 14.0,
        center + if rest.is_some() { -2.0 } else { 4.0 },
        escape(first)
    );
    if let Some(rest) = rest {
        let _ = write!(
            svg,
            r##"<text x="{:.1}" y="{:.1}" text-anchor="end" font-size="10" fill="#666">{}</text>"##,
            LEFT - 14.0,
            center + 12.0,
            escape(rest.trim_end_matches(')'))
        );
    }
    let verdict = mix_verdict::judge(round);
    let (text, color) = verdict_text(round, &verdict);
    let _ = write!(
        svg,
        r#"<text x="{:.1}" y="{:.1}" fill="{color}" font-weight="bold">{}</text>"#,
        WIDTH - RIGHT + 14.0,
        center + if verdict.stable { 4.0 } else { -2.0 },
        escape(&text)
    );
    if !verdict.stable {
        let _ = write!(
            svg,
            r##"<text x="{:.1}" y="{:.1}" font-size="10" fill="#c0392b">unstable: spread &gt; ±{:.0}%</text>"##,
            WIDTH - RIGHT + 14.0,
            center + 12.0,
            mix_verdict::TOLERANCE * 100.0
        );
    }
    for (k, target) in targets.iter().enumerate() {
        let color = charts::color(k);
        let y = center + (k as f64 - (targets.len() as f64 - 1.0) / 2.0) * 16.0;
        let dots = dots(round, &target.name);
        let counted: Vec<f64> = dots.iter().filter(|d| !d.left_out).map(|d| d.rate).collect();
        let low = counted.iter().copied().fold(f64::INFINITY, f64::min);
        let high = counted.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        if low.is_finite() && high > low {
            let _ = write!(
                svg,
                r#"<line x1="{:.1}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="{color}" stroke-width="2" opacity="0.45"/>"#,
                axis.x(low),
                axis.x(high)
            );
        }
        if let Some(m) = median(&counted) {
            let x = axis.x(m);
            let _ = write!(
                svg,
                r#"<line x1="{x:.1}" y1="{:.1}" x2="{x:.1}" y2="{:.1}" stroke="{color}" stroke-width="2"/>"#,
                y - 8.0,
                y + 8.0
            );
        }
        for (n, dot) in dots.iter().enumerate() {
            let fill = if dot.never_failed { "white" } else { color };
            let _ = write!(
                svg,
                r#"<circle class="dot" cx="{:.1}" cy="{:.1}" r="5" fill="{fill}" stroke="{color}" stroke-width="1.5" opacity="{}"><title>{}, {}, repeat {}: {} req/s{}</title></circle>"#,
                axis.x(dot.rate),
                y + (n as f64 - (dots.len() as f64 - 1.0) / 2.0) * 3.0,
                if dot.left_out { 0.3 } else { 0.85 },
                escape(&round.name),
                escape(&target.label),
                dot.repeat,
                format::count(dot.rate),
                if dot.never_failed { " (never failed: at least)" } else { "" }
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_log_axis_runs_in_one_two_five_steps_around_the_rates() {
        assert_eq!(log_ticks(810.0, 9500.0), [500.0, 1000.0, 2000.0, 5000.0, 10_000.0]);
        assert_eq!(log_ticks(100.0, 1000.0), [100.0, 200.0, 500.0, 1000.0]);
        assert_eq!(log_ticks(2100.0, 2100.0 * 6.0), [2000.0, 5000.0, 10_000.0, 20_000.0]);
        assert!(Axis::of(&[810.0, 9500.0]).log);
        assert!(!Axis::of(&[810.0, 1500.0]).log, "less than five times apart: linear");
        assert_eq!(linear_ticks(1500.0), [0.0, 500.0, 1000.0, 1500.0]);
    }
}
