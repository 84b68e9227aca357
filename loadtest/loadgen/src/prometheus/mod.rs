//! `--prometheus-rw URL`: the open loop's figures pushed to Prometheus by remote write while it
//! runs, under the names and labels k6's `experimental-prometheus-rw` output gives the same
//! figures (with `K6_PROMETHEUS_RW_TREND_AS_NATIVE_HISTOGRAM=true`), so one dashboard panel shows
//! either generator:
//!
//! | series | labels | value |
//! |---|---|---|
//! | `k6_http_reqs_total` | `scenario`, `target`, `endpoint`, `name` (route), `method` | requests answered (or failed) |
//! | `k6_http_req_duration_seconds` | the same | native histogram of latency |
//! | `k6_iterations_total` | `scenario`, `target` | iterations sent and finished |
//! | `k6_dropped_iterations_total` | `scenario` | iterations dropped at the in-flight cap |
//!
//! `scenario` and `target` are the target's name, as in `loadtest/k6/orders.js` (one scenario per
//! target); k6 adds `status` and `step`, which this generator does not split by. The offered rate
//! is what was sent plus what was dropped, per second.
//!
//! Cost: the loop thread only compares the time with the next push at every wake-up, and once a
//! second copies the per-endpoint histograms (a few hundred kilobytes) into a channel; converting,
//! encoding and the HTTP request run on a thread of their own, never on the loop's. A push that
//! fails is reported once and the run goes on.

mod protobuf;

use super::record::{Figures, Recorder};
use super::request::EndpointPlan;
use anyhow::{Context, Result, bail};
use protobuf::{NativeHistogram, Series, Value};
use std::io::{Read as _, Write as _};
use std::net::{TcpStream, ToSocketAddrs as _};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// How often the figures are pushed.
const EVERY: Duration = Duration::from_secs(1);
/// k6's native histograms use a bucket factor of 1.1, i.e. schema 3 (`2^(1/8)` per bucket).
const SCHEMA: i32 = 3;
/// Connecting, sending and reading the answer each wait at most this long.
const NETWORK_TIMEOUT: Duration = Duration::from_secs(2);

/// The environment under which a round's generator pushes to `url`: `orders-bench load` reads
/// `ORDERS_BENCH_PROMETHEUS_RW` (its `--prometheus-rw`), k6 its own output's variables.
/// The variable the native generator reads its `--prometheus-rw` from.
pub const PUSH_URL_ENV: &str = "ORDERS_BENCH_PROMETHEUS_RW";

pub fn round_env(url: &str) -> Result<Vec<(String, String)>> {
    Endpoint::parse(url)?;
    let mut env = vec![
        (PUSH_URL_ENV.to_owned(), url.to_owned()),
        ("K6_PROMETHEUS_RW_SERVER_URL".to_owned(), url.to_owned()),
        ("K6_PROMETHEUS_RW_TREND_AS_NATIVE_HISTOGRAM".to_owned(), "true".to_owned()),
        ("K6_PROMETHEUS_RW_PUSH_INTERVAL".to_owned(), "1s".to_owned()),
    ];
    match std::env::var("K6_OUT") {
        Ok(out) if !out.is_empty() => {
            eprintln!("note: K6_OUT={out} is set: k6 keeps it and does not add experimental-prometheus-rw");
        }
        _ => env.push(("K6_OUT".to_owned(), "experimental-prometheus-rw".to_owned())),
    }
    Ok(env)
}

/// Where the pushes go: `http://host:port/path` (no TLS).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Endpoint {
    host_port: String,
    path: String,
}

impl Endpoint {
    fn parse(url: &str) -> Result<Self> {
        let Some(rest) = url.strip_prefix("http://") else {
            bail!("--prometheus-rw: \"{url}\" is not http://host:port/path (https is not supported)");
        };
        let (host_port, path) = rest.split_once('/').map_or((rest, String::from("/")), |(h, p)| (h, format!("/{p}")));
        if host_port.is_empty() || !host_port.contains(':') {
            bail!("--prometheus-rw: \"{url}\" needs a host and a port, e.g. http://127.0.0.1:9090/api/v1/write");
        }
        Ok(Self { host_port: host_port.to_owned(), path })
    }
}

