//! `orders-bench experiment replication --quick` end to end against the replicated local stack
//! (issue 42): every row of both deployments present; on the replicas, each engine's log per write,
//! the WAL sent to each standby and the bytes its standbys received on the wire positive, and the
//! 100 KB inserts shipping more than the 1 KB ones on both engines; every row saying what each
//! write waited for as the servers report it (a synchronous standby and `synchronous_commit=on`;
//! `w: majority, j: true` on 2 of 3 members; on the single servers, no standby); every standby's
//! and secondary's lag sampled during the write windows. Gated like the
//! services' `replicas::` tests: skipped, saying so, without `REPLICA_DATABASE_URL` (root:
//! `stack.sh start --replicas 3 --only-replicas`, then `eval "$(infra/local/stack.sh env)"`).

use crate::support;

use serde_json::Value;
use support::{read_json, replicas_running};

fn number(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("a number: {v}"))
}

/// The sum of a member → bytes map, and how many members it names.
fn summed(map: &Value, skip: &str) -> (f64, usize) {
    let map = map.as_object().unwrap_or_else(|| panic!("a map of members: {map}"));
    let values: Vec<f64> = map.iter().filter(|(m, _)| m.as_str() != skip).map(|(_, v)| number(v)).collect();
    (values.iter().sum(), values.len())
}

fn row<'a>(rows: &'a [Value], deployment: &str, mix: &str, size: &str) -> &'a Value {
    rows.iter()
        .find(|r| r["deployment"] == deployment && r["mix"] == mix && r["size"] == size)
        .unwrap_or_else(|| panic!("no row {deployment} {mix} {size}"))
}

/// What a standby received on the wire per write, all standbys of `engine` together.
fn standbys_received(row: &Value, engine: &str) -> f64 {
    let primary = row["primaries"][engine].as_str().unwrap_or_else(|| panic!("{engine}'s primary: {row:#}"));
    let (bytes, standbys) = summed(&row[engine]["wire_received"], primary);
    assert_eq!(standbys, 2, "{engine}: two standbys on the bridge: {row:#}");
    bytes
}

fn assert_replicated_row(row: &Value) {
    for engine in ["pg", "mongo"] {
        let w = &row[engine];
        assert!(number(&w["writes"]) > 0.0, "{engine} acknowledged writes in the window: {row:#}");
        assert!(number(&w["log_bytes"]) > 0.0, "{engine} wrote its log: {row:#}");
        assert!(standbys_received(row, engine) > 0.0, "{engine}'s standbys received bytes: {row:#}");
        let (cpu, members) = summed(&w["cpu_ms"], "");
        assert_eq!(members, 3, "{engine}: every member's CPU: {row:#}");
        assert!(cpu > 0.0, "{row:#}");
    }
    let (sent, standbys) = summed(&row["pg"]["sent_to"], "");
    assert!(sent > 0.0 && standbys == 2, "WAL sent to each standby (sent_lsn): {row:#}");
    let waited = &row["waited"];
    let pg = waited["pg"].as_str().expect("pg waited");
    assert!(pg.contains("synchronous_commit=on"), "{pg}");
    assert_eq!(waited["pg_sync_standbys"].as_array().map(Vec::len), Some(1), "one synchronous standby: {waited:#}");
    let mongo = waited["mongo"].as_str().expect("mongo waited");
    assert!(mongo.starts_with("w:majority, j:true"), "{mongo}");
    assert_eq!((waited["mongo_acknowledged_by"].as_u64(), waited["mongo_members"].as_u64()), (Some(2), Some(3)));
    assert_lag_sampled(row);
}

