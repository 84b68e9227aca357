//! The tests of the hostile-client suite, each against a service binary started by the caller's
//! `start` with the settings the test needs, each printing its figures and asserting issue 28's
//! bounds: a hostile body costs at most five times the CPU of an ordinary 1 MiB order and the
//! service's memory stays bounded; slow-header, dripping, silent and idle connections are closed
//! within their timeout while a normal request stream keeps its p95 within twice its value without
//! them; connections beyond `MAX_CONNECTIONS` are refused at once; requests beyond
//! `MAX_IN_FLIGHT` get 503 while `/healthz` and `/metrics` answer; odd requests get a 4xx or a
//! closed connection, never a 5xx, and invented methods share one metrics label; slow readers of
//! large lists hold at most `MAX_IN_FLIGHT` answers of at most `MAX_LIST_BYTES` (issue 45). Every
//! test ends by checking the service still answers normal requests.
//!
//! `HOSTILE_CONNECTIONS` (default 500) sets how many slow-header and idle connections the closure
//! test holds at once.

use super::Target;
use super::connections::{Hold, beyond_the_connection_limit, beyond_the_in_flight_limit, latency_while_held};
use super::costs::body_costs;
use super::requests::odd_requests;
use super::slow_readers::{large_orders, slow_readers};
use crate::TestApp;
use orders_core::sample::order_body;
use std::time::Duration;

/// How a test starts the service binary: with these settings besides the database's.
pub type Start = dyn Fn(&[(&str, String)]) -> Target + Sync;

fn start(start: &Start, env: &[(&str, String)]) -> Target {
    tokio::task::block_in_place(|| start(env))
}

/// The service still creates and reads an order.
async fn assert_still_serving(target: &Target) {
    let app = TestApp::at(target.service.base_url());
    let created = app.post_json("/orders", &order_body(crate::api::random_id(), [1, 2, 3])).await;
    assert_eq!(created.status, 201, "the service still creates orders: {}", created.text);
    let location = created.headers["location"].to_str().expect("location").to_owned();
    assert_eq!(app.get(&location).await.status, 200, "and reads them");
}

/// The most a hostile body may cost, in ordinary 1 MiB orders.
pub const MAX_COST_RATIO: f64 = 5.0;
/// The most the service's resident memory may grow while hostile bodies are sent by
/// `CONCURRENT_CLIENTS` clients at once: 24 MiB per body in flight (measured in release builds:
/// 4-12 MiB; before issue 28, 33-46 MiB).
pub const MAX_PEAK_GROWTH_PER_CLIENT: u64 = 24 << 20;
const CONCURRENT_CLIENTS: usize = 4;

pub async fn hostile_bodies_cost_at_most_five_times_an_ordinary_order_and_bounded_memory(start_service: &Start) {
    let target = start(start_service, &[]);
    let report = body_costs(&target.service.base_url(), target.service.pid(), CONCURRENT_CLIENTS).await;
    println!("{report}");
    assert_eq!(report.ordinary.statuses, [201], "the ordinary order is stored: {report}");
    for cost in &report.hostile {
        assert_eq!(cost.statuses, [422], "{}: {report}", cost.name);
        assert!(cost.largest_answer <= 64 << 10, "{}: the answer is bounded: {report}", cost.name);
    }
    let (worst, ratio) = report.worst();
    assert!(ratio <= MAX_COST_RATIO, "{} costs {ratio:.1} ordinary orders: {report}", worst.name);
    let bound = MAX_PEAK_GROWTH_PER_CLIENT * CONCURRENT_CLIENTS as u64;
    assert!(report.peak_growth() <= bound, "peak memory grew by {} MiB: {report}", report.peak_growth() >> 20);
    assert_still_serving(&target).await;
}

/// `HEADER_READ_TIMEOUT_MS` and `IDLE_TIMEOUT_MS` of the closure test.
const HEADER_TIMEOUT: Duration = Duration::from_millis(1000);
/// Three times the header timeout, so that closing a connection by the wrong one of the two shows.
const IDLE_TIMEOUT: Duration = Duration::from_millis(3000);
/// How late after its timeout a connection may be closed (hundreds are closed at the same moment,
/// on a shared machine where the service may wait that long for a core).
const CLOSE_SLACK: Duration = Duration::from_millis(1500);

/// The p95 a normal request stream may reach while connections are held: twice its value
/// without them, or 50 ms more (the benchmark's pass mark), whichever is larger. On a shared
/// machine the p95 of a one-second window moves by milliseconds from one second to the next; a
/// service that stalled under the held connections would miss by hundreds. docs/security.md has
/// the figures of issue 28's measurement.
fn latency_bound(p95_without: Duration) -> Duration {
    (p95_without * 2).max(p95_without + Duration::from_millis(50))
}

