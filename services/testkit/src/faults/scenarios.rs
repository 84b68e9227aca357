//! The fault scenarios, each against a service binary running as a child process, each bounded in
//! time and stopping by itself: a database crash and restart under insert load, SIGTERM under
//! load, and an overload followed by normal load. Each returns its figures (the tests assert on
//! them and print them, which is how the README's table was measured) instead of asserting, so
//! the same code can measure an older binary that would fail the assertions.

use super::databases::Crashable;
use super::service::ServiceProcess;
use crate::api::random_id;
use orders_core::sample::order_body;
use orders_http::error::OUTCOME_UNKNOWN;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// One insert: when it was sent, how long the answer took, its status (0: no answer), the id it
/// asked for, the id answered, and whether a 503 said the outcome is unknown.
#[derive(Debug, Clone, Copy)]
struct Insert {
    sent: Instant,
    latency: Duration,
    status: u16,
    requested: u64,
    id: Option<u64>,
    outcome_unknown: bool,
}

/// Eight clients inserting as fast as they can until `stop`, each order with an id of the
/// client's choosing (so that a request answered without one can be looked for afterwards).
async fn insert_load(base_url: &str, clients: usize, stop: Arc<AtomicBool>) -> Vec<Insert> {
    let tasks: Vec<_> = (0..clients)
        .map(|_| {
            let (base_url, stop) = (base_url.to_owned(), stop.clone());
            tokio::spawn(async move {
                let client = reqwest::Client::builder().timeout(Duration::from_secs(10)).build().expect("client");
                let mut inserts = Vec::new();
                while !stop.load(Ordering::Relaxed) {
                    let requested = random_id();
                    let mut body = order_body(random_id(), [1, 2, 3]);
                    body["id"] = serde_json::json!(requested);
                    let sent = Instant::now();
                    let reply = client.post(format!("{base_url}/orders")).json(&body).send().await;
                    let (status, id, outcome_unknown) = match reply {
                        Ok(response) => {
                            let status = response.status().as_u16();
                            let json: serde_json::Value = response.json().await.unwrap_or_default();
                            let detail = json["error"]["details"][0]["message"].as_str();
                            (status, json["id"].as_u64(), detail == Some(OUTCOME_UNKNOWN))
                        }
                        Err(_) => (0, None, false),
                    };
                    inserts.push(Insert { sent, latency: sent.elapsed(), status, requested, id, outcome_unknown });
                }
                inserts
            })
        })
        .collect();
    let mut all = Vec::new();
    for task in tasks {
        all.extend(task.await.expect("load task"));
    }
    all
}

/// What a crash and restart of the database did to inserting clients.
#[derive(Debug, Clone)]
pub struct CrashReport {
    pub acknowledged: usize,
    /// Acknowledged (201) orders not found afterwards.
    pub lost: usize,
    /// Requests answered 503 "nothing was written" (no "outcome unknown" detail), and how many of
    /// their orders were found afterwards all the same.
    pub answered_nothing_written: usize,
    pub written_though_answered_nothing_written: usize,
    /// Requests answered 503 "outcome unknown".
    pub outcome_unknown: usize,
    /// Requests sent while the database was down, and the slowest answer among them.
    pub sent_while_down: usize,
    pub unavailable_while_down: usize,
    pub slowest_while_down: Duration,
    /// Answers while down other than 503 or 201 (a 201 can be a request the restart caught up with).
    pub unexpected_while_down: Vec<u16>,
    /// From the database accepting connections again to the first 201 of a request sent after.
    pub recovery: Option<Duration>,
    /// Non-201 answers to requests sent one second or more after the restart.
    pub failures_after_recovery: usize,
    /// Requests that got no HTTP answer at all.
    pub no_answer: usize,
    /// `/readyz` one second into the outage, and one second after the restart.
    pub readiness_while_down: u16,
    pub readiness_after: u16,
}

async fn readiness(base_url: &str) -> u16 {
    let client = reqwest::Client::builder().timeout(Duration::from_secs(5)).build().expect("client");
    client.get(format!("{base_url}/readyz")).send().await.map_or(0, |r| r.status().as_u16())
}

