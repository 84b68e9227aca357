//! The failover's load: a constant-rate open-loop insert client, one per service, that keeps a
//! record of every attempt. Arrivals are scheduled at a fixed rate whatever the answers (a slow or
//! failing service does not slow the offered load); each insert carries its own order id and an
//! `Idempotency-Key`, and an attempt whose answer leaves the order unwritten or its outcome
//! unknown is retried with the same key and body, after a capped exponential back-off, up to a
//! retry budget (then the request is given up). Latency counts from the scheduled arrival, so the
//! time spent retrying is in it.

use anyhow::{Context, Result};
use serde::Serialize;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Semaphore;

/// How an attempt was answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Answer {
    /// 201: the write is acknowledged.
    Acked,
    /// The service said it may or may not have written (503 with "outcome unknown"), or no answer
    /// came (connection error, timeout).
    Unknown,
    /// The service said nothing was written: a 503 without "outcome unknown" (no connection, pool
    /// exhausted before the statement was sent), or another error status.
    NotWritten,
    /// A 4xx that a retry cannot change (409 id taken, 422): the client stops.
    Rejected,
}

#[derive(Debug, Clone, Serialize)]
pub struct Attempt {
    /// Milliseconds since the run's start.
    pub sent_ms: f64,
    pub done_ms: f64,
    pub status: Option<u16>,
    pub answer: Answer,
    /// Why it failed, in the service's words (the error's message) or the client's (no answer).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// One insert and its attempts.
#[derive(Debug, Clone, Serialize)]
pub struct Request {
    pub id: u64,
    pub key: String,
    /// The scheduled arrival, milliseconds since the run's start.
    pub due_ms: f64,
    pub attempts: Vec<Attempt>,
}

impl Request {
    pub fn acked_at(&self) -> Option<f64> {
        self.attempts.iter().find(|a| a.answer == Answer::Acked).map(|a| a.done_ms)
    }

    /// Every attempt said nothing was written (or rejected it): the order must not exist.
    pub fn never_written(&self) -> bool {
        !self.attempts.is_empty()
            && self.attempts.iter().all(|a| matches!(a.answer, Answer::NotWritten | Answer::Rejected))
    }
}

/// What the client is asked to do.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Load {
    /// Arrivals per second.
    pub rate: u32,
    pub requests: u64,
    /// Attempts after the first, at most, per request.
    pub retries: u32,
    #[serde(skip)]
    pub first_backoff: Duration,
    #[serde(skip)]
    pub max_backoff: Duration,
    #[serde(skip)]
    pub timeout: Duration,
    /// Attempts in flight at most (arrivals beyond it wait, their latency growing).
    pub in_flight: usize,
}

impl Load {
    pub fn backoff(&self, retry: u32) -> Duration {
        let doubled = self.first_backoff.saturating_mul(1u32 << retry.min(16));
        doubled.min(self.max_backoff)
    }
}

/// The order ids and keys of one run against one service.
pub struct Orders {
    pub first_id: u64,
    pub key_prefix: String,
    pub bodies: Arc<dyn Fn(u64) -> Result<String> + Send + Sync>,
}

/// Runs `load` against `url` from `start` and returns every request's record, in arrival order.
pub async fn run(url: &str, load: Load, orders: &Orders, start: Instant) -> Result<Vec<Request>> {
    let http = reqwest::Client::builder().timeout(load.timeout).build().context("HTTP client")?;
    let gate = Arc::new(Semaphore::new(load.in_flight.max(1)));
    let period = Duration::from_secs_f64(1.0 / f64::from(load.rate.max(1)));
    let mut tasks = Vec::with_capacity(load.requests as usize);
    for i in 0..load.requests {
        let due = start + period.mul_f64(i as f64);
        tokio::time::sleep_until(due.into()).await;
        let id = orders.first_id + i;
        let request =
            Request { id, key: format!("{}-{i}", orders.key_prefix), due_ms: ms(start, due), attempts: Vec::new() };
        let body = (orders.bodies)(id)?;
        let (http, gate, url) = (http.clone(), gate.clone(), format!("{url}/orders"));
        tasks.push(tokio::spawn(async move { insert(&http, &gate, &url, body, request, load, start).await }));
    }
    let mut records = Vec::with_capacity(tasks.len());
    for task in tasks {
        records.push(task.await.context("an insert task failed")?);
    }
    Ok(records)
}

