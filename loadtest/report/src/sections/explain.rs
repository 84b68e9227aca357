//! The figures that explain a round's result, one table per target and a column per repeat:
//! PostgreSQL's (WAL, scans, HOT updates, growth, the product query's plans), MongoDB's (journal,
//! cache, growth, the product query's plan) and any other engine's as it reported them. Apart
//! from the round's other sections because each engine's table is its own list of rows.

use crate::doc::Block;
use crate::format::{self, NONE};
use orders_bench_model::explain::{EngineExplain, Growth, MongoExplain, PgExplain};
use orders_bench_model::result::{RepeatResult, RoundResult};
use orders_bench_model::target::TargetInfo;

fn per_repeat(round: &RoundResult, f: impl Fn(&RepeatResult) -> String) -> Vec<String> {
    round.repeats.iter().map(f).collect()
}

fn row(label: &str, cells: Vec<String>) -> Vec<String> {
    std::iter::once(label.to_owned()).chain(cells).collect()
}

fn growth_cell(g: &Growth) -> String {
    format::growth(g.before, g.after)
}

fn pg_table(round: &RoundResult, target: &TargetInfo) -> Block {
    let key = target.name.as_str();
    let pg =
        |f: &dyn Fn(&PgExplain) -> String| per_repeat(round, |r| r.explain.pg_of(key).map_or_else(|| NONE.into(), f));
    let mut rows = vec![
        row("write requests (insert + status)", pg(&|e| format::count(e.write_requests as f64))),
        row("WAL per write request (F2)", pg(&|e| format::opt_bytes(e.wal_bytes_per_write))),
        row("WAL written (server-wide)", pg(&|e| format::opt_bytes(e.wal_bytes))),
        row(
            "WAL records / full-page images per write request",
            pg(&|e| {
                format!("{} / {}", format::seconds(e.wal_records_per_write, 1), format::seconds(e.wal_fpi_per_write, 2))
            }),
        ),
        row(
            "rows inserted / updated",
            pg(&|e| format!("{} / {}", format::opt_count(e.inserts), format::opt_count(e.updates))),
        ),
        row(
            "HOT share of updates (F3)",
            pg(&|e| format!("{} ({} HOT)", format::percent(e.hot_share), format::opt_count(e.hot_updates))),
        ),
        row("sequential scans of orders (F1)", pg(&|e| format::opt_count(e.seq_scans))),
        row(
            "rows read by them (per scan)",
            pg(&|e| format!("{} ({})", format::opt_count(e.seq_tup_read), format::opt_count(e.rows_per_seq_scan))),
        ),
        row("index scans", pg(&|e| format::opt_count(e.idx_scans))),
        row(
            "largest GIN pending list seen (F1)",
            pg(&|e| {
                format!(
                    "{} pages / {} tuples",
                    format::opt_count(e.max_pending_pages),
                    format::opt_count(e.max_pending_tuples)
                )
            }),
        ),
        row("table (heap)", pg(&|e| growth_cell(&e.table))),
        row("TOAST", pg(&|e| growth_cell(&e.toast))),
        row("indexes", pg(&|e| growth_cell(&e.indexes))),
    ];
    let names: Vec<String> = round
        .repeats
        .first()
        .and_then(|r| r.explain.pg_of(key))
        .map(|e| e.index.keys().cloned().collect())
        .unwrap_or_default();
    for name in names {
        rows.push(row(&format!("index {name}"), pg(&|e| e.index.get(&name).map_or(NONE.into(), growth_cell))));
    }
    rows.extend([
        row("dead tuples after", pg(&|e| format::opt_count(e.dead_tuples_after))),
        row("product query: generic plan after", pg(&|e| e.generic_plan_after.describe())),
        row("product query: custom plan after", pg(&|e| e.custom_plan_after.describe())),
        row(
            "generic plan shapes seen",
            pg(&|e| if e.generic_plans_seen.is_empty() { NONE.into() } else { e.generic_plans_seen.join("; ") }),
        ),
        row(
            "product statement: generic / custom plans so far (one pooled connection)",
            pg(&|e| {
                format!(
                    "{} / {}",
                    format::opt_count(e.product_generic_plans),
                    format::opt_count(e.product_custom_plans)
                )
            }),
        ),
    ]);
    let mut header = vec![target.label.clone()];
    header.extend(round.repeats.iter().map(|r| format!("repeat {}", r.index)));
    Block::Table { header, rows }
}

