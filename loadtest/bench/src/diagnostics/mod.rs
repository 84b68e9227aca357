//! The services' `GET /diagnostics`, fetched from every target at the same moment: raw JSON is kept
//! for the result folder, and each engine's backend reads the figures the bench compares
//! (counters, sizes, plans, settings) into types (`orders_bench_engines::*::snapshot`). A field a service
//! does not report becomes `None`/empty rather than an error, so a report from an older or
//! differently configured service still renders. `probe` samples the databases during a run.

pub mod probe;

use anyhow::{Context, Result, bail};
use indexmap::IndexMap;
use orders_bench_engines::Targets;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::time::Duration;

/// Every service's raw `/diagnostics` at one moment, `at_s` seconds after the round's load began
/// (negative: before it), by target name: `{"at_s": 2.0, "pg": {...}, "mongo": {...}}`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Snapshot {
    pub at_s: f64,
    #[serde(flatten)]
    pub services: IndexMap<String, Value>,
}

#[cfg(test)]
pub mod samples {
    //! Trimmed `/diagnostics` answers of both services as they really look, and a snapshot of both.
    pub use orders_bench_engines::mongo::snapshot::samples::mongo;
    pub use orders_bench_engines::postgres::snapshot::samples::pg;

    /// Both services' answers at one moment.
    pub fn both(at_s: f64, pg: serde_json::Value, mongo: serde_json::Value) -> super::Snapshot {
        super::Snapshot { at_s, services: [("pg".to_owned(), pg), ("mongo".to_owned(), mongo)].into() }
    }
}

impl Snapshot {
    /// Target `name`'s answer (`null` when there is none).
    pub fn get(&self, name: &str) -> &Value {
        self.services.get(name).unwrap_or(&Value::Null)
    }
}

#[derive(Debug, Clone)]
pub struct Client {
    http: reqwest::Client,
    /// Each target's name and service base URL.
    pub services: Vec<(String, String)>,
}

impl Client {
    pub fn new(targets: &Targets) -> Result<Self> {
        Self::for_services(targets.iter().map(|t| (t.name(), t.url.clone())).collect())
    }

    /// A client of these services (each target's name and base URL).
    pub fn for_services(services: Vec<(String, String)>) -> Result<Self> {
        let http = reqwest::Client::builder().timeout(Duration::from_secs(20)).build().context("HTTP client")?;
        let services = services.into_iter().map(|(name, url)| (name, url.trim_end_matches('/').to_owned())).collect();
        Ok(Self { http, services })
    }

    /// The base URL of target `name`'s service.
    pub fn url(&self, name: &str) -> Option<&str> {
        self.services.iter().find(|(n, _)| n == name).map(|(_, url)| url.as_str())
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

    /// Every service's `/diagnostics`, fetched at the same moment.
    pub async fn snapshot(&self, at_s: f64) -> Result<Snapshot> {
        let answers = futures_util::future::join_all(self.services.iter().map(|(_, url)| self.fetch(url))).await;
        let mut services = IndexMap::new();
        for ((name, _), answer) in self.services.iter().zip(answers) {
            services.insert(name.clone(), answer?);
        }
        Ok(Snapshot { at_s, services })
    }

    /// `snapshot`, retried for up to `limit`: right after an overloaded run a service may still be
    /// working off queued requests and answer 503 (pool exhausted, request timeout) for a while.
    pub async fn settled(&self, at_s: f64, limit: Duration) -> Result<Snapshot> {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            match self.snapshot(at_s).await {
                Ok(pair) => return Ok(pair),
                Err(error) if tokio::time::Instant::now() >= deadline => return Err(error),
                Err(_) => tokio::time::sleep(Duration::from_millis(500)).await,
            }
        }
    }

    /// Waits until every service answers `GET /readyz` with 200, for at most `limit`.
    pub async fn wait_ready(&self, limit: Duration) -> Result<()> {
        let deadline = tokio::time::Instant::now() + limit;
        for (_, base) in &self.services {
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
