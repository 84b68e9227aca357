//! The reads of the failover's `shop` mix: beside the inserts, orders by id and product searches
//! at the mix's shares, open loop, one attempt each (a reader that fails shows an error page; it
//! does not retry behind the user's back). A read counts as answered when the service answered
//! from its database (200, or 404 for an order not written yet), as failed otherwise (a 5xx, no
//! answer). What the minute after the kill costs a reader: reads failed, and the time from the
//! kill to the last read that failed.

use anyhow::{Context, Result};
use serde::Serialize;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Semaphore;

/// One read and its answer.
#[derive(Debug, Clone, Serialize)]
pub struct Read {
    pub path: String,
    /// Milliseconds since the run's start: when it was due, sent and answered.
    pub due_ms: f64,
    pub sent_ms: f64,
    pub done_ms: f64,
    pub status: Option<u16>,
    pub answered: bool,
}

/// What the readers are asked to do: `rate` reads a second for `requests` reads, each path from
/// `path` (the read's number).
pub struct Readers {
    pub rate: u32,
    pub requests: u64,
    pub timeout: Duration,
    pub in_flight: usize,
}

/// Runs the readers against `url` from `start`; every read's record, in arrival order.
pub async fn run(url: &str, readers: &Readers, path: impl Fn(u64) -> String, start: Instant) -> Result<Vec<Read>> {
    let http = reqwest::Client::builder().timeout(readers.timeout).build().context("HTTP client")?;
    let gate = Arc::new(Semaphore::new(readers.in_flight.max(1)));
    let period = Duration::from_secs_f64(1.0 / f64::from(readers.rate.max(1)));
    let mut tasks = Vec::with_capacity(readers.requests as usize);
    for i in 0..readers.requests {
        let due = start + period.mul_f64(i as f64);
        tokio::time::sleep_until(due.into()).await;
        let (http, gate, path) = (http.clone(), gate.clone(), path(i));
        let url = format!("{url}{path}");
        tasks.push(tokio::spawn(async move {
            let _permit = gate.acquire().await;
            let sent = Instant::now();
            let status = http.get(&url).send().await.ok().map(|r| r.status().as_u16());
            let answered = matches!(status, Some(200 | 404));
            Read {
                path,
                due_ms: ms(start, due),
                sent_ms: ms(start, sent),
                done_ms: ms(start, Instant::now()),
                status,
                answered,
            }
        }));
    }
    let mut reads = Vec::with_capacity(tasks.len());
    for task in tasks {
        reads.push(task.await.context("a read task failed")?);
    }
    Ok(reads)
}

/// The readers' figures around the kill.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Figures {
    pub reads: u64,
    pub answered: u64,
    pub failed: u64,
    /// Reads failed whose path was a product search (the rest were orders by id).
    pub failed_searches: u64,
    /// From the kill to the end of the last read that failed (the readers' outage, as they saw it).
    pub last_failure_after_kill_ms: Option<f64>,
    /// Reads sent inside that outage and answered all the same (a backend of a killed postmaster
    /// may finish a statement before it notices; a read of an order not written yet is a 404).
    pub answered_in_outage: u64,
    /// Failed answers by status (`none`: no answer in time).
    pub failures_by_status: std::collections::BTreeMap<String, u64>,
}

pub fn figures(reads: &[Read], kill_ms: f64) -> Figures {
    let failed: Vec<&Read> = reads.iter().filter(|r| !r.answered).collect();
    let outage_end = failed.iter().map(|r| r.done_ms).filter(|done| *done >= kill_ms).reduce(f64::max);
    let mut by_status = std::collections::BTreeMap::new();
    for read in &failed {
        *by_status.entry(read.status.map_or("none".to_owned(), |s| s.to_string())).or_insert(0) += 1;
    }
    Figures {
        reads: reads.len() as u64,
        answered: reads.iter().filter(|r| r.answered).count() as u64,
        failed: failed.len() as u64,
        failed_searches: failed.iter().filter(|r| r.path.starts_with("/products/")).count() as u64,
        last_failure_after_kill_ms: outage_end.map(|end| end - kill_ms),
        answered_in_outage: outage_end.map_or(0, |end| {
            reads.iter().filter(|r| r.answered && r.sent_ms >= kill_ms && r.sent_ms <= end).count() as u64
        }),
        failures_by_status: by_status,
    }
}

fn ms(start: Instant, at: Instant) -> f64 {
    at.saturating_duration_since(start).as_secs_f64() * 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(path: &str, sent_ms: f64, status: Option<u16>) -> Read {
        let answered = matches!(status, Some(200 | 404));
        Read { path: path.into(), due_ms: sent_ms, sent_ms, done_ms: sent_ms + 5.0, status, answered }
    }

    #[test]
    fn the_readers_outage_runs_from_the_kill_to_the_last_failure_and_the_first_answer_after() {
        let reads = [
            read("/orders/1", 900.0, Some(200)),
            read("/orders/2", 1_100.0, Some(503)),
            read("/products/3/orders?limit=10", 1_500.0, None),
            read("/orders/4", 2_000.0, Some(404)),
            read("/orders/5", 2_500.0, Some(503)),
            read("/orders/6", 3_000.0, Some(200)),
        ];
        let f = figures(&reads, 1_000.0);
        assert_eq!((f.reads, f.answered, f.failed, f.failed_searches), (6, 3, 3, 1));
        assert_eq!(f.last_failure_after_kill_ms, Some(1_505.0), "the outage ends with its last failure");
        assert_eq!(f.answered_in_outage, 1, "a 404 inside it is the database's answer");
        assert_eq!(f.failures_by_status.get("503"), Some(&2));
        assert_eq!(f.failures_by_status.get("none"), Some(&1));
    }
}
