//! `orders-bench experiment failover --quick` end to end against the replicated local stack
//! (issue 43): each engine's primary killed under constant-rate inserts, and afterwards, for both
//! engines, not one acknowledged order missing, not one order twice, not one "not written" answer
//! whose order exists; the services still the same processes; a new primary named by the servers
//! (another member than the one killed); the gap measured and finite; the old primaries back as
//! standbys, so the stack is whole again for the tests after this one. Gated like
//! `experiment_replication`: skipped, saying so, without `REPLICA_DATABASE_URL`.

use crate::support;

use serde_json::Value;
use support::{read_json, replicas_running};

fn count(e: &Value, path: &[&str]) -> u64 {
    let v = path.iter().fold(e, |v, k| &v[*k]);
    v.as_u64().unwrap_or_else(|| panic!("{} is a count: {e:#}", path.join(".")))
}

fn assert_engine(e: &Value) {
    let name = e["engine"].as_str().expect("engine");
    assert_eq!(count(e, &["written", "acknowledged_lost"]), 0, "{name}: acknowledged writes lost: {e:#}");
    assert_eq!(count(e, &["written", "duplicates"]), 0, "{name}: an order written twice: {e:#}");
    assert_eq!(count(e, &["written", "not_written_found"]), 0, "{name}: answered \"not written\", yet there: {e:#}");
    assert_eq!(count(e, &["written", "unreadable"]), 0, "{name}: every order read back: {e:#}");
    let acked = count(e, &["figures", "acknowledged"]);
    assert!(acked > 0 && count(e, &["written", "acknowledged_found"]) == acked, "{name}: {e:#}");
    assert!(count(e, &["written", "rows"]) >= acked, "{name}: the database holds every acknowledged order: {e:#}");
    assert_eq!(e["same_service_process"], true, "{name}: the service kept its process: {e:#}");
    // Every member that caught up holds every acknowledged order; the new primary and at least
    // one other member must have.
    let members = e["members"].as_array().expect("members read back");
    let rejoined: Vec<&Value> = members.iter().filter(|m| m["caught_up"] == true && m["error"].is_null()).collect();
    assert!(rejoined.len() >= 2, "{name}: at least two members read after catching up: {e:#}");
    for m in rejoined {
        assert_eq!(count(m, &["lost"]), 0, "{name}: acknowledged orders missing on {}: {e:#}", m["member"]);
        assert_eq!(count(m, &["found"]), acked, "{name}: {}", m["member"]);
    }
    let (old, new) = (e["old_primary"].as_str().expect("old primary"), e["new_primary"].as_str());
    assert!(new.is_some_and(|n| n != old), "{name}: a new primary other than {old}: {e:#}");
    let gap = e["figures"]["first_ack_after_kill_ms"].as_f64();
    assert!(gap.is_some_and(|g| g.is_finite() && g > 0.0), "{name}: the gap measured: {e:#}");
    // What the old primary rolled back was never an acknowledged order; Patroni's log was read.
    let rejoin = &e["rejoin"];
    assert!(rejoin["error"].is_null(), "{name}: the old primary's rejoin read: {e:#}");
    if name == "mongodb" {
        assert_eq!(count(rejoin, &["rolled_back_acknowledged"]), 0, "{name}: an acknowledged order rolled back: {e:#}");
    } else {
        assert!(rejoin["pg_rewind"].is_array(), "{name}: Patroni's log read: {e:#}");
    }
    // The rejoin is reported, not required: it came 10-22 s after the kill in the runs of
    // docs/replication.md, but once not within the experiment's 150 s on a busy machine.
    match e["old_primary_rejoined"].as_str() {
        Some(state) => assert!(state.contains("streaming") || state == "SECONDARY", "{name}: back as {state}"),
        None => eprintln!("NOTE: {name}'s old primary was not back as a standby within the run"),
    }
}

/// Patroni's `loop_wait` (`/config`) and MongoDB's `electionTimeoutMillis` (`replSetGetConfig`)
/// as the replicas have them now (`None`: unset, the server's default).
async fn gap_settings() -> (Option<u64>, Option<i64>) {
    let patroni = std::env::var("REPLICA_PATRONI_URLS").expect("stack.sh env prints REPLICA_PATRONI_URLS");
    let first = patroni.split(',').next().expect("a Patroni URL");
    let config: Value =
        reqwest::get(format!("{first}/config")).await.expect("Patroni /config").json().await.expect("JSON");
    let uri = std::env::var("REPLICA_MONGODB_URI").expect("stack.sh env prints REPLICA_MONGODB_URI");
    let client = mongodb::Client::with_uri_str(&uri).await.expect("MongoDB client");
    let got = client.database("admin").run_command(mongodb::bson::doc! {"replSetGetConfig": 1}).await.expect("config");
    let settings = got.get_document("config").and_then(|c| c.get_document("settings")).expect("settings");
    let timeout = settings.get("electionTimeoutMillis").and_then(|v| match v {
        mongodb::bson::Bson::Int32(n) => Some(i64::from(*n)),
        mongodb::bson::Bson::Int64(n) => Some(*n),
        _ => None,
    });
    (config["loop_wait"].as_u64(), timeout)
}

#[tokio::test]
async fn a_primary_killed_under_inserts_loses_no_acknowledged_write_and_writes_none_twice() {
    if !replicas_running() {
        return;
    }
    let before = gap_settings().await;
    // Tuned values for the run (they also shorten the gap): in effect during it, put back after.
    let out =
        support::replicated_experiment("failover", &["--patroni-loop-wait", "5", "--election-timeout-ms", "5000"])
            .await;
    let result = read_json(&out.join("result.json"));
    assert_eq!(result["experiment"].as_str(), Some("failover"));
    let engines = result["variants"]["engines"].as_array().expect("engines");
    assert_eq!(engines.len(), 2, "{result:#}");
    engines.iter().for_each(assert_engine);
    let in_run = |engine: &str, key: &str| {
        let e = engines.iter().find(|e| e["engine"] == engine).expect("the engine");
        e["settings"][key].as_f64()
    };
    assert_eq!(
        (in_run("postgres", "loop_wait"), in_run("mongodb", "electionTimeoutMillis")),
        (Some(5.0), Some(5000.0)),
        "the tuned settings in effect during the run: {result:#}"
    );
    assert_eq!(gap_settings().await, before, "Patroni's loop_wait and MongoDB's electionTimeoutMillis put back");
    let report = std::fs::read_to_string(out.join("report.md")).expect("report.md");
    assert!(report.contains("electionTimeoutMillis") && report.contains("loop_wait"), "{report}");
    // The chart of the buckets, beside the report and linked from it, with the kill marked.
    assert!(report.contains("(charts/failover-rate.svg)"), "{report}");
    let svg = std::fs::read_to_string(out.join("charts/failover-rate.svg")).expect("the failover chart");
    assert!(svg.contains("class=\"marker\"") && svg.matches("<polyline").count() == 4, "{svg}");
}
