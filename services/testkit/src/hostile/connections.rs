//! Clients that hold connections without asking for anything, against a running service: many
//! connections that are silent, send half a request line, drip a header a byte at a time, or go
//! quiet after an answer (`hold_connections`), with the latency of a normal request stream while
//! they are open (`latency_while_held`); more connections than `MAX_CONNECTIONS`
//! (`beyond_the_connection_limit`); and more slow requests than `MAX_IN_FLIGHT`
//! (`beyond_the_in_flight_limit`). Each returns its figures; the tests assert on them.

use crate::faults::scenarios::exchange;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::Barrier;

/// How a held connection behaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hold {
    /// Connects and sends nothing.
    Silent,
    /// Sends half a request line, then nothing.
    HalfRequestLine,
    /// Sends a header one byte every 200 ms, never finishing it (slowloris).
    Dripping,
    /// Asks for `/healthz`, reads the answer, keeps the connection and sends nothing more.
    IdleAfterAnswer,
    /// Asks for `/healthz`, reads the answer, then drips the next header (its clock starts with
    /// the first byte).
    DrippingAfterAnswer,
}

impl Hold {
    fn drips(self) -> bool {
        matches!(self, Hold::Dripping | Hold::DrippingAfterAnswer)
    }
}

/// When the held connections were closed by the service, each measured from the moment its
/// limit's clock started (the connection's opening, its first byte, or the answer it got).
#[derive(Debug, Clone)]
pub struct Closure {
    pub hold: Hold,
    pub opened: usize,
    pub closed: usize,
    pub earliest: Option<Duration>,
    pub latest: Option<Duration>,
}

/// Opens `count` connections that behave as `hold`, and waits (at most `give_up`) for the service
/// to close them. `opened` is waited on by every connection once it is open and has done its
/// part, and by the caller, who so knows they are all held.
async fn hold_connections(addr: &str, hold: Hold, count: usize, give_up: Duration, opened: Arc<Barrier>) -> Closure {
    let tasks: Vec<_> = (0..count)
        .map(|_| {
            let (addr, opened) = (addr.to_owned(), opened.clone());
            tokio::spawn(async move { hold_one(&addr, hold, give_up, opened).await })
        })
        .collect();
    let mut closed = Vec::new();
    for task in tasks {
        if let Some(after) = task.await.expect("held connection task") {
            closed.push(after);
        }
    }
    Closure {
        hold,
        opened: count,
        closed: closed.len(),
        earliest: closed.iter().min().copied(),
        latest: closed.iter().max().copied(),
    }
}

/// One held connection: how long after its clock started the service closed it (`None`: still
/// open after `give_up`, or it could not be opened).
async fn hold_one(addr: &str, hold: Hold, give_up: Duration, opened: Arc<Barrier>) -> Option<Duration> {
    let stream = TcpStream::connect(addr).await;
    let Ok(mut stream) = stream else {
        opened.wait().await;
        return None;
    };
    let mut clock = Instant::now();
    match hold {
        Hold::Silent | Hold::Dripping => {}
        Hold::HalfRequestLine => {
            clock = Instant::now();
            let _ = stream.write_all(b"GET /orders/1 HT").await;
        }
        Hold::IdleAfterAnswer | Hold::DrippingAfterAnswer => {
            let answer =
                exchange(&mut stream, format!("GET /healthz HTTP/1.1\r\nHost: {addr}\r\n\r\n").as_bytes()).await;
            clock = Instant::now();
            if answer.is_err() {
                opened.wait().await;
                return None;
            }
        }
    }
    opened.wait().await;
    let header = b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ".iter().chain(std::iter::repeat(&b'a'));
    let mut drip = header.copied();
    let mut dripped = 0_usize;
    let mut buffer = [0_u8; 1024];
    let deadline = tokio::time::Instant::now() + give_up;
    loop {
        let next_drip = tokio::time::sleep(Duration::from_millis(200));
        tokio::select! {
            read = stream.read(&mut buffer) => match read {
                Ok(0) | Err(_) => return Some(clock.elapsed()),
                Ok(_) => {} // an answer (a 408, say) before the close
            },
            () = next_drip, if hold.drips() => {
                if dripped == 0 && hold == Hold::DrippingAfterAnswer {
                    clock = Instant::now(); // the next header's clock starts with its first byte
                }
                dripped += 1;
                let byte = drip.next().unwrap_or(b'a');
                if stream.write_all(&[byte]).await.is_err() {
                    return Some(clock.elapsed());
                }
            }
            () = tokio::time::sleep_until(deadline) => return None,
        }
    }
}

