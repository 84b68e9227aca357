//! Faults on the real `orders-mongo` binary (issue 11): mongod killed and restarted under insert
//! load (a private mongod of the test's own), SIGTERM under load (several runs), and an overload
//! with a pool of one followed by normal load. Each test prints its figures.
//! `ORDERS_FAULTS_BINARY` runs them against another build (to measure an older one).

use crate::common;

use common::{mongodb_uri, unique_db_name};
use orders_testkit::faults::{
    PrivateMongo, ServiceProcess, assert_crash_handled, assert_drained, assert_recovered, crash_and_restart,
    overload_then_recover, sigterm_under_load,
};
use std::time::Duration;

fn binary() -> String {
    std::env::var("ORDERS_FAULTS_BINARY").unwrap_or_else(|_| env!("CARGO_BIN_EXE_orders-mongo").to_owned())
}

fn start(env: &[(&str, String)]) -> ServiceProcess {
    tokio::task::block_in_place(|| ServiceProcess::start(&binary(), env))
}

/// Drops the test's database on the shared server.
async fn drop_database(name: &str) {
    if let Ok(client) = mongodb::Client::with_uri_str(mongodb_uri()).await {
        let _ = client.database(name).drop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_crashed_database_gets_503_within_a_second_then_recovers_and_loses_no_acknowledged_insert() {
    let mut database = tokio::task::block_in_place(PrivateMongo::start);
    let service = start(&[("MONGODB_URI", database.uri()), ("MONGODB_DB", "orders".into())]);
    let report = crash_and_restart(&service, &mut database).await;
    println!("orders-mongo, mongod killed for 2 s under 8 inserting clients: {report:?}");
    assert_crash_handled(&report);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sigterm_under_load_answers_every_request_on_an_accepted_connection() {
    let timeout = Duration::from_secs(5);
    for run in 1..=3 {
        let name = unique_db_name("orders_faults");
        let mut service = start(&[
            ("MONGODB_URI", mongodb_uri()),
            ("MONGODB_DB", name.clone()),
            ("SHUTDOWN_TIMEOUT_MS", timeout.as_millis().to_string()),
        ]);
        let report = sigterm_under_load(&mut service, timeout).await;
        drop_database(&name).await;
        println!("orders-mongo, SIGTERM under 16 clients, run {run}: {report:?}");
        assert_drained(&report, timeout);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn after_an_overload_latency_and_pool_gauges_are_normal_within_two_seconds() {
    let name = unique_db_name("orders_faults");
    let service = start(&[
        ("MONGODB_URI", mongodb_uri()),
        ("MONGODB_DB", name.clone()),
        ("MONGO_POOL_SIZE", "1".into()),
        ("POOL_TIMEOUT_MS", "50".into()),
        ("REQUEST_TIMEOUT_MS", "250".into()),
    ]);
    let report = overload_then_recover(&service.base_url(), Duration::from_secs(10)).await;
    drop(service);
    drop_database(&name).await;
    println!("orders-mongo, pool of 1 overloaded by 64 clients for 2 s: {report:?}");
    assert_recovered(&report);
}
