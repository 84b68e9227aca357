//! Findings F1–F3 of the published studies (docs/studies.md), each stated as seen or not seen in
//! these rounds, with the numbers that decide it, so a reader needs no database shell:
//! F1 (mixed reads, product searches and inserts: the GIN pending list and the plan cache turn the
//! product query into sequential scans) from the `shop`-like rounds; F2 (jsonb rewrites the whole
//! document: WAL per write) from the insert and status rounds; F3 (a jsonb status update is never
//! HOT, every index gets new entries) from the status rounds.

use super::format::{self, NONE};
use crate::model::explain::PgExplain;
use crate::model::result::RoundResult;

fn has(round: &RoundResult, endpoint: &str) -> bool {
    round.mix_weights.contains_key(endpoint) || round.mix == endpoint
}

fn only(round: &RoundResult, endpoint: &str) -> bool {
    (round.mix_weights.len() == 1 && has(round, endpoint)) || (round.mix_weights.is_empty() && round.mix == endpoint)
}

fn pg_explains(round: &RoundResult) -> impl Iterator<Item = &PgExplain> {
    round.repeats.iter().map(|r| &r.explain.pg)
}

fn median(values: impl Iterator<Item = Option<f64>>) -> Option<f64> {
    super::summary::median(values.flatten().collect())
}

fn sum(values: impl Iterator<Item = Option<f64>>) -> Option<f64> {
    values.flatten().reduce(|a, b| a + b)
}

pub fn f1(rounds: &[&RoundResult]) -> Vec<String> {
    let shop: Vec<&&RoundResult> = rounds.iter().filter(|r| has(r, "product") && has(r, "insert")).collect();
    if shop.is_empty() {
        return vec![
            "**F1** (pending list → generic plan → sequential scans): no data, no round mixed product searches \
                     with inserts (run the `shop` mix)."
                .into(),
        ];
    }
    shop.iter()
        .map(|round| {
            let seq_scans = sum(pg_explains(round).map(|e| e.seq_scans)).unwrap_or(0.0);
            let rows = sum(pg_explains(round).map(|e| e.seq_tup_read)).unwrap_or(0.0);
            let pages = pg_explains(round).filter_map(|e| e.max_pending_pages).reduce(f64::max);
            let tuples = pg_explains(round).filter_map(|e| e.max_pending_tuples).reduce(f64::max);
            let mut plans: Vec<String> = Vec::new();
            for plan in pg_explains(round).flat_map(|e| e.generic_plans_seen.iter()) {
                if !plans.contains(plan) {
                    plans.push(plan.clone());
                }
            }
            let generic_seq = plans.iter().any(|p| p.contains("Seq Scan"));
            let last = round.repeats.last().map(|r| &r.explain.pg);
            let generic_used = last.and_then(|e| e.product_generic_plans).unwrap_or(0.0);
            let custom_used = last.and_then(|e| e.product_custom_plans).unwrap_or(0.0);
            let settings = round.repeats.first().map(|r| &r.explain.pg.settings);
            let setting = |name: &str| settings.and_then(|s| s.get(name)).map_or("?", String::as_str);
            let seen = seq_scans > 0.0 && (generic_seq || rows / seq_scans > 1000.0);
            let verdict = if seen { "**F1 seen**" } else { "**F1 not seen**" };
            let scans = if seq_scans > 0.0 {
                format!(
                    "Postgres ran {} sequential scans of `orders` reading {} rows ({} per scan)",
                    format::count(seq_scans),
                    format::count(rows),
                    format::count(rows / seq_scans)
                )
            } else {
                "Postgres ran no sequential scan of `orders`".to_owned()
            };
            format!(
                "{verdict} in `{}`: {scans}; the largest GIN pending list seen was {} pages / {} tuples \
                 (fastupdate {}); generic plan(s) of the product query: {}; a pooled connection had used {} \
                 generic and {} custom plans for it by the end (plan_cache_mode {}, {} statements){}.",
                round.name,
                format::opt_count(pages),
                format::opt_count(tuples),
                setting("gin_fastupdate"),
                if plans.is_empty() { NONE.to_owned() } else { plans.join("; ") },
                format::count(generic_used),
                format::count(custom_used),
                setting("plan_cache_mode"),
                setting("statement_mode"),
                if seen && !generic_seq {
                    "; `/diagnostics` explains the plans of one pooled connection every few seconds, so the plan \
                     behind the scans (another connection's cached generic plan) need not be among those shown"
                } else {
                    ""
                },
            )
        })
        .collect()
}

