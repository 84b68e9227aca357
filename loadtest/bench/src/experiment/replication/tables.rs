//! The report of `experiment replication`: the bytes each engine shipped per write (log, what the
//! primary sent its standbys, what crossed each member's link), the durable write cost of both
//! deployments (maximum passing rate, p95/p99 there, CPU per write of every member), what each
//! write waited for in every row, and the mechanism in words, compared with the expectation (a
//! jsonb update writes a whole new row version; MongoDB's `$set` entry records the changed fields).

use super::cluster::Replicas;
use super::spread::SpreadRow;
use super::window::PerWrite;
use super::{Row, SIZES};
use crate::experiment::figures::RoundFigures;
use crate::experiment::output::{Outcome, RoundRef};
use orders_bench_report::doc::Block;
use orders_bench_report::format::{self, NONE};

fn headed(header: &[&str], rows: Vec<Vec<String>>) -> Block {
    Block::Table { header: header.iter().map(|h| (*h).to_owned()).collect(), rows }
}

fn members(map: &std::collections::BTreeMap<String, f64>, unit: impl Fn(f64) -> String) -> String {
    if map.is_empty() {
        NONE.into()
    } else {
        map.iter().map(|(m, v)| format!("{m} {}", unit(*v))).collect::<Vec<_>>().join(", ")
    }
}

fn engines(row: &Row) -> [(&'static str, &'static str, &PerWrite); 2] {
    [("PostgreSQL", "pg", &row.pg), ("MongoDB", "mongo", &row.mongo)]
}

fn primary_sent(row: &Row, key: &str, w: &PerWrite) -> Option<f64> {
    row.primaries.get(key).and_then(|p| w.wire_sent.get(p)).copied()
}

fn bytes_table(rows: &[Row]) -> Block {
    let mut out = Vec::new();
    for row in rows.iter().filter(|r| r.deployment == "replicated") {
        for (label, key, w) in engines(row) {
            let primary = row.primaries.get(key).map(String::as_str);
            out.push(vec![
                label.to_owned(),
                format!("{} {}", row.mix, row.size),
                format::count(w.writes as f64),
                format::opt_bytes(w.log_bytes),
                if key == "pg" {
                    format!(
                        "{} FPI, {} records",
                        format::seconds(w.full_page_images, 2),
                        format::seconds(w.log_records, 1)
                    )
                } else {
                    format!(
                        "entry {}, {} entries",
                        format::opt_bytes(w.orders_entry_bytes),
                        format::seconds(w.log_records, 2)
                    )
                },
                members(&w.sent_to, format::bytes),
                format::opt_bytes(primary_sent(row, key, w)),
                format!(
                    "{} ({})",
                    format::opt_bytes(w.standbys_received(primary)),
                    members(
                        &w.wire_received
                            .iter()
                            .filter(|(m, _)| Some(m.as_str()) != primary)
                            .map(|(m, v)| (m.clone(), *v))
                            .collect(),
                        format::bytes,
                    )
                ),
                members(&w.cpu_ms, |v| format!("{v:.2}")),
            ]);
        }
    }
    headed(
        &[
            "engine",
            "write",
            "writes in window",
            "log per write (WAL / oplog)",
            "log detail per write",
            "WAL sent per standby (sent_lsn)",
            "primary sent on the wire",
            "standbys received on the wire",
            "CPU ms per write per member",
        ],
        out,
    )
}

fn cost_table(rows: &[Row]) -> Block {
    let mut out = Vec::new();
    for row in rows {
        for (label, key, w) in engines(row) {
            let f = row.round.as_ref();
            let summary = f.and_then(|f| if key == "pg" { f.pg.as_ref() } else { f.mongo.as_ref() });
            let (p95, p99) = row.at_max_rate.get(key).copied().unwrap_or((None, None));
            let window = row.window.get(key);
            out.push(vec![
                row.deployment.to_owned(),
                format!("{} {}", row.mix, row.size),
                label.to_owned(),
                f.map_or(NONE.into(), |f| {
                    let limit = limit(f, key).map_or_else(String::new, |l| format!(" ({l})"));
                    format!("{}{limit}", format::max_rate(summary, f.start_rate))
                }),
                format!("{} / {}", format::ms(p95), format::ms(p99)),
                window.map_or(NONE.into(), |t| {
                    format!("{}/s, p95 {}", format::count(t.per_second), format::ms(t.p95_ms))
                }),
                format!("{} ({})", format::seconds(w.cpu_total(), 2), members(&w.cpu_ms, |v| format!("{v:.2}"))),
                if key == "pg" { row.waited.pg.clone() } else { row.waited.mongo.clone() },
            ]);
        }
    }
    headed(
        &[
            "deployment",
            "write",
            "engine",
            "max passing rate/s",
            "p95 / p99 there",
            "write window (closed loop)",
            "CPU ms per write: all (each member)",
            "a write waited for (read back)",
        ],
        out,
    )
}

