//! The Postgres knobs, each read back from the server: `PG_GIN_FASTUPDATE` (through
//! `/diagnostics` and `pg_class.reloptions`), `PG_PLAN_CACHE_MODE` and `PG_SYNCHRONOUS_COMMIT`
//! (on every pooled connection), `PG_STATEMENT_MODE` (named statements exist or not), and the
//! diagnostics that explain a benchmark (pending list, counters, both plans of the product query).

use orders_core::sample::order_body;
use orders_core::{IdGenerator, NewOrder, OrderStore, place_order};
use orders_pg::config::{OnOff, PlanCacheMode, StatementMode, SynchronousCommit};
use orders_pg::{PgConfig, PgStore};
use serde_json::Value;
use tokio_postgres::NoTls;

async fn store(url: &str, adjust: impl FnOnce(&mut PgConfig)) -> PgStore {
    let mut config = PgConfig::with_url(url);
    adjust(&mut config);
    PgStore::connect(&config).await.expect("connect")
}

async fn insert_orders(store: &PgStore, count: u64) {
    let ids = IdGenerator::new();
    for n in 0..count {
        let body = order_body(n % 7 + 1, [n + 1, n + 2, n + 3]);
        let new = NewOrder::parse(body.to_string().as_bytes()).expect("valid");
        place_order(store, &ids, new, None).await.expect("insert");
    }
}

async fn reloptions(url: &str) -> Vec<String> {
    let (client, connection) = tokio_postgres::connect(url, NoTls).await.expect("connect");
    tokio::spawn(connection);
    let row =
        client.query_one("SELECT reloptions FROM pg_class WHERE relname = 'orders_items'", &[]).await.expect("query");
    row.get::<_, Option<Vec<String>>>(0).unwrap_or_default()
}

#[tokio::test]
async fn gin_fastupdate_off_flushes_the_pending_list_and_on_restores_it() {
    let url = orders_pg::testing::fresh_database().await;
    let untouched = store(&url, |_| {}).await;
    insert_orders(&untouched, 40).await;
    let before = untouched.diagnostics().await.expect("diagnostics");
    assert_eq!(before["gin_index"]["fastupdate"], "on", "the default");
    assert!(before["gin_index"]["pending_tuples"].as_i64() > Some(0), "inserts filled the pending list: {before}");
    assert!(reloptions(&url).await.is_empty(), "unset leaves the index as it is");

    let off = store(&url, |c| c.gin_fastupdate = Some(OnOff::Off)).await;
    let after = off.diagnostics().await.expect("diagnostics");
    assert_eq!(after["gin_index"]["fastupdate"], "off");
    assert_eq!(after["gin_index"]["pending_tuples"], 0, "flushed: {after}");
    assert_eq!(reloptions(&url).await, ["fastupdate=off"]);
    insert_orders(&off, 10).await;
    assert_eq!(off.diagnostics().await.expect("diagnostics")["gin_index"]["pending_tuples"], 0, "no pending list");

    let on = store(&url, |c| c.gin_fastupdate = Some(OnOff::On)).await;
    assert_eq!(reloptions(&url).await, ["fastupdate=on"]);
    assert_eq!(on.diagnostics().await.expect("diagnostics")["gin_index"]["fastupdate"], "on");
}

#[tokio::test]
async fn plan_cache_mode_and_synchronous_commit_hold_on_every_pooled_connection() {
    let url = orders_pg::testing::fresh_database().await;
    let default = store(&url, |_| {}).await;
    let settings = default.diagnostics().await.expect("diagnostics")["settings"].clone();
    assert_eq!(settings["plan_cache_mode"], "auto");
    assert_eq!(settings["synchronous_commit"], "on", "durability on by default");
    assert_eq!(settings["fsync"], "on");

    let tuned = store(&url, |c| {
        c.plan_cache_mode = Some(PlanCacheMode::ForceCustomPlan);
        c.synchronous_commit = Some(SynchronousCommit::Off);
        c.pool_size = 4;
    })
    .await;
    // Four at once hold four different connections of the pool.
    let (a, b, c, d) = tokio::join!(tuned.diagnostics(), tuned.diagnostics(), tuned.diagnostics(), tuned.diagnostics());
    assert_eq!(tuned.pool_status().size, 4, "four connections were opened");
    for report in [a, b, c, d] {
        let settings = &report.expect("diagnostics")["settings"];
        assert_eq!(settings["plan_cache_mode"], "force_custom_plan");
        assert_eq!(settings["synchronous_commit"], "off");
    }
}