pub fn f2(rounds: &[&RoundResult]) -> Vec<String> {
    let doc = rounds.iter().find_map(|r| r.data_set.as_ref()).map(|d| d.approx_doc_bytes as f64);
    let wal = |endpoint: &str| {
        median(rounds.iter().filter(|r| only(r, endpoint)).flat_map(|r| pg_explains(r)).map(|e| e.wal_bytes_per_write))
    };
    let journal = |endpoint: &str| {
        median(
            rounds
                .iter()
                .filter(|r| only(r, endpoint))
                .flat_map(|r| r.repeats.iter())
                .map(|r| r.explain.mongo.journal_bytes_per_write),
        )
    };
    let (insert_wal, status_wal) = (wal("insert"), wal("status"));
    let status_records = median(
        rounds.iter().filter(|r| only(r, "status")).flat_map(|r| pg_explains(r)).map(|e| e.wal_records_per_write),
    );
    let status_fpi =
        median(rounds.iter().filter(|r| only(r, "status")).flat_map(|r| pg_explains(r)).map(|e| e.wal_fpi_per_write));
    let composition = match (status_records, status_fpi) {
        (Some(records), Some(fpi)) => format!(
            " ({records:.1} WAL records and {fpi:.2} full-page images per update: the first change of a page after a \
             checkpoint, and one runs before every repeat, logs the whole 8 KiB page)"
        ),
        _ => String::new(),
    };
    if insert_wal.is_none() && status_wal.is_none() {
        return vec!["**F2** (WAL per write): no data, run the `insert` and `status` mixes.".into()];
    }
    let seen = match (status_wal, doc) {
        (Some(w), Some(d)) => w >= d,
        _ => false,
    };
    let verdict = if seen { "**F2 seen**" } else { "**F2 not seen**" };
    vec![format!(
        "{verdict}: Postgres wrote {} of WAL per status update of an order of about {}{}{composition}, and {} per \
         insert; MongoDB's journal took {} per status update and {} per insert. WAL and journal are server-wide: \
         other databases' writes during a round count too.",
        format::opt_bytes(status_wal),
        format::opt_bytes(doc),
        if seen { ", so changing one field wrote at least the whole document again" } else { "" },
        format::opt_bytes(insert_wal),
        format::opt_bytes(journal("status")),
        format::opt_bytes(journal("insert")),
    )]
}

pub fn f3(rounds: &[&RoundResult]) -> Vec<String> {
    let status: Vec<&&RoundResult> = rounds.iter().filter(|r| only(r, "status")).collect();
    if status.is_empty() {
        return vec!["**F3** (status updates never HOT): no data, run the `status` mix.".into()];
    }
    status
        .iter()
        .map(|round| {
            let updates = sum(pg_explains(round).map(|e| e.updates)).unwrap_or(0.0);
            let hot = sum(pg_explains(round).map(|e| e.hot_updates)).unwrap_or(0.0);
            let gin = sum(pg_explains(round).map(|e| e.index.get("orders_items").and_then(|g| g.delta())));
            let pg_indexes = sum(pg_explains(round).map(|e| e.indexes.delta()));
            let mongo_indexes = sum(round.repeats.iter().map(|r| r.explain.mongo.indexes.delta()));
            let share = if updates > 0.0 { Some(hot / updates) } else { None };
            let seen = share.is_some_and(|s| s < 0.01);
            let verdict = if seen { "**F3 seen**" } else { "**F3 not seen**" };
            format!(
                "{verdict} in `{}`: {} status updates, {} of them HOT ({}); Postgres' indexes grew {} (GIN \
                 `orders_items` {}), MongoDB's {}.",
                round.name,
                format::count(updates),
                format::count(hot),
                format::percent(share),
                format::opt_bytes(pg_indexes),
                format::opt_bytes(gin),
                format::opt_bytes(mongo_indexes),
            )
        })
        .collect()
}
