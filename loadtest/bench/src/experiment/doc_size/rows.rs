//! The rows of `doc-size`'s table, ours beside the studies' (S2's rates, WAL and growth per size,
//! S4's WAL at 8 KB and HOT share, S1's 40-item figures, S3's disk, S1's reads), and the details
//! per size.

use super::SizeResult;
use crate::experiment::compare::Comparison;
use crate::experiment::figures::RoundFigures;
use crate::experiment::studies::{self, Reference};
use orders_bench_report::doc::Block;
use orders_bench_report::format::{self, NONE};

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
            rows.push(judged(reference, at("status, staircase"), s.rates_text(), s.ratio).staircase(s.same_step()));
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
        rows.push(judged(big, at("status, staircase"), text, s.ratio).staircase(s.same_step()));
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
        // The hybrid beside them where it ran: its reads join the columns back into the document.
        let text = match read.hybrid_text() {
            Some(hybrid) => format!("{}; {hybrid}", read.rates_text()),
            None => read.rates_text(),
        };
        let row = judged(reads, at("read by id, whole order, staircase"), text, read.ratio);
        rows.push(row.staircase(read.same_step()));
    }
    rows
}

pub fn comparisons(results: &[SizeResult]) -> Vec<Comparison> {
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

pub fn detail_table(results: &[SizeResult]) -> Block {
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