/// What stopped `key`'s staircase where it first failed, over the repeats ("database", "machine,
/// database"); none when it never failed.
fn limit(f: &RoundFigures, key: &str) -> Option<String> {
    let mut kinds: Vec<&str> = f.limits.get(key)?.iter().map(String::as_str).collect();
    kinds.sort_unstable();
    kinds.dedup();
    (!kinds.is_empty()).then(|| kinds.join(", "))
}

/// A rate set by anything but the database measures the machine, not the engine: the ratio between
/// two such rates is said with what set them.
fn not_database(rows: [&Row; 2], key: &str) -> Option<String> {
    let others: Vec<String> = rows
        .iter()
        .filter_map(|row| {
            let l = limit(row.round.as_ref()?, key)?;
            (l != "database").then(|| format!("{} {l}", row.deployment))
        })
        .collect();
    (!others.is_empty()).then(|| format!(" (not database-limited: {})", others.join(", ")))
}

fn find<'a>(rows: &'a [Row], deployment: &str, mix: &str, size: &str) -> Option<&'a Row> {
    rows.iter().find(|r| r.deployment == deployment && r.mix == mix && r.size == size)
}

/// The mechanism in words, from the figures, set against the expectation.
fn statements(rows: &[Row]) -> Vec<String> {
    let mut said = Vec::new();
    for size in SIZES {
        let Some(row) = find(rows, "replicated", "status", size.label) else { continue };
        let doc = row.approx_doc_bytes as f64;
        let (Some(wal), Some(oplog)) = (row.pg.log_bytes, row.mongo.orders_entry_bytes) else { continue };
        let pg_words = if wal >= 0.5 * doc {
            "as expected of a jsonb update, which writes a whole new row version (its TOASTed value too)"
        } else {
            "LESS than half the document, against the expectation of a whole new row version: the WAL holds the \
             new version compressed (TOAST's pglz) or only part of it"
        };
        // Whether the entry grows with the document: the other size's entry for the same update.
        let other = SIZES.iter().filter(|o| o.label != size.label).find_map(|o| {
            let r = find(rows, "replicated", "status", o.label)?;
            Some((r.approx_doc_bytes as f64, r.mongo.orders_entry_bytes?))
        });
        let mongo_words = match other {
            Some((other_doc, other_entry)) if (other_doc - doc).abs() > doc.min(other_doc) => {
                let entries = oplog.max(other_entry) / oplog.min(other_entry).max(1.0);
                let docs = doc.max(other_doc) / doc.min(other_doc).max(1.0);
                if entries < 2.0 {
                    format!(
                        "the same within {entries:.2}× for documents {docs:.0}× apart: as expected, the `$set` \
                         entry records the changed fields (and its own fixed fields), not the document"
                    )
                } else {
                    format!(
                        "{entries:.1}× apart for documents {docs:.0}× apart: AGAINST the expectation that a `$set` \
                         entry records the changed fields only"
                    )
                }
            }
            _ => "(one size only: whether the entry grows with the document is not measured)".to_owned(),
        };
        said.push(format!(
            "A status update of a {} order (about {}): PostgreSQL wrote {} of WAL per update ({} full-page images) \
             and its primary sent {} on the wire, {pg_words}; MongoDB's oplog entry for it was {} ({} of oplog per \
             update in all) and its primary sent {} on the wire, {mongo_words}.",
            size.label,
            format::bytes(doc),
            format::bytes(wal),
            format::seconds(row.pg.full_page_images, 2),
            format::opt_bytes(primary_sent(row, "pg", &row.pg)),
            format::bytes(oplog),
            format::opt_bytes(row.mongo.log_bytes),
            format::opt_bytes(primary_sent(row, "mongo", &row.mongo)),
        ));
    }
    said.extend(idle(rows));
    for mix in ["insert", "status"] {
        for size in SIZES {
            let (Some(r), Some(s)) = (find(rows, "replicated", mix, size.label), find(rows, "single", mix, size.label))
            else {
                continue;
            };
            let rate = |row: &Row, pg: bool| {
                let f = row.round.as_ref()?;
                let summary = (if pg { f.pg.as_ref() } else { f.mongo.as_ref() })?;
                Some((summary.median, summary.lower_bound))
            };
            // A target that passed every step has a lower bound for a maximum: the ratio is then one
            // too (replicated) or an upper bound (single).
            let change = |pg: bool| match (rate(r, pg), rate(s, pg)) {
                (Some((a, a_low)), Some((b, b_low))) if b > 0.0 => {
                    let bound = match (a_low, b_low) {
                        (true, false) => "≥ ",
                        (false, true) => "≤ ",
                        (true, true) => "? ",
                        (false, false) => "",
                    };
                    let key = if pg { "pg" } else { "mongo" };
                    let caveat = not_database([r, s], key).unwrap_or_default();
                    format!("{bound}{:.2}× its single server's{caveat}", a / b)
                }
                _ => NONE.into(),
            };
            said.push(format!(
                "{mix} {}: replicated, PostgreSQL's maximum passing rate is {} and MongoDB's {}.",
                size.label,
                change(true),
                change(false)
            ));
        }
    }
    said
}

