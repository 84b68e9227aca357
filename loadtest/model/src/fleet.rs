//! What each load machine offered, achieved and used in a repeat that several of them loaded
//! together (`round --followers`), as `result.json` records it (`fleet`). The orchestration's
//! `fleet` module fills it from the machines' reports.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// In `result.json` (per repeat, when several machines offered the load): each machine's part.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FleetReport {
    pub machines: Vec<MachineRun>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MachineRun {
    pub host: String,
    /// `0:1/2`.
    pub segment: String,
    pub late_ms: f64,
    pub cores: usize,
    /// Averages over the run.
    pub k6_cores: Option<f64>,
    pub machine_busy_cores: Option<f64>,
    pub steps: Vec<MachineStep>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MachineStep {
    pub step: usize,
    /// This machine's share of the step's rate, requests/s per target.
    pub offered_rate: f64,
    pub k6_cores: Option<f64>,
    pub machine_busy_cores: Option<f64>,
    pub targets: BTreeMap<String, MachineFigures>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MachineFigures {
    pub count: u64,
    pub achieved_rate: f64,
    pub dropped: u64,
    pub p95_ms: Option<f64>,
}
