//! What only the MongoDB service has: the BSON types in the collection, the indexes, the write
//! concern and query plan in `/diagnostics`, the pool figures, the strict document reader, the
//! binary's refusal to start on a bad `MONGO_*` value, and the runtime `WORKER_THREADS` chooses.
//! Real mongod; each test its own database.

use crate::common;

use common::{fresh_store, mongodb_uri, unique_db_name};
use mongodb::bson::{Bson, Document, doc};
use orders_core::sample::order_body;
use orders_core::{NewOrder, Order, OrderId, OrderStore, Returning, StoreError, Timestamp};
use orders_mongo::{MongoConfig, MongoStore};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

fn sample_order(id: u64) -> Order {
    let mut body = order_body(77, [1, 2, 3]);
    body["id"] = json!(id);
    let new = NewOrder::parse(body.to_string().as_bytes()).expect("valid");
    new.into_order(OrderId::new(id).expect("id"), Timestamp::parse("2026-11-30T10:00:00.000Z").expect("timestamp"))
}

fn raw_orders(store: &MongoStore) -> mongodb::Collection<Document> {
    store.database().collection("orders")
}

#[tokio::test]
async fn orders_are_stored_with_int64_ids_and_bson_dates() {
    let test = fresh_store().await;
    test.store.insert(&sample_order(4242).into()).await.expect("insert");
    let stored = raw_orders(&test.store).find_one(doc! {}).await.expect("find").expect("one order");
    assert_eq!(stored.get("_id"), Some(&Bson::Int64(4242)));
    assert_eq!(stored.get_document("customer").expect("customer").get("id"), Some(&Bson::Int64(77)));
    assert!(matches!(stored.get("created_at"), Some(Bson::DateTime(_))));
    assert!(matches!(stored.get("total_cents"), Some(Bson::Int64(_))));
    assert!(!stored.contains_key("note"));
}

/// Operations the server's profiler recorded on the `orders` collection of `store`'s database.
async fn profiled_operations(store: &MongoStore) -> Vec<String> {
    use futures_util::TryStreamExt;
    let namespace = format!("{}.orders", store.database().name());
    let profile = store.database().collection::<Document>("system.profile");
    let entries: Vec<Document> =
        profile.find(doc! {"ns": namespace}).await.expect("read the profile").try_collect().await.expect("entries");
    entries.iter().map(|entry| entry.get_str("op").unwrap_or("?").to_owned()).collect()
}

#[tokio::test]
async fn every_operation_is_one_command_on_its_success_path() {
    use orders_core::{CustomerId, CustomerQuery, Limit, ListBytes, ProductId, ProductQuery, Status, StatusChange};
    let test = fresh_store().await;
    for id in 1..=30 {
        test.store.insert(&sample_order(id).into()).await.expect("insert");
    }
    test.store.database().run_command(doc! {"profile": 2}).await.expect("profiler on");
    let id = OrderId::new(7).expect("id");
    let customer = CustomerQuery {
        customer: CustomerId::new(77).expect("id"),
        limit: Limit::new(100).expect("limit"),
        before: Some(OrderId::new(25).expect("id")),
        max_bytes: ListBytes::DEFAULT,
    };
    let product = ProductQuery {
        product: ProductId::new(2).expect("id"),
        limit: Limit::new(10).expect("limit"),
        max_bytes: ListBytes::DEFAULT,
    };
    let paid = StatusChange { status: Status::Paid, from: None };
    let shipped = StatusChange { status: Status::Shipped, from: Some(Status::Paid) };
    let mut recorded = Vec::new();
    let mut seen = 0;
    for step in ["get", "by_customer", "by_product", "insert", "update_status", "conditional update_status"] {
        match step {
            "get" => drop(test.store.get(id).await.expect("get")),
            "by_customer" => assert_eq!(test.store.by_customer(customer).await.expect("by customer").len(), 24),
            "by_product" => assert_eq!(test.store.by_product(product).await.expect("by product").len(), 10),
            "insert" => test.store.insert(&sample_order(31).into()).await.expect("insert"),
            "update_status" => {
                drop(test.store.update_status(id, paid, Timestamp::now(), Returning::Document).await.expect("update"))
            }
            _ => drop(
                test.store
                    .update_status(id, shipped, Timestamp::now(), Returning::Document)
                    .await
                    .expect("conditional update"),
            ),
        }
        let operations = profiled_operations(&test.store).await;
        recorded.push((step, operations[seen..].to_vec()));
        seen = operations.len();
    }
    test.store.database().run_command(doc! {"profile": 0}).await.expect("profiler off");
    for (step, operations) in &recorded {
        assert_eq!(operations.len(), 1, "{step} took {operations:?}; all: {recorded:?}");
    }
}