/// What the replicas' members cost with no load (the median over the rows' idle seconds): CPU per
/// write in a window includes this, divided by the window's writes.
fn idle(rows: &[Row]) -> Option<String> {
    let replicated: Vec<&Row> = rows.iter().filter(|r| r.deployment == "replicated").collect();
    let median = |pick: &dyn Fn(&Row) -> Option<f64>| {
        let mut values: Vec<f64> = replicated.iter().filter_map(|r| pick(r)).collect();
        values.sort_by(f64::total_cmp);
        values.get(values.len() / 2).copied()
    };
    let sum = |map: &std::collections::BTreeMap<String, f64>, prefix: &str| -> Option<f64> {
        let v: Vec<f64> = map.iter().filter(|(m, _)| m.starts_with(prefix)).map(|(_, v)| *v).collect();
        (!v.is_empty()).then(|| v.iter().sum())
    };
    let words = |engine: &str, prefix: &'static str| {
        format!(
            "{engine}'s three members {} cores and {}/s on the wire together",
            format::seconds(median(&|r| sum(&r.idle_cores, prefix)), 3),
            format::opt_bytes(median(&|r| sum(&r.idle_bytes_per_second, prefix)))
        )
    };
    (!replicated.is_empty()).then(|| {
        format!(
            "With no load (the seconds before each window, median over the rows), {} and {}: the CPU per \
             write of a window includes this share, divided by the window's writes.",
            words("PostgreSQL", "pg"),
            words("MongoDB", "mongo")
        )
    })
}

pub fn outcome(rows: &[Row], reads: &[SpreadRow], refs: Vec<RoundRef>, replicas: &Replicas) -> Outcome {
    let env = |k: &str| replicas.env.get(k).cloned().unwrap_or_else(|| "?".into());
    Outcome {
        title: "Experiment replication: what a durable write costs on three members, and what it ships".into(),
        summary: format!(
            "Inserts and status updates at 1 KB and 100 KB, on the stack's replicas ({} members per engine, round \
             trip {} ms by {}, {} CPU and {} of memory per member) and then on the single servers under the \
             same budget each; both engines driven at the same moment. Per row a closed-loop write window measured \
             by the servers' counters (WAL position, `pg_stat_wal`, `pg_stat_replication.sent_lsn`; the oplog \
             entries' `$bsonSize`) and the kernel's (each member's bytes through its bridge port, its cgroup's CPU \
             time), divided by the writes acknowledged in it, then the staircase of a round (p95 < 50 ms, < 1% \
             failed). What each write waited for is read back from the services' `/diagnostics`, \
             `pg_stat_replication` and Patroni.",
            env("REPLICA_COUNT"),
            env("REPLICA_RTT_MS"),
            env("REPLICA_DELAY_METHOD"),
            env("REPLICA_DB_CPUS"),
            env("REPLICA_DB_MEMORY").parse::<f64>().map_or_else(|_| "?".into(), format::bytes),
        ),
        statements: statements(rows).into_iter().chain(reads_statement(reads)).collect(),
        setups: Vec::new(),
        comparisons: Vec::new(),
        details: vec![
            Block::Heading(2, "Bytes shipped per write (replicated)".into()),
            bytes_table(rows),
            Block::Heading(2, "Replication lag during the write windows (replicated)".into()),
            Block::Paragraph(
                "Sampled on each primary four times a second while the write window ran: a PostgreSQL \
                 standby's `pg_stat_replication.replay_lag` (the primary's flush of the WAL to the standby's \
                 replay of it), a MongoDB secondary's `lastAppliedWallTime` behind the primary's \
                 (`replSetGetStatus`). Not the same measure: PostgreSQL's is a latency (how long the last replayed \
                 WAL took to be replayed there), above zero while writes flow; MongoDB's a gap between positions \
                 (zero whenever the secondary has applied all the primary has, in whole milliseconds). Neither is \
                 what a write waited for."
                    .into(),
            ),
            lag_table(rows),
            Block::Heading(2, "Durable write cost, replicated and single".into()),
            cost_table(rows),
            Block::Heading(2, "Reads on the primary, and spread over the members (replicated, 1 KB)".into()),
            Block::Paragraph(
                "The `read` mix (orders by id) on the replicas with every read on the primary, then with \
                 orders-pg reading from `READ_DATABASE_URL` (the members, `target_session_attrs=read-only`, \
                 `load_balance_hosts=random`) and orders-mongo with `readPreference=secondaryPreferred`; writes \
                 stay on the primary. Where the reads went is each service's `/diagnostics` (`reads`). Visibility: \
                 inserts one after the other through each service, each followed at once by `GET`s of it until \
                 one finds it: how often the first missed, and how long after the `201` the order was found."
                    .into(),
            ),
            reads_table(reads),
        ],
        charts: Vec::new(),
        variants: serde_json::to_value(rows).unwrap_or_default(),
        rounds: refs,
        extra: [("reads_spread".to_owned(), serde_json::to_value(reads).unwrap_or_default())].into_iter().collect(),
    }
}

