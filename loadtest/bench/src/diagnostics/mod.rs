//! The services' `GET /diagnostics`, fetched from both at the same moment: raw JSON is kept for the
//! result folder, and `snapshot` reads the figures the bench compares (counters, sizes, plans,
//! settings) into types. A field a service does not report becomes `None`/empty rather than an
//! error, so a report from an older or differently configured service still renders.

pub mod probe;
pub mod snapshot;

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::time::Duration;

/// Both services' raw `/diagnostics` at one moment, `at_s` seconds after the round's k6 run began
/// (negative: before it).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Pair {
    pub at_s: f64,
    pub pg: Value,
    pub mongo: Value,
}

#[derive(Debug, Clone)]
pub struct Client {
    http: reqwest::Client,
    pub pg_url: String,
    pub mongo_url: String,
}

impl Client {
    pub fn new(pg_url: &str, mongo_url: &str) -> Result<Self> {
        let http = reqwest::Client::builder().timeout(Duration::from_secs(20)).build().context("HTTP client")?;
        Ok(Self {
            http,
            pg_url: pg_url.trim_end_matches('/').into(),
            mongo_url: mongo_url.trim_end_matches('/').into(),
        })
    }

    pub async fn fetch(&self, base: &str) -> Result<Value> {
        let url = format!("{base}/diagnostics");
        let response = self.http.get(&url).send().await.with_context(|| format!("GET {url}"))?;
        let status = response.status();
        if !status.is_success() {
            bail!("GET {url}: {status}");
        }
        response.json().await.with_context(|| format!("GET {url}: body is not JSON"))
    }

    pub async fn pair(&self, at_s: f64) -> Result<Pair> {
        let (pg, mongo) = tokio::join!(self.fetch(&self.pg_url), self.fetch(&self.mongo_url));
        Ok(Pair { at_s, pg: pg?, mongo: mongo? })
    }

    /// `pair`, retried for up to `limit`: right after an overloaded run a service may still be
    /// working off queued requests and answer 503 (pool exhausted, request timeout) for a while.
    pub async fn settled_pair(&self, at_s: f64, limit: Duration) -> Result<Pair> {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            match self.pair(at_s).await {
                Ok(pair) => return Ok(pair),
                Err(error) if tokio::time::Instant::now() >= deadline => return Err(error),
                Err(_) => tokio::time::sleep(Duration::from_millis(500)).await,
            }
        }
    }

    /// Waits until both services answer `GET /readyz` with 200, for at most `limit`.
    pub async fn wait_ready(&self, limit: Duration) -> Result<()> {
        let deadline = tokio::time::Instant::now() + limit;
        for base in [&self.pg_url, &self.mongo_url] {
            let url = format!("{base}/readyz");
            loop {
                match self.http.get(&url).timeout(Duration::from_secs(2)).send().await {
                    Ok(response) if response.status().is_success() => break,
                    outcome if tokio::time::Instant::now() >= deadline => {
                        let why = match outcome {
                            Ok(response) => response.status().to_string(),
                            Err(error) => error.to_string(),
                        };
                        bail!("{url} is not ready after {} s: {why}", limit.as_secs());
                    }
                    _ => tokio::time::sleep(Duration::from_millis(200)).await,
                }
            }
        }
        Ok(())
    }
}

/// A number of a raw `/diagnostics` answer by JSON pointer, for the readers not yet on the typed
/// reports (`budget::record`); everything else reads `snapshot`.
pub fn number(value: &Value, pointer: &str) -> Option<f64> {
    value.pointer(pointer).and_then(Value::as_f64)
}

pub fn text(value: &Value, pointer: &str) -> Option<String> {
    match value.pointer(pointer)? {
        Value::String(s) => Some(s.clone()),
        Value::Null => None,
        other => Some(other.to_string()),
    }
}
