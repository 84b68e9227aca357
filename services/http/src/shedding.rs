//! Counts of requests answered 503, by reason (`Shed`), for `/metrics`. `ApiError` puts the reason
//! into the response's extensions; the `Observe` layer (outside the request timeout, so timed-out
//! requests count too) adds it up here with one relaxed atomic increment, so shedding costs no
//! lock and no log line however many requests are shed.

use crate::error::Shed;
use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};

#[derive(Debug, Default)]
pub struct Shedding {
    counts: [AtomicU64; Shed::ALL.len()],
}

impl Shedding {
    pub fn record(&self, reason: Shed) {
        self.counts[reason as usize].fetch_add(1, Ordering::Relaxed);
    }

    pub fn count(&self, reason: Shed) -> u64 {
        self.counts[reason as usize].load(Ordering::Relaxed)
    }

    /// The `http_requests_shed_total` family in the Prometheus text format.
    pub fn render(&self) -> String {
        let mut out = String::from(
            "# HELP http_requests_shed_total Requests answered 503 unavailable, by reason.\n\
             # TYPE http_requests_shed_total counter\n",
        );
        for reason in Shed::ALL {
            let _ = writeln!(out, r#"http_requests_shed_total{{reason="{}"}} {}"#, reason.as_str(), self.count(reason));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_reason_is_rendered_with_its_count() {
        let shedding = Shedding::default();
        shedding.record(Shed::PoolTimeout);
        shedding.record(Shed::PoolTimeout);
        shedding.record(Shed::RequestTimeout);
        let text = shedding.render();
        assert!(text.contains(r#"http_requests_shed_total{reason="pool_timeout"} 2"#), "{text}");
        assert!(text.contains(r#"http_requests_shed_total{reason="request_timeout"} 1"#), "{text}");
        assert!(text.contains(r#"http_requests_shed_total{reason="database_unavailable"} 0"#), "{text}");
        assert!(text.contains(r#"http_requests_shed_total{reason="shutting_down"} 0"#), "{text}");
    }
}
