//! `doc-size`'s log-log charts: bytes written per status update (PostgreSQL's WAL, MongoDB's
//! journal) and closed-loop updates/s against the document size, with study S2's figures drawn
//! dashed beside ours; where the hybrid layout ran, its line and S2's column beside it.

use super::SizeResult;
use crate::experiment::engine::HYBRID_COLOR;
use crate::experiment::studies::{self, Figure, Reference};
use orders_bench_report::charts::{self, Chart, MONGO_COLOR, PG_COLOR, Point, Series};

const S2_PG_COLOR: &str = "#8fb3d9";
const S2_MONGO_COLOR: &str = "#9fd39a";
const S2_COLUMN_COLOR: &str = "#e6a39b";
const S2_SIZES: [f64; 3] = [1_000.0, 10_000.0, 100_000.0];

fn series(label: &str, color: &'static str, dashed: bool, points: Vec<(f64, Option<f64>)>) -> Series {
    let mut points: Vec<Point> = points.into_iter().filter_map(|(x, y)| Some(Point { x, y: y?, ok: true })).collect();
    points.sort_by(|a, b| a.x.total_cmp(&b.x));
    Series { label: label.into(), color, points, faint: false, dashed }
}

fn s2_series(
    label: &str,
    color: &'static str,
    value: impl Fn(&Reference) -> Option<f64>,
    refs: &[Reference],
) -> Series {
    series(label, color, true, S2_SIZES.iter().zip(refs).map(|(x, r)| (*x, value(r))).collect())
}

pub fn charts(results: &[SizeResult]) -> Vec<(String, String, String)> {
    let noted: Vec<&SizeResult> = results.iter().filter(|r| r.size.s2.is_some()).collect();
    let ours =
        |f: &dyn Fn(&SizeResult) -> Option<f64>| noted.iter().map(|r| (r.approx_doc_bytes as f64, f(r))).collect();
    let kib = |v: Option<f64>| v.map(|b| b / 1024.0);
    let bytes = Chart {
        title: "Bytes written per status update against document size".into(),
        x_label: "order as JSON, bytes (log scale)".into(),
        y_label: "KiB per update (log scale)".into(),
        log_y: true,
        series: vec![
            series(
                "PostgreSQL WAL (ours)",
                PG_COLOR,
                false,
                ours(&|r| kib(r.status.as_ref()?.pg_figures.wal_bytes_per_write)),
            ),
            series(
                "MongoDB journal (ours)",
                MONGO_COLOR,
                false,
                ours(&|r| kib(r.status.as_ref()?.mongo_figures.journal_bytes_per_write)),
            ),
            s2_series(
                "S2: PostgreSQL 17 WAL",
                S2_PG_COLOR,
                |r| match r.figure {
                    Figure::Bytes { value } => Some(value / 1024.0),
                    _ => None,
                },
                &studies::S2_WAL,
            ),
        ],
        reference: None,
        diagonal: false,
        marker: None,
    };
    let rates = Chart {
        title: "Closed-loop status updates per second against document size".into(),
        x_label: "order as JSON, bytes (log scale)".into(),
        y_label: "updates/s (log scale)".into(),
        log_y: true,
        series: vec![
            series("PostgreSQL (ours)", PG_COLOR, false, ours(&|r| r.closed_loop.pg)),
            series("MongoDB (ours)", MONGO_COLOR, false, ours(&|r| r.closed_loop.mongo)),
            s2_series(
                "S2: PostgreSQL 17 (synchronous_commit=off)",
                S2_PG_COLOR,
                |r| match r.figure {
                    Figure::Rates { pg, .. } => Some(pg),
                    _ => None,
                },
                &studies::S2_UPDATES,
            ),
            s2_series(
                "S2: MongoDB 8",
                S2_MONGO_COLOR,
                |r| match r.figure {
                    Figure::Rates { mongo, .. } => Some(mongo),
                    _ => None,
                },
                &studies::S2_UPDATES,
            ),
        ],
        reference: None,
        diagonal: false,
        marker: None,
    };
    let (mut bytes, mut rates) = (bytes, rates);
    if noted.iter().any(|r| r.closed_loop.pgh.is_some()) {
        let hybrid_wal = ours(&|r| kib(r.status.as_ref()?.pgh_figures.as_ref()?.wal_bytes_per_write));
        bytes.series.push(series("PostgreSQL hybrid WAL (ours)", HYBRID_COLOR, false, hybrid_wal));
        let column_wal = S2_SIZES[1..].iter().map(|x| (*x, kib(Some(studies::S2_COLUMN_WAL_BYTES)))).collect();
        bytes.series.push(series("S2: column WAL (past 1 KB)", S2_COLUMN_COLOR, true, column_wal));
        rates.series.push(series("PostgreSQL hybrid (ours)", HYBRID_COLOR, false, ours(&|r| r.closed_loop.pgh)));
        let column = S2_SIZES.iter().zip(studies::S2_COLUMN_UPDATES).map(|(x, y)| (*x, Some(y))).collect();
        rates.series.push(series("S2: column, PostgreSQL 17 (synchronous_commit=off)", S2_COLUMN_COLOR, true, column));
    }
    vec![
        (
            "doc-size-bytes".into(),
            "Bytes written per status update against document size, log-log: ours solid, study S2 dashed".into(),
            charts::render_log_x(&bytes),
        ),
        (
            "doc-size-rates".into(),
            "Closed-loop status updates/s against document size, log-log: ours solid, study S2 dashed".into(),
            charts::render_log_x(&rates),
        ),
    ]
}
