//! A small Prometheus registry: one latency histogram per (route, method, status) and the
//! connection pool gauges, rendered in the text exposition format. Every label has a bounded set
//! of values, whatever clients send: the route is the matched template (`unmatched` otherwise),
//! the status one the service chose, and the method one HTTP names or `OTHER` (`method_label`). A
//! series is registered once, the first time its labels occur; after that, recording a request is
//! a lookup under a shared read lock with borrowed labels (no allocation) and a few relaxed atomic
//! additions, so requests never wait for each other here.
//!
//! Hand-written rather than `prometheus-client`, which would change the exposition the dashboard
//! and the tests read and costs more per request (measured: docs/decisions.md).

use axum::http::Method;
use orders_core::PoolStatus;
use std::borrow::Borrow;
use std::collections::HashMap;
use std::fmt::Write;
use std::hash::{Hash, Hasher};
use std::sync::RwLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Upper bounds in seconds; 50 ms (the benchmark's pass mark) is a bucket edge.
const BUCKETS: [f64; 14] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0];

/// The `method` label of a request: one of the methods HTTP defines (RFC 9110, and `PATCH`), or
/// `OTHER` for any method a client invents, so that invented methods share one series instead of
/// adding one each.
pub fn method_label(method: &Method) -> &'static str {
    match *method {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::PATCH => "PATCH",
        Method::PUT => "PUT",
        Method::DELETE => "DELETE",
        Method::HEAD => "HEAD",
        Method::OPTIONS => "OPTIONS",
        Method::CONNECT => "CONNECT",
        Method::TRACE => "TRACE",
        _ => "OTHER",
    }
}

/// The labels of one series, owned (the registry's keys).
#[derive(Debug)]
struct SeriesKey {
    route: Box<str>,
    method: Box<str>,
    status: u16,
}

/// The labels as a request has them, borrowed; `SeriesKey` borrows as this for lookups.
trait Labels {
    fn labels(&self) -> (&str, &str, u16);
}

impl Labels for SeriesKey {
    fn labels(&self) -> (&str, &str, u16) {
        (&self.route, &self.method, self.status)
    }
}

impl Labels for (&str, &str, u16) {
    fn labels(&self) -> (&str, &str, u16) {
        *self
    }
}

impl<'a> Borrow<dyn Labels + 'a> for SeriesKey {
    fn borrow(&self) -> &(dyn Labels + 'a) {
        self
    }
}

impl Hash for dyn Labels + '_ {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.labels().hash(state);
    }
}

impl PartialEq for dyn Labels + '_ {
    fn eq(&self, other: &Self) -> bool {
        self.labels() == other.labels()
    }
}

impl Eq for dyn Labels + '_ {}

// The owned key hashes and compares exactly like its borrowed form, as `Borrow` requires.
impl Hash for SeriesKey {
    fn hash<H: Hasher>(&self, state: &mut H) {
        (self as &dyn Labels).hash(state);
    }
}

impl PartialEq for SeriesKey {
    fn eq(&self, other: &Self) -> bool {
        self.labels() == other.labels()
    }
}

impl Eq for SeriesKey {}

#[derive(Debug, Default)]
struct Histogram {
    /// Non-cumulative counts per bucket; the last slot is +Inf. Their sum is the count.
    counts: [AtomicU64; BUCKETS.len() + 1],
    sum_nanos: AtomicU64,
}

impl Histogram {
    fn observe(&self, elapsed: Duration) {
        let seconds = elapsed.as_secs_f64();
        let slot = BUCKETS.iter().position(|&bound| seconds <= bound).unwrap_or(BUCKETS.len());
        self.counts[slot].fetch_add(1, Ordering::Relaxed);
        let nanos = u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX);
        self.sum_nanos.fetch_add(nanos, Ordering::Relaxed);
    }

    fn snapshot(&self) -> ([u64; BUCKETS.len() + 1], f64) {
        let counts = std::array::from_fn(|slot| self.counts[slot].load(Ordering::Relaxed));
        (counts, self.sum_nanos.load(Ordering::Relaxed) as f64 / 1e9)
    }
}