fn mongo_table(round: &RoundResult, target: &TargetInfo) -> Block {
    let key = target.name.as_str();
    let mongo = |f: &dyn Fn(&MongoExplain) -> String| {
        per_repeat(round, |r| r.explain.mongo_of(key).map_or_else(|| NONE.into(), f))
    };
    let op = |name: &'static str| move |e: &MongoExplain| format::opt_count(e.opcounters.get(name).copied());
    let mut rows = vec![
        row("write requests (insert + status)", mongo(&|e| format::count(e.write_requests as f64))),
        row("journal per write request (F2)", mongo(&|e| format::opt_bytes(e.journal_bytes_per_write))),
        row(
            "journal written / syncs (server-wide)",
            mongo(&|e| format!("{} / {}", format::opt_bytes(e.journal_bytes), format::opt_count(e.journal_syncs))),
        ),
        row(
            "opcounters insert / query / update (server-wide)",
            mongo(&|e| format!("{} / {} / {}", op("insert")(e), op("query")(e), op("update")(e))),
        ),
        row(
            "documents",
            mongo(&|e| match (e.count.before, e.count.after) {
                (Some(b), Some(a)) => format!("{} → {}", format::count(b), format::count(a)),
                _ => NONE.into(),
            }),
        ),
        row("data (uncompressed BSON)", mongo(&|e| growth_cell(&e.data))),
        row("storage (compressed)", mongo(&|e| growth_cell(&e.storage))),
        row("indexes", mongo(&|e| growth_cell(&e.indexes))),
    ];
    let names: Vec<String> = round
        .repeats
        .first()
        .and_then(|r| r.explain.mongo_of(key))
        .map(|e| e.index.keys().cloned().collect())
        .unwrap_or_default();
    for name in names {
        rows.push(row(&format!("index {name}"), mongo(&|e| e.index.get(&name).map_or(NONE.into(), growth_cell))));
    }
    rows.push(row("product query plan", mongo(&|e| e.plan.clone())));
    let mut header = vec![target.label.clone()];
    header.extend(round.repeats.iter().map(|r| format!("repeat {}", r.index)));
    Block::Table { header, rows }
}

/// One table per target: PostgreSQL's and MongoDB's with the figures the studies' findings rest
/// on, any other engine's with the figures its backend recorded, as they are.
pub(super) fn explain_tables(round: &RoundResult) -> Vec<Block> {
    let first = round.repeats.first();
    round
        .targets()
        .iter()
        .filter_map(|target| match first?.explain.0.get(&target.name)? {
            EngineExplain::Pg(_) => Some(pg_table(round, target)),
            EngineExplain::Mongo(_) => Some(mongo_table(round, target)),
            EngineExplain::Other(figures) => Some(other_table(round, &target.name, &target.label, figures)),
        })
        .collect()
}

/// The figures of an engine the report has no table of its own for: one row per figure.
fn other_table(
    round: &RoundResult,
    name: &str,
    label: &str,
    first: &serde_json::Map<String, serde_json::Value>,
) -> Block {
    let rows = first
        .keys()
        .map(|key| {
            let cells = per_repeat(round, |r| match r.explain.0.get(name) {
                Some(EngineExplain::Other(figures)) => figures.get(key).map_or_else(
                    || NONE.into(),
                    |v| match v {
                        serde_json::Value::String(text) => text.clone(),
                        serde_json::Value::Number(n) => match n.as_f64() {
                            Some(v) if v.fract() == 0.0 => format::count(v),
                            Some(v) => format!("{v:.3}"),
                            None => n.to_string(),
                        },
                        other => other.to_string(),
                    },
                ),
                _ => NONE.into(),
            });
            row(key, cells)
        })
        .collect();
    let mut header = vec![label.to_owned()];
    header.extend(round.repeats.iter().map(|r| format!("repeat {}", r.index)));
    Block::Table { header, rows }
}
