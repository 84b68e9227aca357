//! Faults on the real `orders-pg` binary (issue 11; `orders-pg-hybrid`'s tests include this file,
//! `crate::SERVICE_BINARY`): PostgreSQL crashing and coming back under
//! insert load (a private server of the test's own), SIGTERM under load (several runs), and an
//! overload with a pool of one followed by normal load. Each test prints its figures.
//! `ORDERS_FAULTS_BINARY` runs them against another build (to measure an older one).

use orders_testkit::faults::{
    PrivatePostgres, ServiceProcess, assert_crash_handled, assert_drained, assert_recovered, crash_and_restart,
    overload_then_recover, sigterm_under_load,
};
use std::time::Duration;

fn binary() -> String {
    std::env::var("ORDERS_FAULTS_BINARY").unwrap_or_else(|_| crate::SERVICE_BINARY.to_owned())
}

fn start(env: &[(&str, String)]) -> ServiceProcess {
    tokio::task::block_in_place(|| ServiceProcess::start(&binary(), env))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_crashed_database_gets_503_within_a_second_then_recovers_and_loses_no_acknowledged_insert() {
    let mut database = tokio::task::block_in_place(PrivatePostgres::start);
    let service = start(&[("DATABASE_URL", database.url())]);
    let report = crash_and_restart(&service, &mut database).await;
    println!("{}, PostgreSQL crashed for 2 s under 8 inserting clients: {report:?}", crate::SERVICE);
    assert_crash_handled(&report);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sigterm_under_load_answers_every_request_on_an_accepted_connection() {
    let timeout = Duration::from_secs(5);
    for run in 1..=3 {
        let url = orders_pg::testing::fresh_database().await;
        let mut service = start(&[("DATABASE_URL", url), ("SHUTDOWN_TIMEOUT_MS", timeout.as_millis().to_string())]);
        let report = sigterm_under_load(&mut service, timeout).await;
        println!("{}, SIGTERM under 16 clients, run {run}: {report:?}", crate::SERVICE);
        assert_drained(&report, timeout);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn after_an_overload_latency_and_pool_gauges_are_normal_within_two_seconds() {
    let url = orders_pg::testing::fresh_database().await;
    let service = start(&[
        ("DATABASE_URL", url),
        ("PG_POOL_SIZE", "1".into()),
        ("POOL_TIMEOUT_MS", "50".into()),
        ("REQUEST_TIMEOUT_MS", "250".into()),
    ]);
    let report = overload_then_recover(&service.base_url(), Duration::from_secs(10)).await;
    println!("{}, pool of 1 overloaded by 64 clients for 2 s: {report:?}", crate::SERVICE);
    assert_recovered(&report);
}
