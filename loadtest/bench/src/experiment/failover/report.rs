//! The failover's report: both engines side by side (the gap, the answers, what was written, who
//! became primary, whether the service kept its process, the old primary's return), then the
//! settings that decide the gap as the servers and the services read them back, and the chart of
//! the per-100 ms buckets (`chart`); `result.json` carries every figure and the buckets.

use super::{Engine, Plan};
use crate::experiment::output::Outcome;
use orders_bench_report::doc::Block;
use serde_json::{Value, json};

/// The keys of a service's `/diagnostics` that bound how long a request waits on a dead primary.
const SERVICE_KEYS: [&str; 6] = [
    "pool_size",
    "pool_timeout_ms",
    "statement_timeout",
    "max_time_ms",
    "server_selection_timeout_ms",
    "request_timeout_ms",
];

/// Those keys wherever they sit in the service's `/diagnostics`.
pub fn service_settings(diagnostics: &Value) -> Value {
    let mut found = serde_json::Map::new();
    collect(diagnostics, &mut found);
    Value::Object(found)
}

fn collect(v: &Value, found: &mut serde_json::Map<String, Value>) {
    match v {
        Value::Object(map) => {
            for (k, v) in map {
                if SERVICE_KEYS.contains(&k.as_str()) && !v.is_object() && !found.contains_key(k) {
                    found.insert(k.clone(), v.clone());
                } else {
                    collect(v, found);
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| collect(v, found)),
        _ => {}
    }
}

fn ms(v: Option<f64>) -> String {
    v.map_or("not within the run".into(), |v| format!("{:.1} s", v / 1000.0))
}

fn rows(pg: &Engine, mongo: &Engine) -> Vec<Vec<String>> {
    let row = |name: &str, f: &dyn Fn(&Engine) -> String| vec![name.to_owned(), f(pg), f(mongo)];
    let mut rows = insert_rows(&row);
    if pg.reads.is_some() || mongo.reads.is_some() {
        let reads = |e: &Engine, f: &dyn Fn(&super::reads::Figures) -> String| e.reads.as_ref().map_or("–".into(), f);
        rows.push(row("reads (orders by id, product searches): sent / answered / failed", &|e| {
            reads(e, &|r| format!("{} / {} / {} ({} searches)", r.reads, r.answered, r.failed, r.failed_searches))
        }));
        rows.push(row("reads failed, by answer", &|e| {
            reads(e, &|r| {
                let by: Vec<String> = r.failures_by_status.iter().map(|(s, n)| format!("{s}: {n}")).collect();
                if by.is_empty() { "none".into() } else { by.join(", ") }
            })
        }));
        rows.push(row("the readers' outage: kill → last read failed", &|e| {
            reads(e, &|r| ms(r.last_failure_after_kill_ms))
        }));
        rows.push(row("reads sent inside that outage and answered", &|e| {
            reads(e, &|r| r.answered_in_outage.to_string())
        }));
    }
    rows
}

/// A row of the table: its name, then each engine's cell.
type Row<'a> = dyn Fn(&str, &dyn Fn(&Engine) -> String) -> Vec<String> + 'a;

/// The rows every run has: the kill, the inserts' answers and what was written.
fn insert_rows(row: &Row<'_>) -> Vec<Vec<String>> {
    vec![
        row("primary killed (SIGKILL)", &|e| {
            e.killed.as_ref().map_or("?".into(), |v| format!("{} (pid {})", v.member, v.pid))
        }),
        row("new primary (servers' own word)", &|e| match (&e.new_primary, e.new_primary_after_ms) {
            (Some(m), Some(t)) => format!("{m} (seen by the client's poll {:.1} s after the kill)", t / 1000.0),
            _ => "none within 150 s".into(),
        }),
        row("kill → promotion (servers' clock: Patroni `/history`, `lastElectionDate`)", &|e| ms(e.promoted_after_ms)),
        row("kill → first acknowledged write", &|e| ms(e.figures.first_ack_after_kill_ms)),
        row("kill → p95 back under 50 ms (1 s windows)", &|e| ms(e.figures.p95_back_under_ms)),
        row("requests / acknowledged / given up", &|e| {
            format!("{} / {} / {}", e.figures.requests, e.figures.acknowledged, e.figures.given_up)
        }),
        row("requests retried (attempts beyond the first)", &|e| {
            format!("{} ({})", e.figures.retried, e.figures.retries)
        }),
        row("failed attempts: outcome unknown / not written / rejected", &|e| {
            format!(
                "{} / {} / {}",
                e.figures.unknown_answers, e.figures.not_written_answers, e.figures.rejected_answers
            )
        }),
        row("**acknowledged writes lost**", &|e| {
            format!(
                "**{}** of {}",
                e.written.acknowledged_lost,
                e.written.acknowledged_found + e.written.acknowledged_lost
            )
        }),
        row("acknowledged lost, per member (read directly once caught up)", &|e| super::every::cell(&e.members)),
        row("answered \"not written\", found afterwards", &|e| e.written.not_written_found.to_string()),
        row("given up, found afterwards", &|e| e.written.given_up_found.to_string()),
        row("**duplicates** (rows − distinct keys/ids in the database)", &|e| {
            format!(
                "**{}** ({} rows, {} keys, {} ids)",
                e.written.duplicates, e.written.rows, e.written.distinct_keys, e.written.distinct_ids
            )
        }),
        row("unreadable on read-back", &|e| e.written.unreadable.to_string()),
        row("service process kept (PID before → after)", &|e| {
            let pid = |p: Option<u32>| p.map_or("?".into(), |p| p.to_string());
            format!(
                "{} ({} → {})",
                if e.same_service_process { "yes" } else { "**no**" },
                pid(e.service_pid_before),
                pid(e.service_pid_after)
            )
        }),
        row("old primary's rejoin (`pg_rewind`; MongoDB's rollback files)", &|e| super::rejoin::cell(&e.rejoin)),
        row("old primary back as standby", &|e| match (&e.old_primary_rejoined, e.old_primary_rejoined_after_ms) {
            (Some(state), Some(t)) => format!("{state}, seen {:.1} s after the kill", t / 1000.0),
            _ => "not within 150 s of the kill".into(),
        }),
    ]
}

pub fn outcome(plan: Plan, pg: &Engine, mongo: &Engine) -> Outcome {
    let weakened = if plan.weak_durability {
        "**Durability WEAKENED on purpose** (`--weak-durability`: PostgreSQL `synchronous_commit=local`, MongoDB \
         `w: 1`): acknowledged writes may be lost; this run shows whether the read-back catches it. "
    } else {
        ""
    };
    let summary = format!(
        "{weakened}On the replicated stack, orders-pg (multi-host URL, `target_session_attrs=read-write`) and orders-mongo \
         (replica-set URI) took {} inserts/s each, open loop, for {} s; each insert carried its own id and an \
         `Idempotency-Key`, and was retried with the same key after an unknown or \"not written\" answer (back-off 100 \
         ms doubling to 1 s, at most {} retries). {} s in, each engine's primary was killed with SIGKILL at the same \
         moment (PostgreSQL: the postmaster under Patroni, Patroni kept running; MongoDB: the primary mongod, started \
         again once a new primary was elected). Patroni's `primary_start_timeout` was {} s for the run.",
        plan.rate,
        plan.run.as_secs_f64(),
        plan.retries,
        plan.kill_after.as_secs_f64(),
        plan.primary_start_timeout
    );
    let summary = match plan.rates() {
        Ok([inserts, by_id, searches]) if plan.shop => format!(
            "{summary} The shop mix: of the {} requests/s per service, {inserts} were inserts (the figures below),              {by_id} orders read by id and {searches} product searches, each read sent once and counted answered              on a 200 or 404 (the database answered), failed otherwise.",
            plan.rate
        ),
        _ => summary,
    };
    let settings = vec![
        format!(
            "Patroni (`/config`): {}",
            pg.settings_line(&["ttl", "loop_wait", "retry_timeout", "primary_start_timeout", "synchronous_mode"])
        ),
        format!(
            "MongoDB (`replSetGetConfig`): {}",
            mongo.settings_line(&["electionTimeoutMillis", "heartbeatIntervalMillis", "catchUpTimeoutMillis"])
        ),
        format!("orders-pg (`/diagnostics`): {}", pg.settings["service"]),
        format!("orders-mongo (`/diagnostics`): {}", mongo.settings["service"]),
    ];
    let details = vec![
        Block::Heading(2, "Failover, side by side".into()),
        Block::Table {
            header: vec![String::new(), "PostgreSQL (Patroni)".into(), "MongoDB (rs0)".into()],
            rows: rows(pg, mongo),
        },
        Block::Heading(2, "The settings that decide the gap (read back)".into()),
        Block::List(settings),
        Block::Paragraph(format!(
            "The servers' own account: Patroni's `/history` {}; MongoDB's `replSetGetStatus` at the end {}.",
            pg.servers_say["patroni_history"], mongo.servers_say["replset"]
        )),
    ];
    Outcome {
        title: "Experiment failover: a primary killed under inserts (issue 43)".into(),
        summary,
        statements: Vec::new(),
        setups: Vec::new(),
        comparisons: Vec::new(),
        details,
        charts: vec![super::chart::entry(&pg.figures, &mongo.figures, pg.kill_ms.or(mongo.kill_ms))],
        variants: json!({"plan": plan, "engines": [pg, mongo]}),
        rounds: Vec::new(),
        extra: serde_json::Map::new(),
    }
}

impl Engine {
    fn settings_line(&self, keys: &[&str]) -> String {
        keys.iter().map(|k| format!("{k} = {}", self.settings[*k])).collect::<Vec<_>>().join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn service_settings_are_found_wherever_they_sit() {
        let diag =
            json!({"settings": {"pool_timeout_ms": 500, "x": 1}, "mongo": {"server_selection_timeout_ms": 2000}});
        assert_eq!(service_settings(&diag), json!({"pool_timeout_ms": 500, "server_selection_timeout_ms": 2000}));
    }
}