#[derive(Debug, Default)]
pub struct Metrics {
    series: RwLock<HashMap<SeriesKey, Histogram>>,
}

impl Metrics {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn record(&self, route: &str, method: &str, status: u16, elapsed: Duration) {
        let labels = (route, method, status);
        if let Ok(series) = self.series.read()
            && let Some(histogram) = series.get(&labels as &dyn Labels)
        {
            histogram.observe(elapsed);
            return;
        }
        // First request with these labels: register the series.
        let Ok(mut series) = self.series.write() else { return };
        let key = SeriesKey { route: route.into(), method: method.into(), status };
        series.entry(key).or_default().observe(elapsed);
    }

    pub fn render(&self, backend: &str, pool: PoolStatus) -> String {
        type Snapshot = (String, String, u16, [u64; BUCKETS.len() + 1], f64);
        let mut snapshot: Vec<Snapshot> = match self.series.read() {
            Ok(series) => series
                .iter()
                .map(|(key, histogram)| {
                    let (counts, sum) = histogram.snapshot();
                    (key.route.to_string(), key.method.to_string(), key.status, counts, sum)
                })
                .collect(),
            Err(_) => Vec::new(),
        };
        snapshot.sort_by(|a, b| (&a.0, &a.1, a.2).cmp(&(&b.0, &b.1, b.2)));

        let mut out = String::new();
        out.push_str("# HELP http_request_duration_seconds Time from request to response, by route template.\n");
        out.push_str("# TYPE http_request_duration_seconds histogram\n");
        for (route, method, status, counts, sum) in &snapshot {
            let labels = format!(r#"route="{}",method="{}",status="{}""#, escape(route), method, status);
            let mut cumulative = 0;
            for (bound, count) in BUCKETS.iter().zip(counts) {
                cumulative += count;
                let _ = writeln!(out, r#"http_request_duration_seconds_bucket{{{labels},le="{bound}"}} {cumulative}"#);
            }
            let total: u64 = counts.iter().sum();
            let _ = writeln!(out, r#"http_request_duration_seconds_bucket{{{labels},le="+Inf"}} {total}"#);
            let _ = writeln!(out, "http_request_duration_seconds_sum{{{labels}}} {sum}");
            let _ = writeln!(out, "http_request_duration_seconds_count{{{labels}}} {total}");
        }
        out.push_str("# HELP http_requests_total Requests answered, by route template and status.\n");
        out.push_str("# TYPE http_requests_total counter\n");
        for (route, method, status, counts, _) in &snapshot {
            let total: u64 = counts.iter().sum();
            let _ = writeln!(
                out,
                r#"http_requests_total{{route="{}",method="{}",status="{}"}} {total}"#,
                escape(route),
                method,
                status,
            );
        }
        for (name, help, value) in [
            ("db_pool_max_size", "Largest number of database connections the pool may open.", pool.max_size),
            ("db_pool_size", "Database connections currently open.", pool.size),
            ("db_pool_available", "Open connections idle in the pool.", pool.available),
            ("db_pool_waiting", "Requests waiting for a connection.", pool.waiting),
        ] {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} gauge\n{name}{{backend=\"{backend}\"}} {value}");
        }
        out
    }
}

fn escape(value: &str) -> String {
    value.replace('\\', r"\\").replace('"', "\\\"").replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_cumulative_buckets_sum_and_count_per_series() {
        let metrics = Metrics::new();
        metrics.record("/orders/{id}", "GET", 200, Duration::from_micros(300));
        metrics.record("/orders/{id}", "GET", 200, Duration::from_millis(30));
        metrics.record("/orders/{id}", "GET", 404, Duration::from_millis(2));
        let text = metrics.render("postgres", PoolStatus { max_size: 16, size: 3, available: 2, waiting: 0 });
        let series = r#"route="/orders/{id}",method="GET",status="200""#;
        assert!(text.contains(&format!(r#"http_request_duration_seconds_bucket{{{series},le="0.0005"}} 1"#)));
        assert!(text.contains(&format!(r#"http_request_duration_seconds_bucket{{{series},le="0.025"}} 1"#)));
        assert!(text.contains(&format!(r#"http_request_duration_seconds_bucket{{{series},le="0.05"}} 2"#)));
        assert!(text.contains(&format!(r#"http_request_duration_seconds_bucket{{{series},le="+Inf"}} 2"#)));
        assert!(text.contains(&format!("http_request_duration_seconds_sum{{{series}}} 0.0303\n")), "{text}");
        assert!(text.contains(&format!("http_request_duration_seconds_count{{{series}}} 2")));
        assert!(text.contains(r#"http_requests_total{route="/orders/{id}",method="GET",status="404"} 1"#));
        assert!(text.contains(r#"db_pool_size{backend="postgres"} 3"#));
    }

    #[test]
    fn each_label_combination_is_one_series_registered_once() {
        let metrics = Metrics::new();
        for _ in 0..3 {
            metrics.record("/orders/{id}", "GET", 200, Duration::from_micros(100));
            metrics.record("/orders/{id}", "PATCH", 200, Duration::from_micros(100));
            metrics.record("/orders", "GET", 200, Duration::from_micros(100));
        }
        metrics.record("unmatched", "GET", 404, Duration::from_micros(100));
        assert_eq!(metrics.series.read().expect("lock").len(), 4);
        let text = metrics.render("mongodb", PoolStatus::default());
        for line in [
            r#"http_requests_total{route="/orders",method="GET",status="200"} 3"#,
            r#"http_requests_total{route="/orders/{id}",method="GET",status="200"} 3"#,
            r#"http_requests_total{route="/orders/{id}",method="PATCH",status="200"} 3"#,
            r#"http_requests_total{route="unmatched",method="GET",status="404"} 1"#,
        ] {
            assert!(text.contains(line), "{line} in {text}");
        }
        let order: Vec<&str> = text.lines().filter(|line| line.starts_with("http_requests_total")).collect();
        assert!(order.windows(2).all(|pair| pair[0] < pair[1]), "series sorted by labels: {order:?}");
    }

    #[test]
    fn invented_methods_share_one_label() {
        let metrics = Metrics::new();
        for name in ["FROB", "get", "BREW", "PROPFIND", "X".repeat(1000).as_str()] {
            let method = Method::from_bytes(name.as_bytes()).expect("a valid token");
            metrics.record("unmatched", method_label(&method), 405, Duration::from_micros(100));
        }
        metrics.record("/orders", method_label(&Method::POST), 201, Duration::from_micros(100));
        assert_eq!(metrics.series.read().expect("lock").len(), 2);
        let text = metrics.render("postgres", PoolStatus::default());
        assert!(text.contains(r#"http_requests_total{route="unmatched",method="OTHER",status="405"} 5"#), "{text}");
        assert!(text.contains(r#"http_requests_total{route="/orders",method="POST",status="201"} 1"#), "{text}");
    }

    #[test]
    fn recording_from_many_threads_loses_nothing() {
        let metrics = std::sync::Arc::new(Metrics::new());
        let threads: Vec<_> = (0..4)
            .map(|thread| {
                let metrics = metrics.clone();
                std::thread::spawn(move || {
                    for i in 0..10_000 {
                        let status = if (i + thread) % 2 == 0 { 200 } else { 404 };
                        metrics.record("/orders/{id}", "GET", status, Duration::from_micros(i));
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().expect("thread");
        }
        let text = metrics.render("postgres", PoolStatus::default());
        assert!(text.contains(r#"http_requests_total{route="/orders/{id}",method="GET",status="200"} 20000"#));
        assert!(text.contains(r#"http_requests_total{route="/orders/{id}",method="GET",status="404"} 20000"#));
    }
}