fn held_connections() -> usize {
    std::env::var("HOSTILE_CONNECTIONS").ok().and_then(|n| n.parse().ok()).unwrap_or(500)
}

pub async fn slow_header_and_idle_connections_are_closed_on_time_while_requests_keep_their_latency(
    start_service: &Start,
) {
    let target = start(
        start_service,
        &[
            ("HEADER_READ_TIMEOUT_MS", HEADER_TIMEOUT.as_millis().to_string()),
            ("IDLE_TIMEOUT_MS", IDLE_TIMEOUT.as_millis().to_string()),
        ],
    );
    let (base_url, addr) = (target.service.base_url(), target.service.addr.clone());
    let many = held_connections();
    for (hold, count, timeout) in [
        (Hold::HalfRequestLine, many, HEADER_TIMEOUT),
        (Hold::IdleAfterAnswer, many, IDLE_TIMEOUT),
        (Hold::Silent, 50, HEADER_TIMEOUT),
        (Hold::Dripping, 50, HEADER_TIMEOUT),
        (Hold::DrippingAfterAnswer, 50, HEADER_TIMEOUT),
    ] {
        let give_up = timeout + Duration::from_secs(10);
        let report = latency_while_held(&base_url, &addr, hold, count, Duration::from_secs(1), give_up).await;
        println!("{count} connections {hold:?}, timeout {timeout:?}: {report:?}");
        let closure = &report.closure;
        assert_eq!(closure.closed, count, "every connection closed: {report:?}");
        assert!(closure.earliest.is_some_and(|t| t >= timeout.mul_f64(0.9)), "none closed early: {report:?}");
        assert!(closure.latest.is_some_and(|t| t <= timeout + CLOSE_SLACK), "all closed on time: {report:?}");
        assert_eq!(report.failed, 0, "normal requests kept answering: {report:?}");
        assert!(report.requests_with >= 20, "normal requests ran meanwhile: {report:?}");
        assert!(report.p95_with <= latency_bound(report.p95_without), "normal requests kept their latency: {report:?}");
    }
    assert_still_serving(&target).await;
}

pub async fn connections_beyond_the_limit_are_refused_at_once(start_service: &Start) {
    let limit = 40;
    let target = start(start_service, &[("MAX_CONNECTIONS", limit.to_string())]);
    let report = beyond_the_connection_limit(&target.service.addr, limit, 5).await;
    println!("MAX_CONNECTIONS={limit}: {report:?}");
    assert_eq!(report.held, limit, "{report:?}");
    for (status, after) in &report.beyond {
        assert!([503, 0].contains(status), "refused with 503 or closed, not queued: {report:?}");
        assert!(*after < Duration::from_secs(1), "at once: {report:?}");
    }
    assert_eq!(report.after_release, 200, "served again once connections closed: {report:?}");
    assert_still_serving(&target).await;
}

pub async fn requests_beyond_the_in_flight_limit_are_shed_while_health_and_metrics_answer(start_service: &Start) {
    let limit = 4;
    let target = start(start_service, &[("MAX_IN_FLIGHT", limit.to_string())]);
    let report = beyond_the_in_flight_limit(&target.service.base_url(), &target.service.addr, limit).await;
    println!("MAX_IN_FLIGHT={limit}: {report:?}");
    assert_eq!(report.in_flight_seen, limit as u64, "the slow uploads hold every place: {report:?}");
    assert_eq!(report.beyond, (503, "unavailable".to_owned()), "{report:?}");
    assert_eq!((report.healthz, report.metrics), (200, 200), "{report:?}");
    assert!(report.shed_counted >= 1, "{report:?}");
    assert_eq!(report.after_release, 404, "served again once the uploads ended: {report:?}");
    assert_still_serving(&target).await;
}