#[tokio::test]
async fn start_up_creates_the_indexes_and_a_second_start_is_a_no_op() {
    let test = fresh_store().await;
    let config = MongoConfig::new(mongodb_uri(), test.store.database().name());
    MongoStore::connect(&config).await.expect("connecting again reapplies the same indexes");
    let indexes: Vec<Document> = {
        use futures_util::TryStreamExt;
        let cursor = raw_orders(&test.store).list_indexes().await.expect("list indexes");
        cursor.try_collect::<Vec<_>>().await.expect("indexes").into_iter().map(|model| model.keys).collect()
    };
    assert_eq!(
        indexes,
        [
            doc! {"_id": 1},
            doc! {"customer.id": 1, "_id": -1},
            doc! {"items.product_id": 1},
            doc! {"idempotency_key": 1}
        ]
    );
}

#[tokio::test]
async fn diagnostics_report_the_write_concern_in_effect_and_an_index_scan_for_the_product_query() {
    let test = fresh_store().await;
    test.store.insert(&sample_order(1).into()).await.expect("insert");
    let report = test.store.diagnostics().await.expect("diagnostics");
    assert_eq!(report["backend"], "mongodb");
    assert!(report["server"]["version"].as_str().is_some_and(|v| !v.is_empty()), "{report:#}");
    assert_eq!(report["settings"]["write_concern"]["sent_with_every_write"], json!({"w": "majority", "j": true}));
    assert!(report["settings"]["write_concern"]["server_default"].is_object(), "answer or error, never absent");
    assert_eq!(report["settings"]["journal"]["startup_options"]["enabled"], true);
    if report["server"]["topology"]["kind"] == "standalone" {
        assert_eq!(report["replication"]["role"], "standalone", "{:#}", report["replication"]);
        assert_eq!(report["replication"]["acknowledged_by"], 1, "{:#}", report["replication"]);
    }
    let plan = &report["product_query"];
    let stages: Vec<&str> = plan["stages"].as_array().expect("stages").iter().filter_map(Value::as_str).collect();
    assert!(stages.contains(&"IXSCAN"), "stages {stages:?}");
    assert!(!stages.contains(&"COLLSCAN"), "stages {stages:?}");
    assert_eq!(plan["index_names"], json!(["orders_items"]));
    assert_eq!(report["collection"]["count"], 1);
    assert!(report["collection"]["indexSizes"]["orders_items"].as_i64().is_some(), "{:#}", report["collection"]);
    for figure in ["insert", "query", "update", "command"] {
        assert!(report["opcounters"][figure].is_number(), "opcounters.{figure}");
    }
    for figure in
        ["bytes_currently_in_cache", "maximum_bytes_configured", "pages_read_into_cache", "pages_written_from_cache"]
    {
        assert!(report["wiredtiger_cache"][figure].is_number(), "wiredtiger_cache.{figure}");
    }
}

#[tokio::test]
async fn another_write_concern_is_what_diagnostics_report() {
    let mut config = MongoConfig::new(mongodb_uri(), unique_db_name("orders_test_w1"));
    config.write_concern = mongodb::options::Acknowledgment::Nodes(1);
    config.journal = false;
    let store = MongoStore::connect(&config).await.expect("connect");
    let report = store.diagnostics().await.expect("diagnostics");
    store.database().drop().await.expect("drop the test database");
    assert_eq!(report["settings"]["write_concern"]["sent_with_every_write"], json!({"w": 1, "j": false}));
}

