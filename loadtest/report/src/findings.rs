//! Findings F1–F3 of the published studies (docs/studies.md), each stated as seen or not seen in
//! these rounds, with the numbers that decide it, so a reader needs no database shell:
//! F1 (mixed reads, product searches and inserts: the GIN pending list and the plan cache turn the
//! product query into sequential scans) from the `shop`-like rounds, seen only when the plan log
//! shows the product search's generic plan running the scans (custom plans' scans are named
//! apart), and explained by the planner probe when it is not; F2 (jsonb rewrites the whole
//! document: WAL per write) from the insert and status rounds; F3 (a jsonb status update is never
//! HOT, every index gets new entries) from the status rounds.

use super::format::{self, NONE};
use orders_bench_model::explain::PgExplain;
use orders_bench_model::plans::ScanAttribution;
use orders_bench_model::result::RoundResult;

fn has(round: &RoundResult, endpoint: &str) -> bool {
    round.mix_weights.contains_key(endpoint) || round.mix == endpoint
}

fn only(round: &RoundResult, endpoint: &str) -> bool {
    (round.mix_weights.len() == 1 && has(round, endpoint)) || (round.mix_weights.is_empty() && round.mix == endpoint)
}

fn pg_explains(round: &RoundResult) -> impl Iterator<Item = &PgExplain> {
    round.repeats.iter().filter_map(|r| r.explain.pg())
}

fn median(values: impl Iterator<Item = Option<f64>>) -> Option<f64> {
    orders_bench_model::stats::median(&values.flatten().collect::<Vec<_>>())
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
    shop.iter().flat_map(|round| f1_of(round)).collect()
}

/// F1 for one round: seen only when the plan log shows generic plans running sequential scans;
/// the custom plans' scans are their own finding.
fn f1_of(round: &RoundResult) -> Vec<String> {
    let seq_scans = sum(pg_explains(round).map(|e| e.seq_scans)).unwrap_or(0.0);
    let rows = sum(pg_explains(round).map(|e| e.seq_tup_read)).unwrap_or(0.0);
    let pages = pg_explains(round).filter_map(|e| e.max_pending_pages).reduce(f64::max);
    let scans = ScanAttribution::sum(pg_explains(round).filter_map(|e| e.scans.as_ref()));
    let settings = round.repeats.first().and_then(|r| r.explain.pg()).map(|e| &e.settings);
    let setting = |name: &str| settings.and_then(|s| s.get(name)).map_or("?", String::as_str);
    let generic_used = sum(pg_explains(round).map(|e| e.pool_generic_plans));
    let custom_used = sum(pg_explains(round).map(|e| e.pool_custom_plans));
    let context = format!(
        "{} sequential scans of `orders` ({} rows each on average); largest GIN pending list {} pages (fastupdate \
         {}); the product search ran {} generic and {} custom plans over the pools' connections (plan_cache_mode \
         {}, {} statements, limit {})",
        format::count(seq_scans),
        if seq_scans > 0.0 { format::count(rows / seq_scans) } else { NONE.into() },
        format::opt_count(pages),
        setting("gin_fastupdate"),
        format::opt_count(generic_used),
        format::opt_count(custom_used),
        setting("plan_cache_mode"),
        setting("statement_mode"),
        setting("limit_mode"),
    );
    let Some(scans) = scans.filter(|s| s.error.is_none()) else {
        let why = pg_explains(round)
            .find_map(|e| e.scans.as_ref()?.error.clone())
            .unwrap_or_else(|| "no plan log was kept (it needs a superuser on the round's database)".into());
        return vec![format!(
            "**F1 undetermined** in `{}`: {context}. Which plan ran the scans is not known: {why}.",
            round.name
        )];
    };
    let verdict = if scans.generic_seq_scans > 0 { "**F1 seen**" } else { "**F1 not seen**" };
    let why_not = if scans.generic_seq_scans > 0 { String::new() } else { why_no_switch(round) };
    let mut out = vec![format!(
        "{verdict} in `{}`: {} of the sequential scans ran on the product search's generic plan, {} on custom plans \
         and {} on other statements (plan log: every statement of at least {} ms; {} scans counted by the statistics \
         were not logged); {context}.{why_not}",
        round.name,
        format::count(scans.generic_seq_scans as f64),
        format::count(scans.custom_seq_scans as f64),
        format::count(scans.other_seq_scans as f64),
        format::ms(Some(scans.threshold_ms)),
        format::opt_count(scans.unattributed.map(|u| u.max(0.0))),
    )];
    if scans.custom_seq_scans > 0 {
        let products: Vec<String> =
            scans.custom_scan_products.iter().take(5).map(|(p, n)| format!("{p} ({n}×)")).collect();
        out.push(format!(
            "**Custom-plan scans** in `{}` (not F1): {} sequential scans were planned for one product each, for \
             products whose statistics promise many matches (a product in the few orders `ANALYZE` sampled is \
             estimated at about 1% of the table, so a scan that stops at ten rows looks cheap, while it reads a third \
             of the table); most often {}.",
            round.name,
            format::count(scans.custom_seq_scans as f64),
            products.join(", ")
        ));
    }
    out
}

/// Why the cached generic plans were not sequential scans, from the planner probe.
fn why_no_switch(round: &RoundResult) -> String {
    let Some(probe) = round.plan_probe.as_ref().filter(|p| p.error.is_none()) else { return String::new() };
    let first_poll = round.repeats.first().and_then(|r| r.explain.pg()).map(|e| e.max_pending_pages);
    match probe.switch_after_inserts {
        None => format!(
            " The planner probe (fastupdate {}, {} orders) found no prepared `LIMIT 10` search caching a sequential \
             scan up to {} inserts, so F1 cannot happen here.",
            probe.fastupdate,
            format::count(probe.orders as f64),
            format::count(probe.rows.last().map_or(0, |r| r.inserts) as f64),
        ),
        Some(inserts) => {
            let row = probe.rows.iter().find(|r| r.inserts == inserts);
            format!(
                " The planner probe shows that at this size a connection caches the sequential scan only if it \
                 first plans the search after about {} inserts (a pending list of {} pages); the round's connections \
                 planned it before the list grew that long (the longest list of the first repeat: {} pages).",
                format::count(inserts as f64),
                row.map_or(NONE.into(), |r| format::count(r.pending_pages as f64)),
                format::opt_count(first_poll.flatten()),
            )
        }
    }
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
                .map(|r| r.explain.mongo().and_then(|e| e.journal_bytes_per_write)),
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
            let mongo_indexes = sum(round.repeats.iter().map(|r| r.explain.mongo().and_then(|e| e.indexes.delta())));
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