pub async fn odd_requests_get_4xx_or_a_closed_connection_and_invented_methods_one_metrics_label(start_service: &Start) {
    let target = start(start_service, &[]);
    let outcomes = odd_requests(&target.service.addr).await;
    println!("{outcomes:?}");
    for outcome in &outcomes {
        let allowed = (400..500).contains(&outcome.status) || outcome.status == 0;
        let served = ["a query of 8,000 parameters", "limit given 7,000 times"].contains(&outcome.name);
        assert!(allowed || (served && outcome.status == 200), "{}: {outcomes:?}", outcome.name);
    }
    let status_of = |name: &str| outcomes.iter().find(|o| o.name == name).map(|o| o.status);
    assert_eq!(status_of("an invented method on an order"), Some(405));
    assert_eq!(status_of("an invented method on no route"), Some(404));
    assert_eq!(status_of("a query of 8,000 parameters"), Some(200), "unknown parameters are ignored");
    assert_eq!(status_of("a 100,000-byte query"), Some(414));
    let metrics = TestApp::at(target.service.base_url()).get("/metrics").await.text;
    assert!(metrics.contains(r#"method="OTHER""#), "{metrics}");
    for invented in ["FROB", "BREW"] {
        assert!(!metrics.contains(&format!(r#"method="{invented}"#)), "no series for {invented}: {metrics}");
    }
    assert_still_serving(&target).await;
}

/// The slow-reader test: `SLOW_READERS` connections ask at once for a list of 100 orders of
/// 256 KiB (about 25 MiB whole) from a service started with `MAX_IN_FLIGHT=SLOW_READER_IN_FLIGHT`
/// and `MAX_LIST_BYTES=SLOW_READER_LIST_BYTES`, and read it at 10 kB/s for `SLOW_READING`; a reader
/// answered 503 asks again, so with places given back before the answer is read, every reader would
/// hold an answer.
const SLOW_READERS: usize = 40;
const SLOW_READER_IN_FLIGHT: u64 = 2;
const SLOW_READER_LIST_BYTES: u64 = 8 << 20;
const SLOW_READING: Duration = Duration::from_secs(4);

/// The most the resident memory may grow while the slow readers read: per place in flight, its
/// answer twice over (the list's buffer, and the copy a growing buffer makes) and the database
/// driver's result batch (`RESULT_BATCH_BYTES`); half a MiB per reader (hyper's write buffer of
/// about 400 kB and a piece of the body, which a connection may keep after its place is given
/// back); and 24 MiB for the rest of the process (allocator, pools). Before issue 45 every reader
/// held its whole answer: 40 readers of 25 MiB lists grew `orders-pg` by 861 MiB.
pub const fn slow_reader_bound(in_flight: u64, list_bytes: u64, readers: u64) -> u64 {
    in_flight * (2 * list_bytes + RESULT_BATCH_BYTES) + readers * (512 << 10) + (24 << 20)
}

/// What a list query's result costs the driver while the list is built, before the answer exists:
/// PostgreSQL's rows are read one at a time (`PgPool::list`), but MongoDB sends a first batch of
/// up to 16 MiB, which its driver holds about three times over (measured: 46-48 MiB per query of
/// 256 KiB orders).
pub const RESULT_BATCH_BYTES: u64 = 48 << 20;

pub async fn slow_readers_of_large_lists_hold_at_most_max_in_flight_answers(start_service: &Start) {
    let target = start(
        start_service,
        &[("MAX_IN_FLIGHT", SLOW_READER_IN_FLIGHT.to_string()), ("MAX_LIST_BYTES", SLOW_READER_LIST_BYTES.to_string())],
    );
    let (base_url, pid) = (target.service.base_url(), target.service.pid());
    let customer = crate::api::random_id();
    large_orders(&base_url, customer, 100).await;
    let path = format!("/customers/{customer}/orders?limit=100");
    let report = slow_readers(&target.service.addr, pid, &path, SLOW_READERS, SLOW_READING).await;
    let bound = slow_reader_bound(SLOW_READER_IN_FLIGHT, SLOW_READER_LIST_BYTES, SLOW_READERS as u64);
    println!(
        "{SLOW_READERS} slow readers: resident memory grew by {:.1} MiB (bound {:.1} MiB); {} answered 200, {} 503; {report:?}",
        report.growth() as f64 / f64::from(1 << 20),
        bound as f64 / f64::from(1 << 20),
        report.answered(200),
        report.answered(503),
    );
    assert!(report.growth() <= bound, "resident memory grew by {} MiB: {report:?}", report.growth() >> 20);
    assert_eq!(report.answered(200), SLOW_READER_IN_FLIGHT as usize, "the places are held while read: {report:?}");
    assert_eq!(report.answered(503), SLOW_READERS - SLOW_READER_IN_FLIGHT as usize, "the rest shed: {report:?}");
    // The readers are gone: their places come back.
    let app = TestApp::at(base_url);
    let mut list = app.get(&path).await;
    for _ in 0..50 {
        if list.status == 200 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        list = app.get(&path).await;
    }
    assert_eq!(list.status, 200, "places given back once the readers went away: {}", list.text.len());
    assert_eq!(list.headers.get("list-truncated").map(|v| v.as_bytes()), Some(&b"true"[..]));
    assert!(list.text.len() <= SLOW_READER_LIST_BYTES as usize * 11 / 10, "{} bytes", list.text.len());
    assert_still_serving(&target).await;
}