#[tokio::test]
async fn pool_figures_come_from_the_driver_and_stay_consistent() {
    let test = fresh_store().await;
    test.store.insert(&sample_order(5).into()).await.expect("insert");
    let reads = (0..8).map(|_| test.store.get(OrderId::new(5).expect("id")));
    for result in futures_util::future::join_all(reads).await {
        result.expect("get");
    }
    // The driver's pool task takes a finished operation's connection back a moment later.
    let mut pool = test.store.pool_status();
    for _ in 0..100 {
        if pool.available == pool.size {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        pool = test.store.pool_status();
    }
    assert_eq!(pool.max_size, 16);
    assert!(pool.size >= 1 && pool.size <= 16, "{pool:?}");
    assert_eq!(pool.available, pool.size, "nothing is checked out between requests: {pool:?}");
    assert_eq!(pool.waiting, 0);
}

#[tokio::test]
async fn a_document_with_a_field_the_service_does_not_know_is_an_error_not_a_silent_drop() {
    let test = fresh_store().await;
    test.store.insert(&sample_order(9).into()).await.expect("insert");
    raw_orders(&test.store).update_one(doc! {"_id": 9_i64}, doc! {"$set": {"discount": 5_i64}}).await.expect("update");
    match test.store.get(OrderId::new(9).expect("id")).await {
        Err(StoreError::Internal(message)) => assert!(message.contains("discount"), "{message}"),
        other => panic!("expected an internal error naming the field, got {other:?}"),
    }
}

/// Drops a database a test made through the binary (from synchronous test code).
fn drop_database(name: &str) {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    runtime.block_on(async {
        let client = mongodb::Client::with_uri_str(mongodb_uri()).await.expect("client");
        client.database(name).drop().await.expect("drop the test database");
    });
}

/// Runs the binary with `env`; returns its exit code and what it printed to stderr.
fn run_binary(env: &[(&str, &str)]) -> (Option<i32>, String) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_orders-mongo"));
    command.env("BIND_ADDR", "127.0.0.1:0").env("RUST_BACKTRACE", "0").env("MONGODB_URI", mongodb_uri());
    for (name, value) in env {
        command.env(name, value);
    }
    let output = command.output().expect("run orders-mongo");
    (output.status.code(), String::from_utf8_lossy(&output.stderr).into_owned())
}

#[test]
fn a_bad_write_concern_or_journal_value_stops_the_binary_with_a_message_naming_the_variable() {
    for (variable, value) in [
        ("MONGO_WRITE_CONCERN", "0"),
        ("MONGO_WRITE_CONCERN", "many"),
        ("MONGO_WRITE_CONCERN", "51"),
        ("MONGO_JOURNAL", "yes"),
        ("MONGO_JOURNAL", ""),
        ("MONGO_POOL_SIZE", "0"),
    ] {
        let (code, stderr) = run_binary(&[(variable, value)]);
        assert!(code.is_some_and(|code| code != 0), "{variable}={value:?} exited with {code:?}");
        assert!(stderr.contains(variable), "{variable}={value:?}: {stderr}");
    }
}

#[test]
#[cfg(not(feature = "srv"))] // with it, the driver would look the name up
fn a_mongodb_srv_uri_without_the_srv_feature_stops_start_up_saying_how_to_build() {
    let (code, stderr) = run_binary(&[("MONGODB_URI", "mongodb+srv://cluster0.example.net/")]);
    assert_eq!(code, Some(2), "a usage error: {stderr}");
    assert!(stderr.contains("mongodb+srv://") && stderr.contains("--features srv"), "{stderr}");
}