/// The latency of a normal request stream while connections are held.
#[derive(Debug, Clone)]
pub struct HeldLatency {
    pub closure: Closure,
    /// p95 of sequential `GET /orders/{id}` with no connection held (before and after), and while
    /// they were held (from all being open to all being closed).
    pub p95_without: Duration,
    pub p95_with: Duration,
    pub requests_with: usize,
    /// Normal requests that did not get 200.
    pub failed: usize,
}

/// Sequential `GET {url}` on one keep-alive connection until `until` resolves: latencies and
/// failures.
async fn request_stream(
    client: &reqwest::Client,
    url: &str,
    until: impl std::future::Future,
) -> (Vec<Duration>, usize) {
    let mut latencies = Vec::new();
    let mut failed = 0;
    tokio::pin!(until);
    loop {
        let started = Instant::now();
        tokio::select! {
            biased;
            _ = &mut until => return (latencies, failed),
            reply = client.get(url).send() => {
                if !reply.is_ok_and(|r| r.status().as_u16() == 200) {
                    failed += 1;
                }
                latencies.push(started.elapsed());
            }
        }
    }
}

fn p95(mut latencies: Vec<Duration>) -> Duration {
    latencies.sort();
    latencies.get((latencies.len() * 95).div_ceil(100).saturating_sub(1)).copied().unwrap_or_default()
}

