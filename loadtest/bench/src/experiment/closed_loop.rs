//! The closed loop beside the staircase: a fixed number of clients per target, each sending its
//! next request as soon as the previous one is answered, for a fixed time (study S2: eight
//! clients, 20 s, five runs). Its throughput is what S2 and S4 report; the experiments also use a
//! short one to place the staircase around each machine's capacity.
//!
//! What an experiment needs from a closed loop is this module's interface: `Plan` in, `Run` out
//! (per target: requests, failures, requests/s, latency quantiles), both targets at the same
//! moment, the same request sequence for each, `Prefer: return=minimal` on the writes when asked.
//! The loop itself is the native load generator's (`orders-bench load --clients N --duration D`,
//! `orders_loadgen`'s closed loop), run as a child process like every other load of the runner.

use super::services::Urls;
use anyhow::{Context, Result};
use orders_dataset::Profile;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

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
    #[serde(with = "orders_bench_model::seconds")]
    pub seconds: Duration,
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

/// Runs `plan` against both services at the same moment, with the native load generator's closed
/// loop (`orders-bench load --clients N --duration D`), its summary in `summary`.
pub async fn run(plan: &Plan, urls: &Urls, manifest: &Path, summary: &Path) -> Result<Run> {
    let targets: Vec<String> = urls.services().into_iter().map(|(name, url)| format!("{name}={url}")).collect();
    let mut args: Vec<String> = vec![
        "--mix".into(),
        plan.work.mix().into(),
        "--clients".into(),
        plan.clients.to_string(),
        "--duration".into(),
        orders_loadgen::duration::arg(plan.seconds),
        "--seed".into(),
        "1".into(),
    ];
    if plan.prefer_minimal && plan.work.writes() {
        args.extend(["--prefer".into(), "return=minimal".into()]);
    }
    let ran = crate::round::launch::run_native(&targets.join(","), manifest, &args, summary, &[]).await?;
    let seconds = ran.run_seconds.max(1e-9);
    let targets = ran
        .targets
        .iter()
        .map(|(name, t)| {
            let (figures, latency) = (&t.figures, &t.figures.latency_ms);
            let run = TargetRun {
                requests: figures.count,
                failures: figures.failures,
                per_second: figures.count.saturating_sub(figures.failures) as f64 / seconds,
                p50_ms: latency.p50,
                p95_ms: latency.p95,
                p99_ms: latency.p99,
            };
            (name.clone(), run)
        })
        .collect();
    Ok(Run { plan: *plan, seconds: ran.run_seconds, targets })
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
}