/// Per replicated row and engine: the member written to, every other member's median and largest lag.
fn lag_table(rows: &[Row]) -> Block {
    let mut out = Vec::new();
    for row in rows.iter().filter(|r| r.deployment == "replicated") {
        for (label, key, _) in engines(row) {
            let lags: Vec<String> = row
                .lag
                .iter()
                .filter(|(member, _)| member.starts_with(key) && Some(*member) != row.primaries.get(key))
                .map(|(member, l)| {
                    format!(
                        "{member} {} (max {}, {} samples)",
                        format::ms(Some(l.median_ms)),
                        format::ms(Some(l.max_ms)),
                        l.samples
                    )
                })
                .collect();
            let lags = if lags.is_empty() { NONE.to_owned() } else { lags.join(", ") };
            let primary = row.primaries.get(key).cloned().unwrap_or_else(|| NONE.to_owned());
            out.push(vec![format!("{} {}", row.mix, row.size), label.to_owned(), primary, lags]);
        }
    }
    headed(&["write", "engine", "primary (written to)", "lag: median (max) per standby or secondary"], out)
}

/// The read rate on the primary against spread, per engine, and what the first reads missed.
fn reads_statement(reads: &[SpreadRow]) -> Option<String> {
    let [primary, spread] = reads else { return None };
    let engine = |label: &str, key: &str| -> Option<String> {
        let rate = |row: &SpreadRow| {
            let summary =
                row.round.as_ref().and_then(|r| if key == "pg" { r.pg.as_ref() } else { r.mongo.as_ref() })?;
            Some((summary.median, if summary.lower_bound { "≥ " } else { "" }))
        };
        let ((on_primary, b1), (on_others, b2)) = (rate(primary)?, rate(spread)?);
        let missed = spread.visibility.get(key).map_or(0, |v| v.first_read_missed);
        let inserts = spread.visibility.get(key).map_or(0, |v| v.inserts);
        Some(format!(
            "{label} {b1}{} req/s on the primary, {b2}{} spread ({:.2}×; a GET right after the 201 missed the \
             order {missed} times of {inserts})",
            format::count(on_primary),
            format::count(on_others),
            on_others / on_primary.max(1.0)
        ))
    };
    let engines: Vec<String> =
        [("PostgreSQL", "pg"), ("MongoDB", "mongo")].iter().filter_map(|(l, k)| engine(l, k)).collect();
    (!engines.is_empty()).then(|| format!("Reads (1 KB, the read mix) on the replicas: {}.", engines.join("; ")))
}

fn reads_table(reads: &[SpreadRow]) -> Block {
    let mut out = Vec::new();
    for row in reads {
        for (label, key) in [("PostgreSQL", "pg"), ("MongoDB", "mongo")] {
            let rate = row.round.as_ref().and_then(|r| if key == "pg" { r.pg.as_ref() } else { r.mongo.as_ref() });
            let seen = row.visibility.get(key);
            out.push(vec![
                label.to_owned(),
                row.reads.to_owned(),
                row.reads_from.get(key).cloned().unwrap_or_else(|| NONE.into()),
                rate.map_or_else(
                    || NONE.into(),
                    |r| {
                        let bound = if r.lower_bound { "≥ " } else { "" };
                        let limit = row.round.as_ref().and_then(|f| f.limits.get(key)).map(|l| l.join(", "));
                        format!(
                            "{bound}{}{}",
                            format::count(r.median),
                            limit.map_or(String::new(), |l| format!(" ({l})"))
                        )
                    },
                ),
                seen.map_or_else(|| NONE.into(), |v| format!("{} of {}", v.first_read_missed, v.inserts)),
                seen.map_or_else(|| NONE.into(), |v| format!("{:.2} / {:.2}", v.p50_ms, v.max_ms)),
                seen.map_or_else(|| NONE.into(), |v| v.never_seen.to_string()),
            ]);
        }
    }
    headed(
        &[
            "engine",
            "reads on",
            "a read answered by",
            "read max rate, req/s (what stopped it)",
            "first GET after the 201 missed",
            "found after, ms (median / max)",
            "never found in 2 s",
        ],
        out,
    )
}
