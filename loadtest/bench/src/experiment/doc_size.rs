//! `experiment doc-size`: what a document's size costs one small change (study S2's finding F2,
//! S4's WAL figure, S1's finding F3 on 40-item orders). Per size (documents of about 1 KB, 10 KB
//! and 100 KB, the note making up the difference, and 40-item orders): S2's closed loop of status
//! updates (its clients as fast as they can, several runs), then a staircase of status updates
//! and one of reads by id, each on freshly reloaded data. The writes carry `Prefer:
//! return=minimal` when both services honour it, so a 100 KB update is not also a 100 KB
//! response. Per size: maximum rates, WAL bytes, records and full-page images per update, HOT
//! share, table/TOAST/index growth, MongoDB's journal and storage, bytes on disk per order; and
//! log-log charts of bytes written and throughput against the size, the study's beside ours.

use super::Ctx;
use super::closed_loop::{Run as ClosedRun, Work};
use super::compare::Comparison;
use super::figures::{RoundFigures, median};
use super::output::{Outcome, RoundRef};
use super::rounds::{self, Data, RoundPlan};
use super::studies::{self, Figure, Reference};
use super::variant;
use crate::charts::{self, Chart, MONGO_COLOR, PG_COLOR, Point, Series};
use crate::dataset::Profile;
use crate::report::doc::Block;
use crate::report::format::{self, NONE};
use anyhow::{Result, bail};
use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct DocSize {
    pub key: &'static str,
    pub label: &'static str,
    /// Size of the whole order as JSON the note makes up to; `None`: no note.
    pub target_bytes: Option<u64>,
    pub items: u32,
    /// Index into S2's sizes (1, 10, 100 KB).
    pub s2: Option<usize>,
}

pub const SIZES: [DocSize; 4] = [
    DocSize { key: "1k", label: "1 KB", target_bytes: Some(1_000), items: 3, s2: Some(0) },
    DocSize { key: "10k", label: "10 KB", target_bytes: Some(10_000), items: 3, s2: Some(1) },
    DocSize { key: "100k", label: "100 KB", target_bytes: Some(100_000), items: 3, s2: Some(2) },
    DocSize { key: "40items", label: "40 items", target_bytes: None, items: 40, s2: None },
];

/// The sizes named in `only` (all when empty), in their order.
pub fn select(only: &[String], allowed: &[DocSize]) -> Result<Vec<DocSize>> {
    if let Some(unknown) = only.iter().find(|k| !allowed.iter().any(|s| s.key == k.as_str())) {
        let known: Vec<&str> = allowed.iter().map(|s| s.key).collect();
        bail!("--sizes: no size \"{unknown}\" here (known: {})", known.join(", "));
    }
    Ok(allowed.iter().filter(|s| only.is_empty() || only.iter().any(|o| o == s.key)).copied().collect())
}

