//! The summary both load generators write (`loadtest/k6/orders.js` and `orders-loadgen`, in one
//! schema), read into types: the offered staircase, the mix, and per target the totals, the
//! endpoints and the figures of every step. It lives here, beside the verdicts, because it is what
//! the verdicts judge (`verdict::judge`, `verdict::stall`). Only what the bench uses is typed;
//! unknown fields are ignored so the script can add more without breaking old result folders. What
//! only the native generator knows (exact drops and short windows per step, its own schedule lag
//! and CPU time) is optional.

pub use crate::generator::{Latency, LoadGenerator, Retired};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Why a summary could not be read.
#[derive(Debug, thiserror::Error)]
pub enum SummaryError {
    #[error("not a summary of loadtest/k6/orders.js (with per-step figures)")]
    Parse(#[source] serde_json::Error),
    #[error("reading {}", path.display())]
    Read { path: PathBuf, source: std::io::Error },
    #[error("{}", path.display())]
    File { path: PathBuf, source: Box<SummaryError> },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub run_seconds: f64,
    pub planned_seconds: f64,
    pub executor: String,
    pub offered: Offered,
    pub mix: Mix,
    pub passed: bool,
    pub targets: BTreeMap<String, TargetSummary>,
    /// Which generator wrote this (`{"kind": "k6"}` or the native one's figures); absent in
    /// summaries written before there were two.
    #[serde(default)]
    pub load_generator: Option<LoadGenerator>,
}

/// A step cut into short windows by intended send time: requests, slow ones (at or above the p95
/// mark), failures and dropped iterations of each.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Windows {
    pub ms: f64,
    pub count: Vec<u64>,
    pub slow: Vec<u64>,
    pub failed: Vec<u64>,
    pub dropped: Vec<u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Offered {
    pub steps: Vec<OfferedStep>,
    pub mean_rate: f64,
    pub peak_rate: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct OfferedStep {
    pub from_s: f64,
    pub to_s: f64,
    pub rate: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Mix {
    pub name: String,
    pub weights: BTreeMap<String, u32>,
}

/// Request figures of a target, one of its endpoints or one of its steps.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Figures {
    pub count: u64,
    pub achieved_rate: f64,
    pub failures: u64,
    pub latency_ms: Latency,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TargetSummary {
    #[serde(flatten)]
    pub figures: Figures,
    pub iterations: u64,
    pub offered_iterations: f64,
    pub dropped_iterations: u64,
    pub passed: bool,
    #[serde(default)]
    pub endpoints: BTreeMap<String, Figures>,
    #[serde(default)]
    pub steps: Vec<StepSummary>,
    /// Where the runner stopped loading this target (native generator only): it had failed three
    /// steps in a row while another target was still being measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retired: Option<Retired>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepSummary {
    pub step: usize,
    pub from_s: f64,
    pub to_s: f64,
    pub rate: u32,
    pub offered_iterations: f64,
    #[serde(flatten)]
    pub figures: Figures,
    /// Exact dropped iterations of the step (native generator only; k6 counts per target).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dropped_iterations: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub windows: Option<Windows>,
}

impl Summary {
    pub fn parse(text: &str) -> Result<Self, SummaryError> {
        serde_json::from_str(text).map_err(SummaryError::Parse)
    }

    pub fn read(path: &Path) -> Result<Self, SummaryError> {
        let text =
            std::fs::read_to_string(path).map_err(|source| SummaryError::Read { path: path.to_path_buf(), source })?;
        Self::parse(&text).map_err(|error| SummaryError::File { path: path.to_path_buf(), source: Box::new(error) })
    }

    /// Requests that write (inserts and status updates) sent to `target`.
    pub fn write_requests(&self, target: &str) -> u64 {
        self.targets
            .get(target)
            .map(|t| ["insert", "status"].iter().filter_map(|e| t.endpoints.get(*e)).map(|f| f.count).sum())
            .unwrap_or(0)
    }

    pub fn requests(&self, target: &str) -> u64 {
        self.targets.get(target).map_or(0, |t| t.figures.count)
    }
}

/// A real summary of `loadtest/k6/orders.js`: two steps, two targets, the shop mix.
#[cfg(any(test, feature = "fixtures"))]
pub const FIXTURE: &str = include_str!("../tests/fixtures/k6-summary-shop.json");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_real_summary_of_two_steps_and_two_targets_parses() {
        let summary = Summary::parse(FIXTURE).expect("fixture parses");
        assert_eq!(summary.executor, "ramping-arrival-rate");
        assert_eq!(summary.mix.name, "shop");
        assert_eq!(summary.offered.steps.iter().map(|s| s.rate).collect::<Vec<_>>(), [100, 1100]);
        assert_eq!(summary.targets.keys().collect::<Vec<_>>(), ["mongo", "pg"]);
        let pg = &summary.targets["pg"];
        assert_eq!(pg.steps.len(), 2);
        assert_eq!(pg.steps[0].figures.count, 298);
        assert_eq!(pg.steps[0].offered_iterations, 300.0);
        assert_eq!(pg.steps[0].figures.latency_ms.p95, Some(30.933));
        assert_eq!(pg.dropped_iterations, 1786);
        assert!(!pg.passed);
        let step_total: u64 = pg.steps.iter().map(|s| s.figures.count).sum();
        assert_eq!(step_total, pg.figures.count, "every request belongs to one step");
        assert_eq!(summary.write_requests("pg"), pg.endpoints["insert"].count);
    }

    #[test]
    fn a_summary_without_the_fields_the_bench_needs_is_refused_with_a_reason() {
        let error = Summary::parse(r#"{"metrics": {}}"#).expect_err("k6's own summary format");
        assert!(format!("{error:#}").contains("orders.js"), "{error:#}");
    }
}