/// Every standby and secondary, and only they, have a lag sampled during the write window.
fn assert_lag_sampled(row: &Value) {
    let lag = row["lag"].as_object().unwrap_or_else(|| panic!("a lag per member: {row:#}"));
    for engine in ["pg", "mongo"] {
        let primary = row["primaries"][engine].as_str().expect("the primary");
        let members: Vec<_> = lag.iter().filter(|(m, _)| m.starts_with(engine)).collect();
        assert_eq!(members.len(), 2, "{engine}: both standbys' lag: {lag:?}");
        for (member, l) in members {
            assert_ne!(member, primary, "the primary has no lag of its own: {lag:?}");
            assert!(number(&l["samples"]) > 0.0, "{member} was sampled: {l}");
            let (median, max) = (number(&l["median_ms"]), number(&l["max_ms"]));
            assert!((0.0..=max).contains(&median) && max < 60_000.0, "{member}: {l}");
        }
    }
}

#[tokio::test]
async fn replication_ships_bytes_per_write_and_every_row_says_what_each_write_waited_for() {
    if !replicas_running() {
        return;
    }
    let out = support::replicated_experiment("replication", &[]).await;
    let result = read_json(&out.join("result.json"));
    assert_eq!(
        (result["schema"].as_str(), result["experiment"].as_str()),
        (Some("orders-bench/experiment/1"), Some("replication"))
    );
    let rows = result["variants"].as_array().expect("rows");
    assert_eq!(rows.len(), 8, "2 deployments × 2 sizes × 2 mixes");
    for r in rows.iter().filter(|r| r["deployment"] == "replicated") {
        assert_replicated_row(r);
    }
    for engine in ["pg", "mongo"] {
        let (small, large) = (row(rows, "replicated", "insert", "1 KB"), row(rows, "replicated", "insert", "100 KB"));
        let log = |r: &Value| number(&r[engine]["log_bytes"]);
        assert!(log(large) > log(small), "{engine}: a 100 KB insert logs more than a 1 KB one");
        assert!(standbys_received(large, engine) > standbys_received(small, engine), "{engine}: and ships more");
    }
    for r in rows.iter().filter(|r| r["deployment"] == "single") {
        let waited = &r["waited"];
        assert_eq!(waited["pg_sync_standbys"].as_array().map(Vec::len), Some(0), "a single server: {waited:#}");
        assert!(waited["mongo"].as_str().is_some_and(|m| m.starts_with("w:majority, j:true")), "{waited:#}");
        assert!(number(&r["pg"]["log_bytes"]) > 0.0, "{r:#}");
        assert_eq!(r["lag"].as_object().map(|l| l.len()), Some(0), "a single server has no standby: {r:#}");
    }
    // Reads on the primary, then spread: where they went is each service's word, every probe's
    // order was found, and each read round measured both targets.
    let reads = result["reads_spread"].as_array().expect("reads_spread");
    assert_eq!(reads.len(), 2, "reads on the primary, then spread: {reads:#?}");
    for (row, pg_role, mongo_role) in [(&reads[0], "(primary)", "(primary)"), (&reads[1], "(standby)", "(secondary)")] {
        let from = &row["reads_from"];
        assert!(from["pg"].as_str().is_some_and(|m| m.ends_with(pg_role)), "{row:#}");
        assert!(from["mongo"].as_str().is_some_and(|m| m.ends_with(mongo_role)), "{row:#}");
        for engine in ["pg", "mongo"] {
            let seen = &row["visibility"][engine];
            assert_eq!((seen["inserts"].as_u64(), seen["never_seen"].as_u64()), (Some(50), Some(0)), "{row:#}");
            assert!(row["round"][engine]["median"].is_number(), "{engine}'s read round: {row:#}");
        }
    }
    for engine in ["pg", "mongo"] {
        assert_eq!(
            reads[0]["visibility"][engine]["first_read_missed"], 0,
            "{engine}: reads on the primary see its writes"
        );
    }
    let report = std::fs::read_to_string(out.join("report.md")).expect("report.md");
    assert!(report.contains("## Reads on the primary, and spread over the members"), "{report}");
    assert!(report.contains("## Replication lag during the write windows (replicated)"), "{report}");
    assert!(
        report.contains("## Bytes shipped per write (replicated)")
            && report.contains("A status update of a 100 KB order"),
        "{report}"
    );
}