/// Note bytes that make an order of `size` about its target size as JSON.
pub fn data_for(size: &DocSize, orders: u64) -> Result<Data> {
    let Some(target) = size.target_bytes else { return Ok(Data { items: size.items, note_bytes: 0 }) };
    let per_ten = (orders / 10).max(1);
    let profile = Profile {
        seed: 1,
        orders,
        customers: per_ten,
        products: per_ten.max(u64::from(size.items)),
        items: size.items,
        note_bytes: 0,
    };
    let base = profile.approx_doc_bytes()?;
    // The note is a JSON string: `,"note":"..."` adds 10 bytes besides its text.
    let note = target.saturating_sub(base + 10);
    Ok(Data { items: size.items, note_bytes: u32::try_from(note)? })
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct ClosedSummary {
    pub runs: Vec<ClosedRun>,
    /// Median requests/s over the runs.
    pub pg: Option<f64>,
    pub mongo: Option<f64>,
    pub pg_p95_ms: Option<f64>,
    pub mongo_p95_ms: Option<f64>,
}

impl ClosedSummary {
    pub fn of(runs: Vec<ClosedRun>) -> Self {
        let of = |target: &str, f: fn(&super::closed_loop::TargetRun) -> Option<f64>| {
            median(runs.iter().filter_map(|r| r.targets.get(target).and_then(f)).collect())
        };
        Self {
            pg: of("pg", |t| Some(t.per_second)),
            mongo: of("mongo", |t| Some(t.per_second)),
            pg_p95_ms: of("pg", |t| t.p95_ms),
            mongo_p95_ms: of("mongo", |t| t.p95_ms),
            runs,
        }
    }

    pub fn ratio(&self) -> Option<f64> {
        self.pg.zip(self.mongo).filter(|(_, m)| *m > 0.0).map(|(p, m)| p / m)
    }

    pub fn text(&self, unit: &str) -> String {
        let plan = self.runs.first().map(|r| r.plan);
        format!(
            "closed loop PG {} / MongoDB {} {unit}/s = {}{}",
            format::opt_count(self.pg),
            format::opt_count(self.mongo),
            self.ratio().map_or(NONE.into(), |r| format!("{r:.2}")),
            plan.map_or(String::new(), |p| format!(
                " ({} clients × {} s × {} runs)",
                p.clients,
                p.seconds,
                self.runs.len()
            ))
        )
    }
}

#[derive(Debug, Clone, Serialize)]
struct SizeResult {
    size: DocSize,
    items: u32,
    note_bytes: u32,
    approx_doc_bytes: u64,
    closed_loop: ClosedSummary,
    status: Option<RoundFigures>,
    read: Option<RoundFigures>,
}

fn growth_text(f: &RoundFigures) -> String {
    let p = &f.pg_figures;
    let per_update = p.table_growth_per_1k_writes.zip(p.toast_growth_per_1k_writes).map(|(t, s)| (t + s) / 1000.0);
    format!(
        "table + TOAST grew {} per update (table {}, TOAST {} per 1,000); MongoDB storage {} per 1,000",
        format::opt_bytes(per_update),
        format::opt_bytes(p.table_growth_per_1k_writes),
        format::opt_bytes(p.toast_growth_per_1k_writes),
        format::opt_bytes(f.mongo_figures.storage_growth_per_1k_writes),
    )
}

fn wal_text(f: &RoundFigures) -> String {
    let p = &f.pg_figures;
    format!(
        "PG WAL {} per update ({} records, {} full-page images); MongoDB journal {}",
        format::opt_bytes(p.wal_bytes_per_write),
        format::seconds(p.wal_records_per_write, 1),
        format::seconds(p.wal_fpi_per_write, 2),
        format::opt_bytes(f.mongo_figures.journal_bytes_per_write),
    )
}

fn disk_ratio(f: &RoundFigures) -> Option<f64> {
    f.pg_figures.disk_per_order.zip(f.mongo_figures.disk_per_order).filter(|(_, m)| *m > 0.0).map(|(p, m)| p / m)
}

fn rows_for(r: &SizeResult) -> Vec<Comparison> {
    let mut rows = Vec::new();
    let label = r.size.label;
    let at = |what: &str| format!("{what}, {label} (~{})", format::bytes(r.approx_doc_bytes as f64));
    let judged = |reference: &Reference, workload: String, ours: String, value: Option<f64>| {
        Comparison::new(reference, workload, ours).judged(reference, value)
    };
    if let Some(i) = r.size.s2 {
        let s2 = &studies::S2_UPDATES[i];
        rows.push(judged(s2, at("status, closed loop"), r.closed_loop.text("updates"), r.closed_loop.ratio()));
        if i == 2 {
            let both = &studies::S2_BOTH_WAIT_100KB;
            rows.push(judged(both, at("status, closed loop"), r.closed_loop.text("updates"), r.closed_loop.ratio()));
        }
        if let Some(s) = &r.status {
            let reference = if i == 2 { &studies::S2_BOTH_WAIT_100KB } else { s2 };
            rows.push(judged(reference, at("status, staircase"), s.rates_text(), s.ratio));
            rows.push(judged(&studies::S2_WAL[i], at("status"), wal_text(s), s.pg_figures.wal_bytes_per_write));
            if i == 1 {
                let s4 = &studies::S4_WAL_8KB;
                rows.push(judged(s4, at("status"), wal_text(s), s.pg_figures.wal_bytes_per_write));
            }
            if i == 2 {
                let g = &studies::S2_GROWTH_PER_UPDATE_100KB;
                let p = &s.pg_figures;
                let per_update =
                    p.table_growth_per_1k_writes.zip(p.toast_growth_per_1k_writes).map(|(t, s)| (t + s) / 1000.0);
                rows.push(judged(g, at("status"), growth_text(s), per_update));
            }
        }
    } else if let Some(s) = &r.status {
        let big = &studies::S1_STATUS_40_ITEMS;
        let text = format!("{}; {}", s.rates_text(), r.closed_loop.text("updates"));
        rows.push(judged(big, at("status, staircase"), text, s.ratio));
        rows.push(judged(&studies::S1_WAL_40_ITEMS, at("status"), wal_text(s), s.pg_figures.wal_bytes_per_write));
    }
    if let Some(s) = &r.status {
        let hot = if r.size.key == "1k" { &studies::S4_HOT } else { &studies::S1_HOT_40_ITEMS };
        let p = &s.pg_figures;
        let text = format!(
            "{} of the updates HOT; GIN orders_items grew {} per 1,000 updates, all indexes {}",
            format::percent(p.hot_share),
            format::opt_bytes(p.gin_growth_per_1k_writes),
            format::opt_bytes(p.index_growth_per_1k_writes)
        );
        rows.push(judged(hot, at("status"), text, p.hot_share));
        let disk = format!(
            "PG {} / MongoDB {} on disk per order",
            format::opt_bytes(p.disk_per_order),
            format::opt_bytes(s.mongo_figures.disk_per_order)
        );
        let disk = format!("{disk} = {}", disk_ratio(s).map_or(NONE.into(), |d| format!("{d:.2}")));
        rows.push(judged(&studies::S3_DISK, at("data set"), disk, disk_ratio(s)));
    }
    if let Some(read) = &r.read {
        let reads = &studies::S1_READS;
        rows.push(judged(reads, at("read by id, whole order, staircase"), read.rates_text(), read.ratio));
    }
    rows
}

fn comparisons(results: &[SizeResult]) -> Vec<Comparison> {
    let mut rows: Vec<Comparison> = results.iter().flat_map(rows_for).collect();
    let closed = |key: &str| results.iter().find(|r| r.size.key == key).map(|r| &r.closed_loop);
    if let (Some(small), Some(large)) = (closed("1k"), closed("100k")) {
        for (reference, small, large, who) in [
            (&studies::S2_PG_SLOWDOWN, small.pg, large.pg, "PG"),
            (&studies::S2_MONGO_SLOWDOWN, small.mongo, large.mongo, "MongoDB"),
        ] {
            let factor = small.zip(large).filter(|(_, l)| *l > 0.0).map(|(s, l)| s / l);
            let text = format!(
                "{who} {} → {} updates/s ({})",
                format::opt_count(small),
                format::opt_count(large),
                factor.map_or(NONE.into(), |f| format!("{f:.1}× slower"))
            );
            rows.push(Comparison::new(reference, "status, closed loop, 1 KB → 100 KB", text).judged(reference, factor));
        }
    }
    rows
}

fn detail_table(results: &[SizeResult]) -> Block {
    let rows = results
        .iter()
        .map(|r| {
            let cell =
                |f: &Option<RoundFigures>, text: fn(&RoundFigures) -> String| f.as_ref().map_or(NONE.into(), text);
            vec![
                r.size.label.into(),
                format::bytes(r.approx_doc_bytes as f64),
                format!("{} / {}", format::opt_count(r.closed_loop.pg), format::opt_count(r.closed_loop.mongo)),
                cell(&r.status, |f| f.rates_text()),
                cell(&r.read, |f| f.rates_text()),
                cell(&r.status, |f| format::opt_bytes(f.pg_figures.wal_bytes_per_write)),
                cell(&r.status, |f| format::seconds(f.pg_figures.wal_fpi_per_write, 2)),
                cell(&r.status, |f| format::percent(f.pg_figures.hot_share)),
                cell(&r.status, |f| format::opt_bytes(f.pg_figures.table_growth_per_1k_writes)),
                cell(&r.status, |f| format::opt_bytes(f.pg_figures.toast_growth_per_1k_writes)),
                cell(&r.status, |f| format::opt_bytes(f.mongo_figures.journal_bytes_per_write)),
                cell(&r.status, |f| format::opt_bytes(f.mongo_figures.storage_growth_per_1k_writes)),
                cell(&r.status, |f| {
                    format!(
                        "{} / {}",
                        format::opt_bytes(f.pg_figures.disk_per_order),
                        format::opt_bytes(f.mongo_figures.disk_per_order)
                    )
                }),
            ]
        })
        .collect();
    Block::Table {
        header: [
            "size",
            "order as JSON",
            "closed loop updates/s (PG / MongoDB)",
            "status staircase",
            "read staircase",
            "WAL per update",
            "full-page images per update",
            "HOT share",
            "table growth per 1,000 updates",
            "TOAST growth per 1,000 updates",
            "MongoDB journal per update",
            "MongoDB storage growth per 1,000 updates",
            "on disk per order (PG / MongoDB)",
        ]
        .iter()
        .map(|h| (*h).to_owned())
        .collect(),
        rows,
    }
}

const S2_PG_COLOR: &str = "#8fb3d9";
const S2_MONGO_COLOR: &str = "#9fd39a";
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

fn charts(results: &[SizeResult]) -> Vec<(String, String, String)> {
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
    };
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

pub async fn run(ctx: &mut Ctx, only: &[String]) -> Result<Outcome> {
    let sizes = select(only, &SIZES)?;
    let variant = variant::both_wait();
    let mut results = Vec::new();
    let mut refs = Vec::new();
    for size in &sizes {
        let data = data_for(size, ctx.scale.orders)?;
        let Some(urls) = ctx.use_variant(&variant).await? else { break };
        let minimal = ctx.minimal();
        let manifest = rounds::reload(ctx, data).await?;
        let runs =
            rounds::closed_loop(ctx, &urls, Work::Status, ctx.scale.closed_runs, ctx.scale.closed_seconds, minimal)
                .await?;
        let closed = ClosedSummary::of(runs);
        let status_stairs = ctx.scale.staircase(closed.pg.unwrap_or(0.0).max(closed.mongo.unwrap_or(0.0)));
        let read_stairs = rounds::placed_staircase(ctx, &urls, Work::Read, false).await?;
        let mut result = SizeResult {
            size: *size,
            items: data.items,
            note_bytes: data.note_bytes,
            approx_doc_bytes: manifest.approx_doc_bytes,
            closed_loop: closed,
            status: None,
            read: None,
        };
        for (mix, staircase, minimal) in [("status", status_stairs, minimal), ("read", read_stairs, false)] {
            let plan = RoundPlan {
                variant: &variant,
                name: format!("{mix} {}", size.label),
                dir: rounds::folder(&[size.key, mix]),
                mix,
                data,
                staircase,
                minimal,
            };
            let Some(measured) = rounds::measure(ctx, &plan).await? else { break };
            refs.push(RoundRef { name: plan.name.clone(), variant: variant.label.into(), dir: plan.dir.clone() });
            if mix == "status" {
                result.status = Some(measured.figures);
            } else {
                result.read = Some(measured.figures);
            }
        }
        results.push(result);
    }
    let comparisons = comparisons(&results);
    Ok(Outcome {
        title: "Experiment doc-size: one small change in a big document (S2 F2, S4, S1 F3)".into(),
        summary: format!(
            "Per size ({}): {} closed-loop run(s) of status updates ({} clients per target, as fast as they can, {} s; \
             S2's way), then a staircase of status updates and one of reads by id, each on reloaded data, both \
             services at the same moment, both waiting for the disk. The API has no one-field read, so the reads \
             return the whole order. A jsonb update writes a new version of the whole document (and every index \
             entry): S2 saw its WAL and its time grow with the size, MongoDB's much less.",
            sizes.iter().map(|s| s.label).collect::<Vec<_>>().join(", "),
            ctx.scale.closed_runs,
            ctx.scale.clients,
            ctx.scale.closed_seconds,
        ),
        setups: vec![studies::S2, studies::S2_BOTH_WAIT, studies::S1_BIG, studies::S4, studies::S3, studies::S1],
        comparisons,
        details: vec![Block::Heading(2, "Per size".into()), detail_table(&results)],
        charts: charts(&results),
        variants: serde_json::to_value(&results)?,
        rounds: refs,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notes_make_up_the_target_size() {
        for size in &SIZES[..3] {
            let data = data_for(size, 1000).expect("data");
            let profile =
                Profile { seed: 1, orders: 1000, customers: 100, products: 100, items: 3, note_bytes: data.note_bytes };
            let bytes = profile.approx_doc_bytes().expect("size") as f64;
            let target = size.target_bytes.expect("target") as f64;
            assert!((bytes - target).abs() / target < 0.03, "{}: {bytes} for {target}", size.key);
        }
        assert_eq!(data_for(&SIZES[3], 1000).expect("data"), Data { items: 40, note_bytes: 0 });
    }

    #[test]
    fn sizes_are_chosen_by_key() {
        let chosen = select(&["100k".into(), "1k".into()], &SIZES).expect("sizes");
        assert_eq!(chosen.iter().map(|s| s.key).collect::<Vec<_>>(), ["1k", "100k"]);
        assert!(select(&["2k".into()], &SIZES).is_err());
    }
}