/// Inserts with eight clients, crashes the database after a second, keeps it down for two, starts
/// it again, inserts two more seconds, then checks every acknowledged order is there.
pub async fn crash_and_restart(service: &ServiceProcess, database: &mut dyn Crashable) -> CrashReport {
    let base_url = service.base_url();
    let stop = Arc::new(AtomicBool::new(false));
    let load = tokio::spawn({
        let (base_url, stop) = (base_url.clone(), stop.clone());
        async move { insert_load(&base_url, 8, stop).await }
    });
    tokio::time::sleep(Duration::from_secs(1)).await;
    tokio::task::block_in_place(|| database.crash());
    let crashed = Instant::now();
    tokio::time::sleep(Duration::from_secs(1)).await;
    let readiness_while_down = readiness(&base_url).await;
    tokio::time::sleep_until((crashed + Duration::from_secs(2)).into()).await;
    tokio::task::block_in_place(|| database.start_again());
    let up = Instant::now();
    tokio::time::sleep(Duration::from_secs(1)).await;
    let readiness_after = readiness(&base_url).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    stop.store(true, Ordering::Relaxed);
    let inserts = load.await.expect("load");

    let down: Vec<&Insert> = inserts.iter().filter(|i| i.sent >= crashed && i.sent < up).collect();
    let acknowledged: Vec<u64> = inserts.iter().filter(|i| i.status == 201).filter_map(|i| i.id).collect();
    let recovery = inserts
        .iter()
        .filter(|i| i.sent >= up && i.status == 201)
        .map(|i| (i.sent + i.latency).duration_since(up))
        .min();
    let lost = count_missing(&base_url, &acknowledged).await;
    let nothing_written: Vec<u64> =
        inserts.iter().filter(|i| i.status == 503 && !i.outcome_unknown).map(|i| i.requested).collect();
    let written_though_answered_nothing_written =
        nothing_written.len() - count_missing(&base_url, &nothing_written).await;
    CrashReport {
        acknowledged: acknowledged.len(),
        lost,
        answered_nothing_written: nothing_written.len(),
        written_though_answered_nothing_written,
        outcome_unknown: inserts.iter().filter(|i| i.status == 503 && i.outcome_unknown).count(),
        sent_while_down: down.len(),
        unavailable_while_down: down.iter().filter(|i| i.status == 503).count(),
        slowest_while_down: down.iter().map(|i| i.latency).max().unwrap_or_default(),
        unexpected_while_down: down.iter().map(|i| i.status).filter(|s| ![201, 503].contains(s)).collect(),
        recovery,
        failures_after_recovery: inserts
            .iter()
            .filter(|i| i.sent >= up + Duration::from_secs(1) && i.status != 201)
            .count(),
        no_answer: inserts.iter().filter(|i| i.status == 0).count(),
        readiness_while_down,
        readiness_after,
    }
}