#[test]
fn a_write_concern_the_deployment_cannot_satisfy_stops_start_up_naming_the_variable() {
    // A standalone server (the local stack) has one member; a replica set of 50 does not exist.
    let db = unique_db_name("orders_test_w50");
    let (code, stderr) = run_binary(&[("MONGO_WRITE_CONCERN", "50"), ("MONGODB_DB", &db)]);
    drop_database(&db);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("MONGO_WRITE_CONCERN=50"), "{stderr}");
}

#[test]
fn the_binary_starts_serves_readiness_and_stops_on_sigterm() {
    let db = unique_db_name("orders_test_bin");
    let mut child = Command::new(env!("CARGO_BIN_EXE_orders-mongo"))
        .env("BIND_ADDR", "127.0.0.1:0")
        .env("LOG_FORMAT", "json")
        .env("RUST_LOG", "info")
        .env("MONGODB_URI", mongodb_uri())
        .env("MONGODB_DB", &db)
        .stdout(Stdio::piped())
        .spawn()
        .expect("start orders-mongo");
    // The reader lives until the child has exited, so its later log lines still have a reader.
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let address = lines
        .by_ref()
        .map_while(Result::ok)
        .find_map(|line| {
            let event: Value = serde_json::from_str(&line).ok()?;
            event["message"].as_str()?.strip_prefix("listening on ").map(str::to_owned)
        })
        .expect("the service logs its address");
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let ready = runtime.block_on(async {
        let app = orders_testkit::TestApp::at(format!("http://{address}"));
        (app.get("/readyz").await.status, app.get("/diagnostics").await)
    });
    let _ = Command::new("kill").args(["-TERM", &child.id().to_string()]).status();
    let status = child.wait().expect("wait");
    drop(lines);
    drop_database(&db);
    assert_eq!(ready.0, 200);
    assert_eq!(ready.1.status, 200);
    assert_eq!(ready.1.json["backend"], "mongodb");
    assert!(status.success(), "exit after SIGTERM: {status:?}");
}

#[tokio::test]
async fn worker_threads_choose_the_runtime_that_diagnostics_report() {
    let db = unique_db_name("orders_test_runtime");
    let env = [("MONGODB_URI", mongodb_uri()), ("MONGODB_DB", db.clone())];
    let checks = orders_testkit::runtime::check_worker_threads(env!("CARGO_BIN_EXE_orders-mongo"), &env).await;
    if let Ok(client) = mongodb::Client::with_uri_str(mongodb_uri()).await {
        let _ = client.database(&db).drop().await;
    }
    orders_testkit::runtime::assert_worker_threads_applied(&checks);
}

#[tokio::test]
async fn reads_and_status_changes_carry_max_time_ms_from_the_request_timeout() {
    use futures_util::TryStreamExt;
    use orders_core::{Status, StatusChange};
    let test = fresh_store().await;
    test.store.insert(&sample_order(3).into()).await.expect("insert");
    test.store.database().run_command(doc! {"profile": 2}).await.expect("profiler on");
    let id = OrderId::new(3).expect("id");
    test.store.get(id).await.expect("get");
    let paid = StatusChange { status: Status::Paid, from: None };
    test.store.update_status(id, paid, Timestamp::now(), Returning::Document).await.expect("update");
    test.store.database().run_command(doc! {"profile": 0}).await.expect("profiler off");
    let namespace = format!("{}.orders", test.store.database().name());
    let profile = test.store.database().collection::<Document>("system.profile");
    let entries: Vec<Document> =
        profile.find(doc! {"ns": namespace}).await.expect("profile").try_collect().await.expect("entries");
    assert!(entries.len() >= 2, "{entries:?}");
    for entry in &entries {
        let command = entry.get_document("command").expect("command");
        assert_eq!(
            command
                .get("maxTimeMS")
                .and_then(Bson::as_i64)
                .or_else(|| command.get_i32("maxTimeMS").ok().map(i64::from)),
            Some(10_000),
            "{entry}"
        );
    }
    let settings = test.store.diagnostics().await.expect("diagnostics")["settings"].clone();
    assert_eq!((settings["max_time_ms"].clone(), settings["pool_timeout_ms"].clone()), (json!(10_000), json!(500)));
}