/// One target's figures at one moment.
struct TargetFigures {
    dropped: u64,
    endpoints: Vec<Figures>,
}

/// The labels of one endpoint's series.
#[derive(Debug, Clone)]
struct EndpointLabels {
    endpoint: String,
    route: String,
    method: String,
}

/// The pusher: its thread and the loop's side of the channel to it.
pub struct Push {
    next: Instant,
    sender: Option<SyncSender<Vec<TargetFigures>>>,
    worker: Option<JoinHandle<()>>,
}

impl Push {
    /// Starts the pushing thread. `targets`: each one's name; `endpoints`: the mix's endpoints in
    /// the recorder's order, `routes`: the path template of each (as `loadtest/mixes.json` has it).
    pub fn start(url: &str, targets: &[String], endpoints: &[EndpointPlan], routes: &[String]) -> Result<Self> {
        let endpoint = Endpoint::parse(url)?;
        let labels: Vec<EndpointLabels> = endpoints
            .iter()
            .zip(routes)
            .map(|(plan, route)| EndpointLabels {
                endpoint: plan.name.clone(),
                route: route.split('?').next().unwrap_or(route).to_owned(),
                method: plan.method.as_str().to_owned(),
            })
            .collect();
        let (sender, receiver) = std::sync::mpsc::sync_channel(1);
        let targets = targets.to_vec();
        let worker = std::thread::Builder::new()
            .name("prometheus-rw".into())
            .spawn(move || push_all(&endpoint, &targets, &labels, &receiver))
            .context("starting the --prometheus-rw thread")?;
        Ok(Self { next: Instant::now(), sender: Some(sender), worker: Some(worker) })
    }

    /// Called from the loop at every wake-up: once a second hands the figures to the thread (or
    /// skips this second when the thread is still busy with the last ones).
    pub fn tick(&mut self, recorder: &Recorder, now: Instant) {
        if now < self.next {
            return;
        }
        self.next = now + EVERY;
        if let Some(sender) = &self.sender
            && let Err(TrySendError::Disconnected(_)) = sender.try_send(snapshot(recorder))
        {
            self.sender = None;
        }
    }

    /// Pushes the final figures and waits for the thread to finish.
    pub fn finish(mut self, recorder: &Recorder) {
        if let Some(sender) = self.sender.take() {
            let _ = sender.send(snapshot(recorder));
        }
        if let Some(worker) = self.worker.take() {
            let _ = worker.join();
        }
    }
}

fn snapshot(recorder: &Recorder) -> Vec<TargetFigures> {
    (0..recorder.endpoints.len())
        .map(|t| TargetFigures { dropped: recorder.target_dropped(t), endpoints: recorder.endpoints[t].clone() })
        .collect()
}

/// The pushing thread: every snapshot as one request, until the loop hangs up.
fn push_all(
    endpoint: &Endpoint,
    targets: &[String],
    labels: &[EndpointLabels],
    receiver: &Receiver<Vec<TargetFigures>>,
) {
    let mut last_error: Option<String> = None;
    while let Ok(figures) = receiver.recv() {
        let now_ms = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64);
        let body = protobuf::snappy_block(&protobuf::write_request(&series(targets, labels, &figures), now_ms));
        match post(endpoint, &body) {
            Ok(()) => last_error = None,
            Err(error) => {
                let text = format!("{error:#}");
                if last_error.as_deref() != Some(text.as_str()) {
                    eprintln!("load: --prometheus-rw: {text} (the run goes on)");
                }
                last_error = Some(text);
            }
        }
    }
}