/// How many of `ids` the service does not find (8 clients reading them back).
async fn count_missing(base_url: &str, ids: &[u64]) -> usize {
    let missing = Arc::new(AtomicU64::new(0));
    let chunks: Vec<Vec<u64>> = ids.chunks(ids.len().div_ceil(8).max(1)).map(<[u64]>::to_vec).collect();
    let tasks: Vec<_> = chunks
        .into_iter()
        .map(|chunk| {
            let (base_url, missing) = (base_url.to_owned(), missing.clone());
            tokio::spawn(async move {
                let client = reqwest::Client::new();
                for id in chunk {
                    let found = client.get(format!("{base_url}/orders/{id}")).send().await;
                    if !found.is_ok_and(|r| r.status().as_u16() == 200) {
                        missing.fetch_add(1, Ordering::Relaxed);
                    }
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.expect("read-back task");
    }
    missing.load(Ordering::Relaxed) as usize
}

/// What SIGTERM under load did to the clients.
#[derive(Debug, Clone)]
pub struct DrainReport {
    /// Requests on connections established before the signal.
    pub on_accepted_connections: usize,
    /// Of those, how many were answered after the signal (the drain's work).
    pub answered_after_signal: usize,
    /// Requests on connections established before the signal that got no complete answer.
    pub failed: usize,
    /// Answers with a status other than 201 (an insert should not fail while draining).
    pub unexpected_statuses: Vec<u16>,
    /// From the signal to the process' exit (`None`: it did not exit in time).
    pub exit_after: Option<Duration>,
    pub exit_success: bool,
}

/// Sixteen clients insert over raw HTTP/1.1, half on keep-alive connections, half on a new
/// connection per request (so some wait in the listen backlog); after 0.8 s the service gets
/// SIGTERM. Clients stop once the service refuses connections.
pub async fn sigterm_under_load(service: &mut ServiceProcess, shutdown_timeout: Duration) -> DrainReport {
    let signal: Arc<OnceLock<Instant>> = Arc::new(OnceLock::new());
    let deadline = Instant::now() + shutdown_timeout + Duration::from_secs(5);
    let tasks: Vec<_> = (0..16)
        .map(|client| {
            let (addr, signal) = (service.addr.clone(), signal.clone());
            tokio::spawn(async move { raw_client(&addr, client % 2 == 0, &signal, deadline).await })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(800)).await;
    service.terminate();
    let signalled = Instant::now();
    let _ = signal.set(signalled);
    let mut report = DrainReport {
        on_accepted_connections: 0,
        answered_after_signal: 0,
        failed: 0,
        unexpected_statuses: Vec::new(),
        exit_after: None,
        exit_success: false,
    };
    for task in tasks {
        let outcome = task.await.expect("client task");
        report.on_accepted_connections += outcome.on_accepted_connections;
        report.answered_after_signal += outcome.answered_after_signal;
        report.failed += outcome.failed;
        report.unexpected_statuses.extend(outcome.unexpected_statuses);
    }
    let status = tokio::task::block_in_place(|| service.wait_exit(shutdown_timeout + Duration::from_secs(5)));
    report.exit_after = status.map(|_| signalled.elapsed());
    report.exit_success = status.is_some_and(|s| s.success());
    report
}

#[derive(Default)]
struct ClientOutcome {
    on_accepted_connections: usize,
    answered_after_signal: usize,
    failed: usize,
    unexpected_statuses: Vec<u16>,
}

async fn raw_client(addr: &str, keep_alive: bool, signal: &OnceLock<Instant>, deadline: Instant) -> ClientOutcome {
    let mut outcome = ClientOutcome::default();
    while Instant::now() < deadline {
        let Ok(mut stream) = TcpStream::connect(addr).await else {
            if signal.get().is_some() {
                break; // refused after the signal: the drain closed the listener
            }
            continue;
        };
        let connected = Instant::now();
        let accepted_before_signal = || signal.get().is_none_or(|at| connected < *at);
        loop {
            let body = order_body(random_id(), [1, 2, 3]).to_string();
            let request = format!(
                "POST /orders HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n{}\r\n{body}",
                body.len(),
                if keep_alive { "" } else { "Connection: close\r\n" },
            );
            let answer = exchange(&mut stream, request.as_bytes()).await;
            if accepted_before_signal() {
                outcome.on_accepted_connections += 1;
            }
            match answer {
                Ok((status, close)) => {
                    if status != 201 {
                        outcome.unexpected_statuses.push(status);
                    }
                    if accepted_before_signal() && signal.get().is_some() {
                        outcome.answered_after_signal += 1;
                    }
                    if close || !keep_alive {
                        break;
                    }
                }
                Err(_) => {
                    if accepted_before_signal() {
                        outcome.failed += 1;
                    }
                    break;
                }
            }
        }
    }
    outcome
}

/// Writes one request and reads one response: its status and whether the server closes after it.
pub(crate) async fn exchange(stream: &mut TcpStream, request: &[u8]) -> std::io::Result<(u16, bool)> {
    stream.write_all(request).await?;
    let mut buffer = Vec::with_capacity(4096);
    let mut chunk = [0_u8; 4096];
    let header_end = loop {
        if let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break end + 4;
        }
        let read = stream.read(&mut chunk).await?;
        if read == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        buffer.extend_from_slice(&chunk[..read]);
    };
    let head = String::from_utf8_lossy(&buffer[..header_end]).to_ascii_lowercase();
    let status = head.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    let header = |name: &str| head.lines().find_map(|line| line.strip_prefix(name).map(|v| v.trim().to_owned()));
    let length: usize = header("content-length:").and_then(|v| v.parse().ok()).unwrap_or(0);
    let close = header("connection:").is_some_and(|v| v.contains("close"));
    while buffer.len() < header_end + length {
        let read = stream.read(&mut chunk).await?;
        if read == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        buffer.extend_from_slice(&chunk[..read]);
    }
    Ok((status, close))
}

/// How an overload ended.
#[derive(Debug, Clone)]
pub struct OverloadReport {
    /// Median of sequential `GET /orders/{id}` before the overload.
    pub baseline: Duration,
    /// Requests answered 503 during the overload (it really overloaded).
    pub shed_during_overload: usize,
    /// From the end of the overload until latency and the pool gauges were normal again (`None`:
    /// not within `give_up`).
    pub recovered_after: Option<Duration>,
    /// The gauges and probe latency at the last check.
    pub last_gauges: PoolGauges,
    pub last_probe: Duration,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PoolGauges {
    pub size: u64,
    pub available: u64,
    pub waiting: u64,
}

/// Sequential reads of a missing id (one database round trip each): the median latency, and
/// whether every answer was the expected 404.
async fn probe(client: &reqwest::Client, base_url: &str, count: usize) -> (Duration, bool) {
    let mut latencies = Vec::with_capacity(count);
    let mut all_404 = true;
    for _ in 0..count {
        let started = Instant::now();
        let reply = client.get(format!("{base_url}/orders/{}", random_id())).send().await;
        all_404 &= reply.is_ok_and(|r| r.status().as_u16() == 404);
        latencies.push(started.elapsed());
    }
    latencies.sort();
    (latencies[latencies.len() / 2], all_404)
}

async fn gauges(client: &reqwest::Client, base_url: &str) -> PoolGauges {
    let text = match client.get(format!("{base_url}/metrics")).send().await {
        Ok(response) => response.text().await.unwrap_or_default(),
        Err(_) => String::new(),
    };
    let value = |name: &str| {
        text.lines()
            .find(|line| line.starts_with(name) && line.as_bytes().get(name.len()) == Some(&b'{'))
            .and_then(|line| line.rsplit(' ').next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(u64::MAX)
    };
    PoolGauges { size: value("db_pool_size"), available: value("db_pool_available"), waiting: value("db_pool_waiting") }
}

/// Measures the baseline, overloads the service with 64 impatient clients (each gives up after
/// 100 ms, so requests are abandoned mid-wait) for two seconds, then checks every 50 ms whether
/// latency is back near the baseline and the pool gauges read idle (nothing waiting, every open
/// connection available), giving up after `give_up`.
pub async fn overload_then_recover(base_url: &str, give_up: Duration) -> OverloadReport {
    let client = reqwest::Client::builder().timeout(Duration::from_secs(15)).build().expect("client");
    let (baseline, _) = probe(&client, base_url, 21).await;
    let stop = Arc::new(AtomicBool::new(false));
    let shed = Arc::new(AtomicU64::new(0));
    let overload: Vec<_> = (0..64)
        .map(|n| {
            let (base_url, stop, shed) = (base_url.to_owned(), stop.clone(), shed.clone());
            tokio::spawn(async move {
                let impatient = reqwest::Client::builder().timeout(Duration::from_millis(100)).build().expect("client");
                while !stop.load(Ordering::Relaxed) {
                    let request = if n % 2 == 0 {
                        impatient.post(format!("{base_url}/orders")).json(&order_body(random_id(), [1, 2, 3]))
                    } else {
                        impatient.get(format!("{base_url}/products/{}/orders?limit=100", n % 7 + 1))
                    };
                    if request.send().await.is_ok_and(|r| r.status().as_u16() == 503) {
                        shed.fetch_add(1, Ordering::Relaxed);
                    }
                }
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_secs(2)).await;
    stop.store(true, Ordering::Relaxed);
    for task in overload {
        task.abort();
    }
    let ended = Instant::now();
    let normal = baseline.mul_f64(5.0).max(baseline + Duration::from_millis(25));
    let mut report = OverloadReport {
        baseline,
        shed_during_overload: shed.load(Ordering::Relaxed) as usize,
        recovered_after: None,
        last_gauges: PoolGauges::default(),
        last_probe: Duration::ZERO,
    };
    while ended.elapsed() < give_up {
        let (latency, all_404) = probe(&client, base_url, 5).await;
        let pool = gauges(&client, base_url).await;
        report.last_gauges = pool;
        report.last_probe = latency;
        if all_404 && latency <= normal && pool.waiting == 0 && pool.available == pool.size {
            report.recovered_after = Some(ended.elapsed());
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    report
}
