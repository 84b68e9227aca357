//! Who used the CPU during a run, as `result.json` records it: the measured components, their CPU
//! per run and per step, what limited each target where it first failed (with the figures that
//! verdict rests on), the databases' budgets and what the runner's own sampling cost.
//! The orchestration's `round::cpu` samples, `limit` judges.

use super::budget::DbBudget;
use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub const RUNNER: &str = "orders-bench";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    Database,
    Service,
    LoadGenerator,
    /// `orders-bench` itself: its live readings, the databases' figures, the CPU sampling.
    Runner,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Component {
    pub name: String,
    pub role: Role,
    /// `pg` or `mongo`; none for k6, which drives both.
    pub target: Option<String>,
    pub pid: Option<u32>,
    /// Why it is not measured, when it is not.
    pub note: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuReport {
    pub cores: usize,
    /// Wall seconds the samples span.
    pub seconds: f64,
    pub machine_busy_seconds: Option<f64>,
    /// Busy seconds of the machine not used by any measured component.
    pub other_seconds: Option<f64>,
    pub components: Vec<ComponentCpu>,
    pub steps: Vec<StepCpu>,
    /// Per target, what limited it at its first failing step.
    pub limits: BTreeMap<String, Limit>,
    /// Per database, the budget it ran under (from the kernel).
    #[serde(default)]
    pub budgets: BTreeMap<String, DbBudget>,
    /// What the runner's own sampling of the databases cost.
    #[serde(default)]
    pub probe: Option<ProbeCost>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ComponentCpu {
    pub name: String,
    pub role: Role,
    pub target: Option<String>,
    pub note: Option<String>,
    pub cpu_seconds: Option<f64>,
    pub cores_used: Option<f64>,
    pub per_1k_requests: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepCpu {
    pub step: usize,
    pub rate: u32,
    /// Busy cores of the whole machine, everything on it included: the larger of `/proc/stat`'s
    /// count and the processes' times added up.
    pub machine_busy_cores: Option<f64>,
    /// The measured components' cores added up (can exceed `machine_busy_cores` only when the two
    /// sources disagree; `limit` then uses the larger).
    #[serde(default)]
    pub components_cores: Option<f64>,
    /// Cores used by processes outside the components' process trees: other work on the machine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub others_cores: Option<f64>,
    /// Cores used by each component during the step.
    pub cores: BTreeMap<String, f64>,
    /// The kernel's figures of each database in a cgroup of its own.
    #[serde(default)]
    pub databases: BTreeMap<String, DbStep>,
    /// The load generator's own figures for the step, when its summary has them.
    #[serde(default)]
    pub generator: Option<GeneratorAtStep>,
}

/// A database over one step, from its cgroup's counters.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DbStep {
    pub cores: Option<f64>,
    /// Its CPU quota, cores (`None`: unlimited).
    pub budget_cores: Option<f64>,
    /// Quota periods in which it had work (the kernel counts only those).
    pub periods: Option<f64>,
    /// Share of those periods in which it was throttled, 0..1.
    pub throttled_share: Option<f64>,
    /// Time its threads waited for the next period, summed over its CPUs.
    pub throttled_seconds: Option<f64>,
    pub memory_peak_bytes: Option<f64>,
    pub memory_limit_bytes: Option<f64>,
    /// Context switches of all its threads over the step: waits it chose (a lock, the network, a
    /// condition) and preemptions (a time slice used up, or the quota's throttle).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub voluntary_switches: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub involuntary_switches: Option<f64>,
}

/// The load generator's own report of a step: its CPU and how late it sent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GeneratorAtStep {
    pub kind: String,
    pub cores: Option<f64>,
    pub schedule_lag_p99_ms: Option<f64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LimitKind {
    LoadGenerator,
    Service,
    Database,
    /// All cores busy, and nobody at a limit of its own.
    Machine,
    /// The machine had idle CPU and the database was below its budget: the target waited on
    /// something else (disk flushes, locks).
    NotCpu,
    Unknown,
}

/// Over `repeats`, how often each kind of limit stopped target `target` ("database" → 2); a repeat
/// in which it never failed counts none.
pub fn limit_counts<'a>(
    repeats: impl IntoIterator<Item = &'a CpuReport>,
    target: &str,
) -> BTreeMap<&'static str, usize> {
    let mut counts = BTreeMap::new();
    for report in repeats {
        if let Some(limit) = report.limits.get(target) {
            *counts.entry(limit.kind.words()).or_default() += 1;
        }
    }
    counts
}

impl LimitKind {
    /// How the report and the experiments name it.
    pub fn words(self) -> &'static str {
        match self {
            LimitKind::LoadGenerator => "load generator",
            LimitKind::Service => "service",
            LimitKind::Database => "database",
            LimitKind::Machine => "machine",
            LimitKind::NotCpu => "not CPU",
            LimitKind::Unknown => "unknown",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Limit {
    pub step: usize,
    pub rate: u32,
    pub kind: LimitKind,
    pub text: String,
    /// The figures the verdict rests on.
    #[serde(default)]
    pub evidence: Option<Evidence>,
}

/// The figures of one target at one step that decide its limit.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Evidence {
    pub machine_cores: usize,
    pub machine_busy_cores: Option<f64>,
    pub components_cores: Option<f64>,
    /// The larger of the two above.
    pub busy_cores: Option<f64>,
    pub database: Option<String>,
    pub database_cores: Option<f64>,
    pub budget_cores: Option<f64>,
    pub throttled_share: Option<f64>,
    pub throttled_seconds: Option<f64>,
    pub service: Option<String>,
    pub service_cores: Option<f64>,
    pub generator: Option<String>,
    pub generator_cores: Option<f64>,
    pub generator_lag_p99_ms: Option<f64>,
    /// The other target's service and database and the runner, added up.
    #[serde(default)]
    pub rest_cores: Option<f64>,
    /// Busy cores no measured component accounts for: other processes on the machine.
    #[serde(default)]
    pub unmeasured_cores: Option<f64>,
}

/// What the runner's sampling cost, for the report.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ProbeCost {
    pub samples: u64,
    /// Seconds between samples (about one step).
    pub interval_seconds: f64,
    /// What the runner sent each database itself, by `<target>_<unit>` (`pg_queries`: one
    /// statement per sample; `mongo_commands`: two per sample).
    #[serde(flatten)]
    pub sent: IndexMap<String, u64>,
    /// `/diagnostics` requests it had to send to a service instead, per service.
    pub service_diagnostics: u64,
    pub notes: Vec<String>,
}