/// The series k6 would send for these figures.
fn series(targets: &[String], labels: &[EndpointLabels], figures: &[TargetFigures]) -> Vec<Series> {
    let mut out = Vec::new();
    let named = |name: &str, pairs: &[(&str, &str)]| -> Vec<(String, String)> {
        std::iter::once(("__name__".to_owned(), name.to_owned()))
            .chain(pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())))
            .collect()
    };
    for (target, figures) in targets.iter().zip(figures) {
        let mut iterations = 0;
        for (endpoint, done) in labels.iter().zip(&figures.endpoints) {
            let pairs = [
                ("scenario", target.as_str()),
                ("target", target.as_str()),
                ("endpoint", endpoint.endpoint.as_str()),
                ("name", endpoint.route.as_str()),
                ("method", endpoint.method.as_str()),
            ];
            out.push(Series { labels: named("k6_http_reqs_total", &pairs), value: Value::Sample(done.count as f64) });
            out.push(Series {
                labels: named("k6_http_req_duration_seconds", &pairs),
                value: Value::Histogram(latency(done)),
            });
            iterations += done.count;
        }
        let pairs = [("scenario", target.as_str()), ("target", target.as_str())];
        out.push(Series { labels: named("k6_iterations_total", &pairs), value: Value::Sample(iterations as f64) });
        out.push(Series {
            labels: named("k6_dropped_iterations_total", &[("scenario", target.as_str())]),
            value: Value::Sample(figures.dropped as f64),
        });
    }
    out
}

/// The recorder's latency histogram (microseconds, three significant digits) as a native one in
/// seconds.
fn latency(figures: &Figures) -> NativeHistogram {
    let mut histogram = NativeHistogram::new(SCHEMA);
    for value in figures.histogram.iter_recorded() {
        histogram.observe(value.value_iterated_to() as f64 / 1e6, value.count_at_value().into());
    }
    histogram
}

