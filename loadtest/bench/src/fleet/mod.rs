//! Several load machines as one round. The leading machine runs `orders-bench round --followers
//! URL,...`; every follower runs `orders-bench agent`. For every repeat the leader sends each agent
//! the k6 settings, the data set manifest, the agent's k6 execution segment and a common start
//! time; every k6 (the leader's too) starts paused, initialises, and is resumed at that moment, so
//! together they offer the round's rate once. The leader collects each agent's summary, dropped
//! iterations per step and CPU, and merges them with its own (`k6::merge`) into the one summary the
//! repeat is judged on; `result.json` keeps what each machine offered and achieved and how busy it
//! was (`FleetReport`), so a saturated load machine is visible.
//!
//! `agent` is the follower's HTTP server, `segment_run` one k6 run of a segment on this machine
//! (sampling its CPU and drops), `leader` the client side inside `round`.

pub mod agent;
pub mod leader;
pub mod segment_run;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

/// k6 execution segment `index` of `count` equal ones (`0:1/2`, `1/2:1` for two machines).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Segment {
    pub index: usize,
    pub count: usize,
}

fn fraction(i: usize, n: usize) -> String {
    match i {
        0 => "0".into(),
        _ if i == n => "1".into(),
        _ => format!("{i}/{n}"),
    }
}

impl Segment {
    pub fn range(&self) -> String {
        format!("{}:{}", fraction(self.index, self.count), fraction(self.index + 1, self.count))
    }

    pub fn sequence(&self) -> String {
        (0..=self.count).map(|i| fraction(i, self.count)).collect::<Vec<_>>().join(",")
    }

    /// The flags of `k6 run` that give this machine its part of the test.
    pub fn k6_args(&self) -> Vec<String> {
        vec!["--execution-segment".into(), self.range(), "--execution-segment-sequence".into(), self.sequence()]
    }

    /// The share of every rate this segment offers.
    pub fn share(&self) -> f64 {
        1.0 / self.count as f64
    }

    pub fn is_valid(&self) -> bool {
        self.count >= 1 && self.count <= 64 && self.index < self.count
    }
}

/// The environment variables of `loadtest/k6/orders.js` an agent accepts from a leader; anything
/// else (`LD_PRELOAD`, k6's own `K6_*` options) is refused.
pub const SCRIPT_VARIABLES: [&str; 14] = [
    "TARGETS",
    "MIX",
    "RATE",
    "DURATION",
    "START_RATE",
    "STEP",
    "STEP_DURATION",
    "MAX_RATE",
    "P95_MS",
    "MAX_FAILED_RATE",
    "PRE_VUS",
    "MAX_VUS",
    "VU_BUDGET_MS",
    "REQUEST_TIMEOUT",
];

/// What the leader asks an agent to run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRequest {
    /// Unique per repeat, e.g. `shop-2-20261130T101500Z`.
    pub id: String,
    pub segment: Segment,
    /// Settings of the k6 script (names from `SCRIPT_VARIABLES`).
    pub env: Vec<(String, String)>,
    /// The data set manifest the leader's run reads, so both draw ids from the same ranges.
    pub manifest: Value,
    /// When every machine resumes its k6 (milliseconds since the Unix epoch).
    pub start_at_ms: u64,
}

/// CPU of one load machine during its run: its k6 and the whole machine (seconds and cores).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LoadCpu {
    pub cores: usize,
    pub wall_seconds: f64,
    pub k6_seconds: Option<f64>,
    pub machine_busy_seconds: Option<f64>,
    /// Per step of the staircase: cores used by k6 and by the whole machine.
    pub steps: Vec<StepLoadCpu>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct StepLoadCpu {
    pub step: usize,
    pub k6_cores: Option<f64>,
    pub machine_busy_cores: Option<f64>,
}

/// What an agent reports once its run is over.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunReport {
    pub host: String,
    pub segment: Segment,
    /// How long after the common start time this machine resumed its k6, ms.
    pub late_ms: f64,
    pub exit_code: Option<i32>,
    /// The k6 summary of this segment (the script's JSON, with quantile grids).
    pub summary: Value,
    /// Dropped iterations per target and step, from k6's running count.
    pub drops: BTreeMap<String, Vec<u64>>,
    pub cpu: LoadCpu,
    pub stopped_early: bool,
    /// The end of k6's output, for an error message.
    pub log_tail: String,
}

/// An agent's answer about a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum RunState {
    Running,
    Finished { report: Box<RunReport> },
    Failed { error: String },
}

pub use orders_bench_model::fleet::{FleetReport, MachineFigures, MachineRun, MachineStep};

/// The part of one machine, from its report.
pub fn machine_run(report: &RunReport) -> MachineRun {
    let share = report.segment.share();
    let wall = report.cpu.wall_seconds.max(1e-9);
    let summary = orders_loadgen::summary::Summary::parse(&report.summary.to_string()).ok();
    let offered = summary.as_ref().map(|s| s.offered.steps.clone()).unwrap_or_default();
    let steps = offered
        .iter()
        .enumerate()
        .map(|(i, step)| {
            let cpu = report.cpu.steps.iter().find(|s| s.step == i).copied().unwrap_or_default();
            let targets = summary
                .iter()
                .flat_map(|s| s.targets.iter())
                .filter_map(|(name, target)| {
                    let figures = &target.steps.get(i)?.figures;
                    let dropped = report.drops.get(name).and_then(|d| d.get(i)).copied().unwrap_or(0);
                    Some((
                        name.clone(),
                        MachineFigures {
                            count: figures.count,
                            achieved_rate: figures.achieved_rate,
                            dropped,
                            p95_ms: figures.latency_ms.p95,
                        },
                    ))
                })
                .collect();
            MachineStep {
                step: i,
                offered_rate: f64::from(step.rate) * share,
                k6_cores: cpu.k6_cores,
                machine_busy_cores: cpu.machine_busy_cores,
                targets,
            }
        })
        .collect();
    MachineRun {
        host: report.host.clone(),
        segment: report.segment.range(),
        late_ms: report.late_ms,
        cores: report.cpu.cores,
        k6_cores: report.cpu.k6_seconds.map(|s| s / wall),
        machine_busy_cores: report.cpu.machine_busy_seconds.map(|s| s / wall),
        steps,
    }
}

/// This machine's name (a droplet's is its droplet name).
pub fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .unwrap_or_else(|_| "this machine".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_split_the_test_into_equal_parts_k6_understands() {
        let second = Segment { index: 1, count: 2 };
        assert_eq!(second.range(), "1/2:1");
        assert_eq!(second.sequence(), "0,1/2,1");
        assert_eq!(Segment { index: 0, count: 3 }.range(), "0:1/3");
        assert_eq!(Segment { index: 1, count: 3 }.range(), "1/3:2/3");
        assert_eq!(
            Segment { index: 0, count: 1 }.k6_args(),
            ["--execution-segment", "0:1", "--execution-segment-sequence", "0,1"]
        );
        assert!(!Segment { index: 2, count: 2 }.is_valid());
        assert!((Segment { index: 0, count: 4 }.share() - 0.25).abs() < 1e-12);
    }
}