async fn insert(
    http: &reqwest::Client,
    gate: &Semaphore,
    url: &str,
    body: String,
    mut request: Request,
    load: Load,
    start: Instant,
) -> Request {
    for retry in 0..=load.retries {
        if retry > 0 {
            tokio::time::sleep(load.backoff(retry - 1)).await;
        }
        let attempt = {
            let Ok(_permit) = gate.acquire().await else { break };
            let sent = Instant::now();
            let answer = http
                .post(url)
                .header("content-type", "application/json")
                .header("idempotency-key", &request.key)
                .header("prefer", "return=minimal")
                .body(body.clone())
                .send()
                .await;
            let (status, answer, reason) = match answer {
                Ok(response) => {
                    let status = response.status().as_u16();
                    let text = response.text().await.unwrap_or_default();
                    let answer = classify(status, &text);
                    (Some(status), answer, (answer != Answer::Acked).then(|| message(&text)))
                }
                Err(error) => (None, Answer::Unknown, Some(format!("no answer: {error}"))),
            };
            Attempt { sent_ms: ms(start, sent), done_ms: ms(start, Instant::now()), status, answer, reason }
        };
        let answer = attempt.answer;
        request.attempts.push(attempt);
        if matches!(answer, Answer::Acked | Answer::Rejected) {
            break;
        }
    }
    request
}

/// The service's answer, by status and body (DESIGN.md "Errors": a 503 whose outcome is unknown
/// says so in `details`).
pub fn classify(status: u16, body: &str) -> Answer {
    match status {
        201 => Answer::Acked,
        503 if body.contains("outcome of this write is unknown") || body.contains("outcome is unknown") => {
            Answer::Unknown
        }
        400..=499 => Answer::Rejected,
        _ => Answer::NotWritten,
    }
}

/// The error's `message` (DESIGN.md's error shape), or the body's first characters.
fn message(body: &str) -> String {
    let parsed: Option<serde_json::Value> = serde_json::from_str(body).ok();
    match parsed.as_ref().and_then(|v| v["error"]["message"].as_str()) {
        Some(m) => m.to_owned(),
        None => body.chars().take(120).collect(),
    }
}

fn ms(start: Instant, at: Instant) -> f64 {
    at.saturating_duration_since(start).as_secs_f64() * 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_503_is_unknown_only_when_it_says_so() {
        let unknown = r#"{"error":{"code":"unavailable","message":"the database did not confirm the write; its outcome is unknown","details":[{"message":"the outcome of this write is unknown: ..."}]}}"#;
        assert_eq!(classify(503, unknown), Answer::Unknown);
        assert_eq!(
            classify(503, r#"{"error":{"code":"unavailable","message":"database unavailable","details":[]}}"#),
            Answer::NotWritten
        );
        assert_eq!(classify(201, ""), Answer::Acked);
        assert_eq!(classify(409, "{}"), Answer::Rejected);
        assert_eq!(classify(500, "{}"), Answer::NotWritten);
    }

    #[test]
    fn back_off_doubles_up_to_its_cap() {
        let load = Load {
            rate: 1,
            requests: 1,
            retries: 3,
            first_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_millis(1000),
            timeout: Duration::from_secs(1),
            in_flight: 1,
        };
        let waits: Vec<u128> = (0..6).map(|r| load.backoff(r).as_millis()).collect();
        assert_eq!(waits, [100, 200, 400, 800, 1000, 1000]);
    }

    #[test]
    fn never_written_needs_every_attempt_to_say_so() {
        let attempt = |answer| Attempt { sent_ms: 0.0, done_ms: 1.0, status: None, answer, reason: None };
        let mut r = Request { id: 1, key: "k".into(), due_ms: 0.0, attempts: vec![attempt(Answer::NotWritten)] };
        assert!(r.never_written());
        r.attempts.push(attempt(Answer::Unknown));
        assert!(!r.never_written());
        r.attempts.clear();
        assert!(!r.never_written(), "a request never sent says nothing");
    }
}
