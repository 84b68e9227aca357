//! The closed loop beside the staircase: a fixed number of clients per target, each sending its
//! next request as soon as the previous one is answered, for a fixed time (study S2: eight
//! clients, 20 s, five runs). Its throughput is what S2 and S4 report; the experiments also use a
//! short one to place the staircase around each machine's capacity.
//!
//! What an experiment needs from a closed-loop generator is this module's interface: `Plan` in,
//! `Run` out (per target: requests, failures, requests/s, latency quantiles), both targets at the
//! same moment, the same request sequence for each, `Prefer: return=minimal` on the writes when
//! asked. Until the native load generator's closed-loop mode (`orders-bench load --clients N
//! --duration D`, helper "loadgen") is merged, the loop below drives it with reqwest; swapping it
//! for that mode changes only `run`.

use super::services::Urls;
use crate::experiment::engine::Target;
use anyhow::{Context, Result};
use orders_dataset::Profile;
use orders_dataset::manifest::Manifest;
use orders_dataset::prng::SplitMix64;
use reqwest::header::{CONTENT_TYPE, HeaderValue};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Work {
    /// `PATCH /orders/{id}/status` to a random status.
    Status,
    /// `GET /orders/{id}`.
    Read,
    /// `POST /orders` of an order shaped like the seeded ones, without an id.
    Insert,
}