/// Measures the p95 of sequential reads of one order for `window` without held connections, then
/// while `count` connections behave as `hold` until the service has closed them all (or
/// `give_up`), then `window` again without.
pub async fn latency_while_held(
    base_url: &str,
    addr: &str,
    hold: Hold,
    count: usize,
    window: Duration,
    give_up: Duration,
) -> HeldLatency {
    let client = reqwest::Client::builder().timeout(Duration::from_secs(10)).build().expect("client");
    let body = orders_core::sample::order_body(crate::api::random_id(), [1, 2, 3]);
    let created = client.post(format!("{base_url}/orders")).json(&body).send().await.expect("create an order");
    let location = created.headers()["location"].to_str().expect("location").to_owned();
    let url = format!("{base_url}{location}");
    let (mut without, mut failed) = request_stream(&client, &url, tokio::time::sleep(window)).await;

    let opened = Arc::new(Barrier::new(count + 1));
    let held = tokio::spawn({
        let (addr, opened) = (addr.to_owned(), opened.clone());
        async move { hold_connections(&addr, hold, count, give_up, opened).await }
    });
    opened.wait().await;
    let (with, failed_with) = request_stream(&client, &url, async {
        while !held.is_finished() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
    let closure = held.await.expect("held connections");
    let (after, failed_after) = request_stream(&client, &url, tokio::time::sleep(window)).await;
    without.extend(after);
    failed += failed_with + failed_after;
    HeldLatency { closure, p95_without: p95(without), requests_with: with.len(), p95_with: p95(with), failed }
}

/// What connections beyond `MAX_CONNECTIONS` got.
#[derive(Debug, Clone)]
pub struct ConnectionLimitReport {
    /// Connections held open (each answered once) before the extra ones.
    pub held: usize,
    /// Each extra connection's outcome: the status it was answered with, or 0 if it was closed
    /// without one; and how long that took.
    pub beyond: Vec<(u16, Duration)>,
    /// A request on a new connection once the held ones were closed: its status (0: none).
    pub after_release: u16,
}

/// Holds `limit` connections open (each asks `/healthz` once and keeps the connection), then
/// opens `extra` more and asks `/healthz` on each, then closes the held ones and asks again.
pub async fn beyond_the_connection_limit(addr: &str, limit: usize, extra: usize) -> ConnectionLimitReport {
    let request = format!("GET /healthz HTTP/1.1\r\nHost: {addr}\r\n\r\n");
    let mut held = Vec::new();
    for _ in 0..limit {
        let mut stream = TcpStream::connect(addr).await.expect("connect");
        if exchange(&mut stream, request.as_bytes()).await.is_ok_and(|(status, _)| status == 200) {
            held.push(stream);
        }
    }
    let mut beyond = Vec::new();
    for _ in 0..extra {
        let started = Instant::now();
        let outcome = match TcpStream::connect(addr).await {
            Ok(mut stream) => {
                let answered = tokio::time::timeout(Duration::from_secs(5), exchange(&mut stream, request.as_bytes()));
                match answered.await {
                    Ok(Ok((status, _))) => status,
                    Ok(Err(_)) => 0,
                    Err(_elapsed) => u16::MAX, // neither answered nor closed: queued
                }
            }
            Err(_) => 0,
        };
        beyond.push((outcome, started.elapsed()));
    }
    let held_count = held.len();
    drop(held);
    // The service notices the closed connections as soon as it reads their end; ask a few times.
    let mut after_release = 0;
    for _ in 0..50 {
        if let Ok(mut stream) = TcpStream::connect(addr).await {
            after_release = exchange(&mut stream, request.as_bytes()).await.map_or(0, |(status, _)| status);
            if after_release == 200 {
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    ConnectionLimitReport { held: held_count, beyond, after_release }
}

/// What a request beyond `MAX_IN_FLIGHT` got while slow uploads held every place.
#[derive(Debug, Clone)]
pub struct InFlightReport {
    /// `http_requests_in_flight` once the slow uploads were under way.
    pub in_flight_seen: u64,
    /// A `GET /orders/{id}` beyond the limit: status and `error.code`.
    pub beyond: (u16, String),
    /// `/healthz` and `/metrics` meanwhile.
    pub healthz: u16,
    pub metrics: u16,
    /// `http_requests_shed_total{reason="in_flight_limit"}` afterwards.
    pub shed_counted: u64,
    /// `GET /orders/{id}` once the uploads were abandoned.
    pub after_release: u16,
}

fn metric(text: &str, series: &str) -> Option<u64> {
    text.lines().find_map(|line| line.strip_prefix(series)).and_then(|rest| rest.trim().parse().ok())
}

/// Starts `limit` uploads of a create body that never finish (each request is admitted and waits
/// for its body), checks a read is shed while operational endpoints still answer, then abandons
/// the uploads and reads again.
pub async fn beyond_the_in_flight_limit(base_url: &str, addr: &str, limit: usize) -> InFlightReport {
    let client = reqwest::Client::builder().timeout(Duration::from_secs(10)).build().expect("client");
    let mut uploads = Vec::new();
    for _ in 0..limit {
        let mut stream = TcpStream::connect(addr).await.expect("connect");
        let head = format!(
            "POST /orders HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{{\"cust"
        );
        stream.write_all(head.as_bytes()).await.expect("start an upload");
        uploads.push(stream);
    }
    let metrics_text = || async { client.get(format!("{base_url}/metrics")).send().await.ok()?.text().await.ok() };
    let mut in_flight_seen = 0;
    for _ in 0..200 {
        in_flight_seen = metrics_text().await.and_then(|t| metric(&t, "http_requests_in_flight ")).unwrap_or(0);
        if in_flight_seen >= limit as u64 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let order = format!("{base_url}/orders/{}", crate::api::random_id());
    let reply = client.get(&order).send().await.expect("an answer beyond the limit");
    let shed_status = reply.status().as_u16();
    let json: serde_json::Value = reply.json().await.unwrap_or_default();
    let beyond = (shed_status, json["error"]["code"].as_str().unwrap_or("").to_owned());
    let status = |url: String| {
        let client = client.clone();
        async move { client.get(url).send().await.map_or(0, |r| r.status().as_u16()) }
    };
    let healthz = status(format!("{base_url}/healthz")).await;
    let metrics = status(format!("{base_url}/metrics")).await;
    drop(uploads);
    let mut after_release = 0;
    for _ in 0..100 {
        after_release = status(order.clone()).await;
        if after_release != 503 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let shed_counted = metrics_text()
        .await
        .and_then(|t| metric(&t, r#"http_requests_shed_total{reason="in_flight_limit"} "#))
        .unwrap_or(0);
    InFlightReport { in_flight_seen, beyond, healthz, metrics, shed_counted, after_release }
}
