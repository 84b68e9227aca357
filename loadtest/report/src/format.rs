//! How numbers read in the reports: bytes in B/KiB/MiB/GiB, counts with thousands separators,
//! rates with the `≥` of an unsaturated target, a dash for what was not measured, and several
//! repeats' values joined by " / ".

use orders_bench_model::result::RoundResult;
use orders_bench_model::verdict::RateSummary;

pub const NONE: &str = "–";

pub fn bytes(value: f64) -> String {
    let sign = if value < 0.0 { "-" } else { "" };
    let v = value.abs();
    let (unit, div) = [("GiB", 1024.0 * 1024.0 * 1024.0), ("MiB", 1024.0 * 1024.0), ("KiB", 1024.0)]
        .into_iter()
        .find(|(_, d)| v >= *d)
        .unwrap_or(("B", 1.0));
    if div == 1.0 { format!("{sign}{v:.0} B") } else { format!("{sign}{:.1} {unit}", v / div) }
}

pub fn opt_bytes(value: Option<f64>) -> String {
    value.map_or_else(|| NONE.into(), bytes)
}

/// 1234567 → "1,234,567".
pub fn count(value: f64) -> String {
    let rounded = value.round() as i64;
    let digits = rounded.unsigned_abs().to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    if rounded < 0 { format!("-{out}") } else { out }
}

pub fn opt_count(value: Option<f64>) -> String {
    value.map_or_else(|| NONE.into(), count)
}

pub fn percent(share: Option<f64>) -> String {
    share.map_or_else(|| NONE.into(), |s| format!("{:.1}%", s * 100.0))
}

pub fn ms(value: Option<f64>) -> String {
    value.map_or_else(|| NONE.into(), |v| if v >= 100.0 { format!("{v:.0}") } else { format!("{v:.1}") })
}

pub fn seconds(value: Option<f64>, digits: usize) -> String {
    value.map_or_else(|| NONE.into(), |v| format!("{v:.digits$}"))
}

/// "before → after (+delta)".
pub fn growth(before: Option<f64>, after: Option<f64>) -> String {
    match (before, after) {
        (Some(b), Some(a)) => {
            let delta = a - b;
            let sign = if delta >= 0.0 { "+" } else { "" };
            format!("{} → {} ({sign}{})", bytes(b), bytes(a), bytes(delta))
        }
        _ => NONE.into(),
    }
}

/// The max-rate cell: "700 req/s (600–800, 3 runs)", "≥ 1,500 req/s", "< 100 req/s".
pub fn max_rate(summary: Option<&RateSummary>, start_rate: u32) -> String {
    let Some(s) = summary else { return NONE.into() };
    let median = if s.median == 0.0 {
        format!("< {} req/s", count(f64::from(start_rate)))
    } else {
        let bound = if s.lower_bound { "≥ " } else { "" };
        format!("{bound}{} req/s", count(s.median))
    };
    if s.runs.len() > 1 {
        format!("{median} ({}–{}, {} runs)", count(f64::from(s.min)), count(f64::from(s.max)), s.runs.len())
    } else {
        median
    }
}

/// `a` / `b` of the medians (labelled for when only one passed); a bound when either is a bound or
/// zero.
pub fn ratio(a: Option<&RateSummary>, b: Option<&RateSummary>, labels: [&str; 2]) -> String {
    let (Some(a), Some(b)) = (a, b) else { return NONE.into() };
    match (a.median, b.median) {
        (x, y) if y > 0.0 && x > 0.0 => {
            let approx = if a.lower_bound || b.lower_bound { "~" } else { "" };
            format!("{approx}{:.2}", x / y)
        }
        (x, y) if x == y => NONE.into(),
        (_, 0.0) => format!("{} only", labels[0]),
        _ => format!("{} only", labels[1]),
    }
}

/// A round's ratio column: its first target's median over its second's.
pub fn round_ratio(round: &RoundResult) -> String {
    match round.targets().as_slice() {
        [a, b, ..] => ratio(round.max_rate.get(&a.name), round.max_rate.get(&b.name), [&a.label, &b.label]),
        _ => NONE.into(),
    }
}

/// "PostgreSQL / MongoDB": what the ratio column divides.
pub fn ratio_words(round: &RoundResult) -> String {
    let targets = round.targets();
    targets.iter().take(2).map(|t| t.label.as_str()).collect::<Vec<_>>().join(" / ")
}

/// Per-repeat values in one cell.
pub fn joined(values: impl IntoIterator<Item = String>) -> String {
    let values: Vec<String> = values.into_iter().collect();
    if values.iter().all(|v| v == &values[0]) && !values.is_empty() { values[0].clone() } else { values.join(" / ") }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(median: f64, runs: &[u32], lower_bound: bool) -> RateSummary {
        RateSummary {
            median,
            min: *runs.iter().min().unwrap_or(&0),
            max: *runs.iter().max().unwrap_or(&0),
            runs: runs.to_vec(),
            lower_bound,
        }
    }

    #[test]
    fn numbers_read_well() {
        assert_eq!(bytes(634.0), "634 B");
        assert_eq!(bytes(3.5 * 1024.0 * 1024.0), "3.5 MiB");
        assert_eq!(bytes(-2048.0), "-2.0 KiB");
        assert_eq!(count(1_234_567.0), "1,234,567");
        assert_eq!(count(-1000.0), "-1,000");
        assert_eq!(growth(Some(1024.0), Some(3072.0)), "1.0 KiB → 3.0 KiB (+2.0 KiB)");
        assert_eq!(joined(["1".to_string(), "1".to_string()]), "1");
        assert_eq!(joined(["1".to_string(), "2".to_string()]), "1 / 2");
    }

    #[test]
    fn max_rates_say_when_they_are_bounds() {
        assert_eq!(max_rate(Some(&summary(700.0, &[600, 700, 800], false)), 100), "700 req/s (600–800, 3 runs)");
        assert_eq!(max_rate(Some(&summary(1500.0, &[1500], true)), 100), "≥ 1,500 req/s");
        assert_eq!(max_rate(Some(&summary(0.0, &[0], false)), 100), "< 100 req/s");
        let labels = ["PostgreSQL", "MongoDB"];
        let ratio = |a: &RateSummary, b: &RateSummary| ratio(Some(a), Some(b), labels);
        assert_eq!(ratio(&summary(600.0, &[600], false), &summary(400.0, &[400], false)), "1.50");
        assert_eq!(ratio(&summary(600.0, &[600], true), &summary(400.0, &[400], false)), "~1.50");
        assert_eq!(ratio(&summary(600.0, &[600], false), &summary(0.0, &[0], false)), "PostgreSQL only");
    }
}