impl Work {
    pub fn mix(self) -> &'static str {
        match self {
            Self::Status => "status",
            Self::Read => "read",
            Self::Insert => "insert",
        }
    }

    fn writes(self) -> bool {
        !matches!(self, Self::Read)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    pub work: Work,
    pub clients: u32,
    pub seconds: f64,
    pub prefer_minimal: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TargetRun {
    pub requests: u64,
    pub failures: u64,
    /// Answered requests per second of the run.
    pub per_second: f64,
    pub p50_ms: Option<f64>,
    pub p95_ms: Option<f64>,
    pub p99_ms: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Run {
    pub plan: Plan,
    pub seconds: f64,
    pub targets: BTreeMap<String, TargetRun>,
}

impl Run {
    /// The lower of the two targets' throughputs: what a staircase is placed around (the faster
    /// target then shows as `≥` if the machine stops it first, rather than both failing at once).
    pub fn slower(&self) -> f64 {
        self.targets.values().map(|t| t.per_second).reduce(f64::min).unwrap_or(0.0)
    }
}

/// A create body shaped like the seeded order `id` (same items and note size), without the
/// fields the service computes or assigns.
pub fn new_order_body(profile: &Profile, id: u64) -> Result<String> {
    let mut order = serde_json::to_value(profile.order(id)?).context("order as JSON")?;
    if let Some(fields) = order.as_object_mut() {
        for computed in ["id", "total_cents", "created_at", "updated_at"] {
            fields.remove(computed);
        }
    }
    Ok(order.to_string())
}

pub fn profile_of(manifest: &Manifest) -> Profile {
    Profile {
        seed: manifest.seed,
        orders: manifest.orders,
        customers: manifest.customers,
        products: manifest.products,
        items: manifest.items_per_order,
        note_bytes: manifest.note_bytes,
    }
}

const STATUSES: [&str; 5] = ["pending", "paid", "shipped", "delivered", "cancelled"];

/// What one client needs; shared by every client of both targets.
struct Job {
    work: Work,
    minimal: bool,
    orders: u64,
    bodies: Vec<String>,
    deadline: Instant,
}

impl Job {
    fn expected(&self) -> u16 {
        match self.work {
            Work::Read => 200,
            Work::Insert => 201,
            Work::Status if self.minimal => 204,
            Work::Status => 200,
        }
    }

    fn request(&self, http: &reqwest::Client, base: &str, rng: &mut SplitMix64, n: usize) -> reqwest::RequestBuilder {
        let id = rng.between(1, self.orders);
        let builder = match self.work {
            Work::Read => return http.get(format!("{base}/orders/{id}")),
            Work::Status => http
                .patch(format!("{base}/orders/{id}/status"))
                .body(format!("{{\"status\":\"{}\"}}", rng.pick(&STATUSES))),
            Work::Insert => http.post(format!("{base}/orders")).body(self.bodies[n % self.bodies.len()].clone()),
        };
        let builder = builder.header(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        if self.minimal { builder.header("Prefer", "return=minimal") } else { builder }
    }
}

/// One client: requests back to back until the deadline; (latencies in µs, failures).
async fn client(job: Arc<Job>, http: reqwest::Client, base: String, seed: u64) -> (Vec<u32>, u64) {
    let mut rng = SplitMix64::new(seed);
    let (mut latencies, mut failures, mut n) = (Vec::new(), 0u64, 0usize);
    while Instant::now() < job.deadline {
        let sent = Instant::now();
        let outcome = job.request(&http, &base, &mut rng, n).send().await;
        let ok = match outcome {
            Ok(response) => response.status().as_u16() == job.expected() && response.bytes().await.is_ok(),
            Err(_) => false,
        };
        latencies.push(u32::try_from(sent.elapsed().as_micros()).unwrap_or(u32::MAX));
        failures += u64::from(!ok);
        n += 1;
    }
    (latencies, failures)
}

fn quantile(sorted: &[u32], q: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let index = ((sorted.len() as f64 * q).ceil() as usize).clamp(1, sorted.len()) - 1;
    Some(f64::from(sorted[index]) / 1000.0)
}

/// Runs `plan` against both services at the same moment.
pub async fn run(plan: &Plan, urls: &Urls, manifest: &Manifest) -> Result<Run> {
    let profile = profile_of(manifest);
    let bodies = match plan.work {
        Work::Insert => (0..64).map(|n| new_order_body(&profile, manifest.orders + 1 + n)).collect::<Result<_>>()?,
        _ => Vec::new(),
    };
    let job = Arc::new(Job {
        work: plan.work,
        minimal: plan.prefer_minimal && plan.work.writes(),
        orders: manifest.orders.max(1),
        bodies,
        deadline: Instant::now() + Duration::from_secs_f64(plan.seconds),
    });
    let started = Instant::now();
    let mut handles = Vec::new();
    for target in Target::ALL {
        let (name, base) = (target.name(), urls.get(target));
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(10))
            .pool_max_idle_per_host(plan.clients as usize)
            .build()
            .context("HTTP client")?;
        for index in 0..plan.clients {
            // The same seeds on both targets: both get the same sequence of requests.
            let task = tokio::spawn(client(job.clone(), http.clone(), base.to_owned(), u64::from(index) + 1));
            handles.push((name, task));
        }
    }
    let mut collected: BTreeMap<String, (Vec<u32>, u64)> = BTreeMap::new();
    for (name, handle) in handles {
        let (latencies, failures) = handle.await.context("closed-loop client")?;
        let entry = collected.entry(name.to_owned()).or_default();
        entry.0.extend(latencies);
        entry.1 += failures;
    }
    let seconds = started.elapsed().as_secs_f64().max(plan.seconds);
    let targets = collected
        .into_iter()
        .map(|(name, (mut latencies, failures))| {
            latencies.sort_unstable();
            let requests = latencies.len() as u64;
            let run = TargetRun {
                requests,
                failures,
                per_second: requests.saturating_sub(failures) as f64 / seconds,
                p50_ms: quantile(&latencies, 0.50),
                p95_ms: quantile(&latencies, 0.95),
                p99_ms: quantile(&latencies, 0.99),
            };
            (name, run)
        })
        .collect();
    Ok(Run { plan: *plan, seconds, targets })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_create_body_has_no_computed_fields_and_keeps_the_note() {
        let profile = Profile { seed: 1, orders: 10, customers: 5, products: 5, items: 3, note_bytes: 500 };
        let body: serde_json::Value = serde_json::from_str(&new_order_body(&profile, 11).expect("body")).expect("JSON");
        for computed in ["id", "total_cents", "created_at", "updated_at"] {
            assert!(body.get(computed).is_none(), "{computed} in {body}");
        }
        assert_eq!(body["note"].as_str().map(str::len), Some(500));
        assert_eq!(body["items"].as_array().map(Vec::len), Some(3));
    }

    #[test]
    fn quantiles_are_taken_from_the_sorted_latencies() {
        let sorted: Vec<u32> = (1..=100).map(|ms| ms * 1000).collect();
        assert_eq!(quantile(&sorted, 0.5), Some(50.0));
        assert_eq!(quantile(&sorted, 0.95), Some(95.0));
        assert_eq!(quantile(&[], 0.5), None);
    }
}