#[tokio::test]
async fn statement_mode_decides_whether_named_statements_exist() {
    let url = orders_pg::testing::fresh_database().await;
    for (mode, expect_prepared) in [(StatementMode::Prepared, true), (StatementMode::Unprepared, false)] {
        let store = store(&url, |c| {
            c.statement_mode = mode;
            c.pool_size = 1;
        })
        .await;
        insert_orders(&store, 3).await;
        let report = store.diagnostics().await.expect("diagnostics");
        let statements = report["prepared_statements"].as_array().cloned().unwrap_or_default();
        let insert = statements.iter().find(|s| s["statement"].as_str().is_some_and(|t| t.starts_with("INSERT")));
        assert_eq!(insert.is_some(), expect_prepared, "{mode:?}: {statements:?}");
        if let Some(insert) = insert {
            let executions =
                insert["generic_plans"].as_i64().unwrap_or(0) + insert["custom_plans"].as_i64().unwrap_or(0);
            assert_eq!(executions, 3, "one prepared statement, executed three times");
        }
        assert_eq!(report["settings"]["statement_mode"], Value::from(format!("{mode:?}").to_lowercase()));
    }
}

#[tokio::test]
async fn diagnostics_explain_table_activity_and_both_product_plans() {
    let url = orders_pg::testing::fresh_database().await;
    let store = store(&url, |_| {}).await;
    let before = store.diagnostics().await.expect("diagnostics");
    insert_orders(&store, 20).await;
    let after = store.diagnostics().await.expect("diagnostics");
    assert!(after["server_version"].as_str().is_some_and(|v| v.starts_with("18")), "{}", after["server_version"]);
    assert!(after["wal"]["bytes"].as_i64() > before["wal"]["bytes"].as_i64(), "inserts wrote WAL");
    assert!(after["sizes"]["index_bytes"]["orders_items"].as_i64() > Some(0));
    for counter in
        ["seq_scan", "seq_tup_read", "idx_scan", "n_tup_ins", "n_tup_upd", "n_tup_hot_upd", "n_live_tup", "n_dead_tup"]
    {
        assert!(after["table"][counter].is_i64(), "{counter} reported");
    }
    let plans = &after["product_query"];
    for kind in ["generic_plan", "custom_plan"] {
        let nodes = plans[kind]["nodes"].as_array().cloned().unwrap_or_default();
        assert_eq!(nodes.first().and_then(Value::as_str), Some("Limit"), "{kind}: {nodes:?}");
        assert!(plans[kind]["total_cost"].is_number(), "{kind} has a cost");
    }
    // The single test server: no standby, and a commit waits for its own WAL flush only.
    let replication = &after["replication"];
    assert_eq!(replication["role"], "standalone", "{replication:#}");
    assert_eq!(replication["commit_waits_for"], "the WAL flush on this server only", "{replication:#}");
    assert!(replication["server_port"].is_i64(), "{replication:#}");
}

#[tokio::test]
async fn request_connections_carry_the_request_timeout_as_statement_timeout() {
    let url = orders_pg::testing::fresh_database().await;
    let default = store(&url, |_| {}).await;
    let settings = default.diagnostics().await.expect("diagnostics")["settings"].clone();
    assert_eq!(settings["statement_timeout"], "10s", "REQUEST_TIMEOUT_MS by default");
    assert_eq!(settings["pool_timeout_ms"], 500);
    let short = store(&url, |c| c.limits.statement_timeout = std::time::Duration::from_millis(250)).await;
    let settings = short.diagnostics().await.expect("diagnostics")["settings"].clone();
    assert_eq!(settings["statement_timeout"], "250ms");
}
