//! The GIN pending list and the sequential scans of `orders` through a round, from the
//! `/diagnostics` snapshots the round took before, during (every poll) and after its load run: how
//! the pending list fills with inserts, and whether the scans start once it has (study S1's
//! finding F1), as a chart per quantity with one line per variant.

use crate::diagnostics::Snapshot as Pair;
use orders_bench_engines::postgres::snapshot::PgSnapshot;
use orders_bench_report::charts::{Chart, Point as ChartPoint, Series};
use serde::Serialize;
use std::path::Path;

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Point {
    /// Seconds after the load run began (the snapshot before it: 0).
    pub t: f64,
    pub pending_pages: Option<f64>,
    pub pending_tuples: Option<f64>,
    /// Sequential scans of `orders` since the snapshot before the run.
    pub seq_scans: Option<f64>,
}

fn read_pair(path: &Path) -> Option<Pair> {
    serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()
}

/// The points of one repeat, from its three diagnostics files (missing ones leave gaps).
pub fn read(before: &Path, polled: &Path, after: &Path) -> Vec<Point> {
    let mut pairs: Vec<Pair> = read_pair(before).into_iter().collect();
    if let Ok(text) = std::fs::read_to_string(polled) {
        pairs.extend(text.lines().filter_map(|line| serde_json::from_str::<Pair>(line).ok()));
    }
    pairs.extend(read_pair(after));
    let snapshots: Vec<(f64, PgSnapshot)> =
        pairs.iter().map(|p| (p.at_s.max(0.0), PgSnapshot::from_json(p.get("pg")))).collect();
    let base = snapshots.first().and_then(|(_, s)| s.counter(|t| t.seq_scan));
    snapshots
        .iter()
        .map(|(t, s)| Point {
            t: *t,
            pending_pages: s.pending_pages,
            pending_tuples: s.pending_tuples,
            seq_scans: s.counter(|t| t.seq_scan).zip(base).map(|(now, base)| now - base),
        })
        .collect()
}

/// Colours of up to four variants (then repeated).
const COLORS: [&str; 4] = [orders_bench_report::charts::PG_COLOR, "#c0392b", "#8e44ad", "#d68910"];

/// A chart of `value` over time, one line per (label, points).
pub fn chart(title: &str, y_label: &str, lines: &[(String, Vec<Point>)], value: fn(&Point) -> Option<f64>) -> Chart {
    let series = lines
        .iter()
        .enumerate()
        .map(|(i, (label, points))| Series {
            label: label.clone(),
            color: COLORS[i % COLORS.len()],
            points: points.iter().filter_map(|p| Some(ChartPoint { x: p.t, y: value(p)?, ok: true })).collect(),
            faint: false,
            dashed: i >= COLORS.len(),
        })
        .collect();
    Chart {
        title: title.into(),
        x_label: "seconds into the round's load run".into(),
        y_label: y_label.into(),
        log_y: false,
        series,
        reference: None,
        diagonal: false,
        marker: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnostics::samples;

    #[test]
    fn scans_count_from_the_snapshot_before_the_run() {
        let dir = std::env::temp_dir().join(format!("timeline-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let pair = |at_s, seq, pending| {
            samples::both(at_s, samples::pg(seq, 1, pending, 10), samples::mongo(10, serde_json::json!(true), "o"))
        };
        let write = |name: &str, text: String| std::fs::write(dir.join(name), text).expect("write");
        write("before.json", serde_json::to_string(&pair(0.0, 5, 0)).expect("json"));
        write(
            "polled.jsonl",
            [pair(1.0, 5, 3), pair(2.0, 9, 7)].iter().map(|p| serde_json::to_string(p).expect("json") + "\n").collect(),
        );
        let points = read(&dir.join("before.json"), &dir.join("polled.jsonl"), &dir.join("missing.json"));
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(points.len(), 3);
        assert_eq!(points.iter().map(|p| p.seq_scans).collect::<Vec<_>>(), [Some(0.0), Some(0.0), Some(4.0)]);
        assert_eq!(points[2].pending_pages, Some(7.0));
        let chart = chart("t", "y", &[("defaults".into(), points)], |p| p.pending_pages);
        assert_eq!(chart.series[0].points.len(), 3);
    }
}
