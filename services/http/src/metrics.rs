//! A small Prometheus registry: one latency histogram per (route, method, status) and the
//! connection pool gauges, rendered in the text exposition format. Hand-written because the whole
//! need is one histogram family; the lock is held for a few nanoseconds per request.

use orders_core::PoolStatus;
use std::collections::HashMap;
use std::fmt::Write;
use std::sync::Mutex;
use std::time::Duration;

/// Upper bounds in seconds; 50 ms (the benchmark's pass mark) is a bucket edge.
const BUCKETS: [f64; 14] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0];

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct SeriesKey {
    route: String,
    method: String,
    status: u16,
}

#[derive(Debug, Default, Clone)]
struct Histogram {
    /// Non-cumulative counts per bucket; the last slot is +Inf.
    counts: [u64; BUCKETS.len() + 1],
    sum_seconds: f64,
    count: u64,
}

#[derive(Debug, Default)]
pub struct Metrics {
    series: Mutex<HashMap<SeriesKey, Histogram>>,
}

impl Metrics {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn record(&self, route: &str, method: &str, status: u16, elapsed: Duration) {
        let seconds = elapsed.as_secs_f64();
        let slot = BUCKETS.iter().position(|&bound| seconds <= bound).unwrap_or(BUCKETS.len());
        let key = SeriesKey { route: route.to_owned(), method: method.to_owned(), status };
        let Ok(mut series) = self.series.lock() else { return };
        let histogram = series.entry(key).or_default();
        histogram.counts[slot] += 1;
        histogram.sum_seconds += seconds;
        histogram.count += 1;
    }

    pub fn render(&self, backend: &str, pool: PoolStatus) -> String {
        let mut snapshot: Vec<(SeriesKey, Histogram)> = match self.series.lock() {
            Ok(series) => series.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
            Err(_) => Vec::new(),
        };
        snapshot.sort_by(|a, b| (&a.0.route, &a.0.method, a.0.status).cmp(&(&b.0.route, &b.0.method, b.0.status)));

        let mut out = String::new();
        out.push_str("# HELP http_request_duration_seconds Time from request to response, by route template.\n");
        out.push_str("# TYPE http_request_duration_seconds histogram\n");
        for (key, histogram) in &snapshot {
            let labels = format!(r#"route="{}",method="{}",status="{}""#, escape(&key.route), key.method, key.status);
            let mut cumulative = 0;
            for (bound, count) in BUCKETS.iter().zip(histogram.counts) {
                cumulative += count;
                let _ = writeln!(out, r#"http_request_duration_seconds_bucket{{{labels},le="{bound}"}} {cumulative}"#);
            }
            let _ = writeln!(out, r#"http_request_duration_seconds_bucket{{{labels},le="+Inf"}} {}"#, histogram.count);
            let _ = writeln!(out, "http_request_duration_seconds_sum{{{labels}}} {}", histogram.sum_seconds);
            let _ = writeln!(out, "http_request_duration_seconds_count{{{labels}}} {}", histogram.count);
        }
        out.push_str("# HELP http_requests_total Requests answered, by route template and status.\n");
        out.push_str("# TYPE http_requests_total counter\n");
        for (key, histogram) in &snapshot {
            let _ = writeln!(
                out,
                r#"http_requests_total{{route="{}",method="{}",status="{}"}} {}"#,
                escape(&key.route),
                key.method,
                key.status,
                histogram.count
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
        assert!(text.contains(&format!("http_request_duration_seconds_count{{{series}}} 2")));
        assert!(text.contains(r#"http_requests_total{route="/orders/{id}",method="GET",status="404"} 1"#));
        assert!(text.contains(r#"db_pool_size{backend="postgres"} 3"#));
    }
}