/// One remote-write request; `Ok` on a 2xx answer.
fn post(endpoint: &Endpoint, body: &[u8]) -> Result<()> {
    let address = endpoint
        .host_port
        .to_socket_addrs()
        .with_context(|| format!("resolving {}", endpoint.host_port))?
        .next()
        .with_context(|| format!("{} has no address", endpoint.host_port))?;
    let mut stream = TcpStream::connect_timeout(&address, NETWORK_TIMEOUT)
        .with_context(|| format!("connecting to {}", endpoint.host_port))?;
    stream.set_write_timeout(Some(NETWORK_TIMEOUT))?;
    stream.set_read_timeout(Some(NETWORK_TIMEOUT))?;
    let head = format!(
        "POST {} HTTP/1.1\r\nHost: {}\r\nUser-Agent: orders-bench\r\nContent-Type: application/x-protobuf\r\n\
         Content-Encoding: snappy\r\nX-Prometheus-Remote-Write-Version: 0.1.0\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n",
        endpoint.path,
        endpoint.host_port,
        body.len()
    );
    stream.write_all(head.as_bytes()).and_then(|()| stream.write_all(body)).context("sending")?;
    let mut answer = Vec::new();
    let _ = stream.take(4096).read_to_end(&mut answer);
    let text = String::from_utf8_lossy(&answer);
    let status = text.split_whitespace().nth(1).unwrap_or("none");
    if !status.starts_with('2') {
        let why = text.split("\r\n\r\n").nth(1).unwrap_or("").trim();
        bail!("{} answered {status}: {why}", endpoint.host_port);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Slot;
    use std::net::TcpListener;

    #[test]
    fn the_url_is_host_port_and_path() {
        let endpoint = Endpoint::parse("http://127.0.0.1:9090/api/v1/write").expect("url");
        assert_eq!(endpoint, Endpoint { host_port: "127.0.0.1:9090".into(), path: "/api/v1/write".into() });
        assert_eq!(Endpoint::parse("http://monitor:9090").expect("url").path, "/");
        for bad in ["https://h:1/x", "127.0.0.1:9090/api/v1/write", "http:///x", "http://host/x"] {
            assert!(Endpoint::parse(bad).is_err(), "{bad}");
        }
    }

    fn recorder_with_requests() -> Recorder {
        let mut recorder = Recorder::new(2, 2, &[10], Duration::from_millis(100), Duration::from_millis(50));
        for ms in [2, 3, 40] {
            recorder.request(Slot { target: 0, step: 0, window: 0, endpoint: 1 }, Duration::from_millis(ms), None);
        }
        recorder.request(Slot { target: 1, step: 0, window: 0, endpoint: 0 }, Duration::from_millis(5), None);
        recorder.dropped(Slot { target: 1, step: 0, window: 1, endpoint: 0 });
        recorder
    }

    fn labels() -> Vec<EndpointLabels> {
        ["read", "insert"]
            .iter()
            .zip(["/orders/{order_id}", "/orders"])
            .zip(["GET", "POST"])
            .map(|((e, r), m)| EndpointLabels { endpoint: (*e).into(), route: r.into(), method: m.into() })
            .collect()
    }

    #[test]
    fn the_figures_become_k6s_series() {
        let names = ["pg".to_owned(), "mongo".to_owned()];
        let all = series(&names, &labels(), &snapshot(&recorder_with_requests()));
        let find = |name: &str, target: &str, endpoint: Option<&str>| {
            all.iter()
                .find(|s| {
                    let has = |k: &str, v: &str| s.labels.iter().any(|(a, b)| a == k && b == v);
                    has("__name__", name) && has("scenario", target) && endpoint.is_none_or(|e| has("endpoint", e))
                })
                .map(|s| s.value.clone())
        };
        assert_eq!(find("k6_http_reqs_total", "pg", Some("insert")), Some(Value::Sample(3.0)));
        assert_eq!(find("k6_http_reqs_total", "pg", Some("read")), Some(Value::Sample(0.0)));
        assert_eq!(find("k6_iterations_total", "pg", None), Some(Value::Sample(3.0)));
        assert_eq!(find("k6_dropped_iterations_total", "mongo", None), Some(Value::Sample(1.0)));
        let Some(Value::Histogram(latency)) = find("k6_http_req_duration_seconds", "pg", Some("insert")) else {
            panic!("no latency histogram: {all:?}")
        };
        assert_eq!((latency.schema, latency.count), (3, 3));
        assert!((latency.sum - 0.045).abs() < 0.0001, "{}", latency.sum);
        // 40 ms: log2(0.04) × 8 = -37.2, so bucket -37.
        assert_eq!(latency.buckets.get(&-37), Some(&1));
        let route = all.iter().flat_map(|s| &s.labels).find(|(k, v)| k == "name" && v.contains('{'));
        assert_eq!(route.map(|(_, v)| v.as_str()), Some("/orders/{order_id}"));
        // Per target: two endpoints × (count + latency), iterations, dropped.
        assert_eq!(all.len(), 12);
    }

    #[test]
    fn a_push_is_a_snappy_protobuf_post_and_a_refusal_is_an_error() {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let endpoint =
            Endpoint { host_port: listener.local_addr().expect("addr").to_string(), path: "/api/v1/write".into() };
        let server = std::thread::spawn(move || {
            let mut heads = Vec::new();
            for answer in ["HTTP/1.1 204 No Content\r\n\r\n", "HTTP/1.1 400 Bad Request\r\n\r\nout of order sample"] {
                let (mut stream, _) = listener.accept().expect("accept");
                let mut request = vec![0_u8; 65536];
                let n = stream.read(&mut request).expect("read");
                heads.push(String::from_utf8_lossy(&request[..n]).to_string());
                stream.write_all(answer.as_bytes()).expect("answer");
            }
            heads
        });
        assert!(post(&endpoint, b"body").is_ok());
        let refused = post(&endpoint, b"body").expect_err("a 400 is an error");
        assert!(format!("{refused:#}").contains("400: out of order sample"), "{refused:#}");
        let heads = server.join().expect("server");
        assert!(heads[0].starts_with("POST /api/v1/write HTTP/1.1\r\n"), "{}", heads[0]);
        for header in ["Content-Encoding: snappy", "Content-Type: application/x-protobuf", "Content-Length: 4"] {
            assert!(heads[0].contains(header), "{header}: {}", heads[0]);
        }
    }

    #[test]
    fn the_round_environment_configures_both_generators() {
        let env = round_env("http://10.0.0.9:9090/api/v1/write").expect("env");
        let get = |name: &str| env.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str());
        assert_eq!(get("ORDERS_BENCH_PROMETHEUS_RW"), Some("http://10.0.0.9:9090/api/v1/write"));
        assert_eq!(get("K6_PROMETHEUS_RW_SERVER_URL"), Some("http://10.0.0.9:9090/api/v1/write"));
        assert_eq!(get("K6_PROMETHEUS_RW_TREND_AS_NATIVE_HISTOGRAM"), Some("true"));
        assert!(round_env("https://10.0.0.9/api/v1/write").is_err());
    }
}
