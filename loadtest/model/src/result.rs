//! `result.json`: what a round folder records, and what `orders-bench report` reads back. The
//! schema is documented in loadtest/RESULTS.md; `SCHEMA` names its version, bumped on any change
//! that an older reader would misread. A round folder holds one round; a demo or report folder
//! holds every round it aggregates.

use super::cpu::CpuReport;
use super::explain::Explain;
use super::fairness::Fairness;
use super::generator::{Latency, LoadGenerator, Retired};
use super::target::TargetInfo;
use super::verdict::{MaxRate, PassMark, RateSummary, StepResult};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub const SCHEMA: &str = "orders-bench/result/2";
/// Older schemas this version still reads (their new fields are empty).
const READS: [&str; 2] = [SCHEMA, "orders-bench/result/1"];
pub const FILE: &str = "result.json";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResultFile {
    pub schema: String,
    pub rounds: Vec<RoundResult>,
}

/// The staircase of offered rates, per target: from `start_rate` up by `step`, or, with a
/// `factor`, each rate that much above the one before (rounded to two significant digits), which
/// keeps the same relative resolution for a target that gives up at 500 req/s and one that gives
/// up at 5,000; never above `max_rate`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RatePlan {
    pub start_rate: u32,
    pub step: u32,
    pub max_rate: u32,
    /// How long each rate is held (seconds in the file).
    #[serde(with = "crate::seconds")]
    pub step_seconds: Duration,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub factor: Option<f64>,
}

/// `x` rounded to two significant digits: 1234 → 1200, 567 → 570.
pub fn two_digits(x: f64) -> u32 {
    if x < 100.0 {
        return x.round() as u32;
    }
    let unit = 10f64.powi(x.log10().floor() as i32 - 1);
    ((x / unit).round() * unit) as u32
}

impl RatePlan {
    pub fn rates(&self) -> Vec<u32> {
        if let Some(factor) = self.factor.filter(|f| *f > 1.0) {
            let mut rates = vec![self.start_rate];
            let mut rate = self.start_rate;
            loop {
                rate = two_digits(f64::from(rate) * factor).max(rate + 1);
                if rate > self.max_rate {
                    return rates;
                }
                rates.push(rate);
            }
        }
        let mut rates = Vec::new();
        let mut rate = self.start_rate;
        while rate <= self.max_rate && self.step > 0 {
            rates.push(rate);
            rate += self.step;
        }
        if self.step == 0 {
            rates.push(self.start_rate);
        }
        rates
    }

    /// The same staircase started `steps` rates lower (same growth, same top): for the repeats
    /// after one in which a target failed the first rate.
    pub fn lowered(&self, steps: u32) -> RatePlan {
        let start_rate = match self.factor.filter(|f| *f > 1.0) {
            Some(factor) => two_digits(f64::from(self.start_rate) / factor.powi(steps as i32)),
            None => self.start_rate.saturating_sub(self.step.saturating_mul(steps)),
        };
        RatePlan { start_rate: start_rate.max(1), ..*self }
    }
}

/// The data set both databases held (from the seeder's manifest).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DataSet {
    pub seed: u64,
    pub orders: u64,
    pub customers: u64,
    pub products: u64,
    pub items_per_order: u32,
    pub note_bytes: u32,
    pub approx_doc_bytes: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RoundResult {
    pub name: String,
    pub mix: String,
    pub mix_weights: BTreeMap<String, u32>,
    pub started_at: String,
    pub finished_at: String,
    pub plan: RatePlan,
    pub pass_mark: PassMark,
    pub data_set: Option<DataSet>,
    pub machine: Machine,
    /// The commit of the checkout that ran it (`80c77f1`, `+` when it had uncommitted changes);
    /// absent in files written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// The systems under test, in the order the report shows them (empty in files written before
    /// they were recorded: `targets()` then gives the two original ones).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub targets: Vec<TargetInfo>,
    /// True when a fairness check failed and `--allow-mismatch` let the round run anyway.
    pub fairness_overridden: bool,
    /// The databases' resource budgets in words ("0.25 CPU and 4.0 GiB each (cgroup v1, ...)",
    /// "no budgets (...)"), from the first repeat's kernel readings.
    #[serde(default)]
    pub budget: Option<String>,
    /// What the planner did with the product search on a copy of the data before any load.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan_probe: Option<crate::plans::PlanProbe>,
    /// The demo's check of its budget (the same in each of its rounds): what the budget changed in
    /// each database's CPU per request at a low rate, against a quota of every core.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub regime: Option<crate::regime::RegimeCheck>,
    pub repeats: Vec<RepeatResult>,
    /// Per target (`pg`, `mongo`): median and range of the repeats' maximum passing rates.
    pub max_rate: BTreeMap<String, RateSummary>,
    /// Folder of this round's files, relative to the folder holding this result.json.
    #[serde(default)]
    pub dir: String,
}

impl RoundResult {
    /// The round's targets in report order: as recorded, else (older files) the original two, then
    /// any other name the figures carry.
    pub fn targets(&self) -> Vec<TargetInfo> {
        if !self.targets.is_empty() {
            return self.targets.clone();
        }
        let named: std::collections::BTreeSet<&String> =
            self.max_rate.keys().chain(self.repeats.iter().flat_map(|r| r.targets.keys())).collect();
        let mut targets: Vec<TargetInfo> = TargetInfo::legacy();
        targets.extend(
            named
                .into_iter()
                .filter(|n| !targets.iter().any(|t| &t.name == *n))
                .map(|n| TargetInfo::unnamed(n))
                .collect::<Vec<_>>(),
        );
        targets
    }

    /// The label of target `name` (its name when the round does not describe it).
    pub fn label(&self, name: &str) -> String {
        self.targets().into_iter().find(|t| t.name == name).map_or_else(|| name.to_owned(), |t| t.label)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Machine {
    pub cores: usize,
    pub os: String,
}

impl Machine {
    pub fn this() -> Self {
        let os = std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .map(|r| format!("Linux {}", r.trim()))
            .unwrap_or_else(|_| std::env::consts::OS.to_owned());
        Self { cores: std::thread::available_parallelism().map_or(1, usize::from), os }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RepeatResult {
    pub index: u32,
    pub reseeded: bool,
    pub started_at: String,
    pub fairness: Fairness,
    /// The state the repeat started from: how the data were reset, whether the databases were
    /// quiet, the data's fingerprint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start: Option<crate::start::StartState>,
    /// Seconds the load ran; shorter than planned when stopped early.
    pub run_seconds: f64,
    pub stopped_early: bool,
    pub targets: BTreeMap<String, TargetResult>,
    pub explain: Explain,
    pub cpu: CpuReport,
    /// Raw files of this repeat, relative to the round folder.
    pub files: BTreeMap<String, String>,
    /// Anything that makes this repeat's figures less complete than usual.
    #[serde(default)]
    pub notes: Vec<String>,
    /// The load generator (`kind` native or k6) and, for the native one, its schedule lag and CPU
    /// time per step.
    #[serde(default)]
    pub load_generator: Option<LoadGenerator>,
    /// With several load machines (`round --followers`): what each offered, achieved and used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fleet: Option<crate::fleet::FleetReport>,
    /// The staircase this repeat climbed (`None` in files from before a round could lower it:
    /// the round's `plan`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<RatePlan>,
    /// Set by the round when a target failed this repeat's first rate and enough repeats on a
    /// staircase that started lower measured every target: why this one is left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub superseded: Option<String>,
}

/// The most cores other processes (anything but the databases, the services, the load generator
/// and the runner) may take in a step the verdict judges before the repeat is left out: a build
/// or a test suite beside the run takes one core or more, a quiet machine a few hundredths.
pub const OTHERS_MAX_CORES: f64 = 0.25;

impl RepeatResult {
    /// Whether the maximum rates and the verdict count this repeat.
    pub fn counted(&self) -> bool {
        self.left_out().is_none()
    }

    /// Why the maximum rates and the verdict leave this repeat out, if they do.
    pub fn left_out(&self) -> Option<String> {
        if let Some(why) = &self.superseded {
            return Some(why.clone());
        }
        if self.spoiled_by_stalls() {
            return Some("stalls of the shared machine stopped it before either database failed".to_owned());
        }
        let (rate, cores) = self.disturbed()?;
        Some(format!(
            "other processes took {cores:.2} cores of the machine at {rate} req/s (more than {OTHERS_MAX_CORES})"
        ))
    }

    /// The targets that failed the first rate of this repeat's staircase: the repeat tells only
    /// that their limit is below it, wherever it is (the probe placed the staircase too high for
    /// them, or the machine was slower than during the probe).
    pub fn failed_first_rate(&self) -> Vec<&str> {
        let failed = |t: &TargetResult| t.max_rate.rate == 0 && t.max_rate.saturated();
        self.targets.iter().filter(|(_, t)| failed(t)).map(|(name, _)| name.as_str()).collect()
    }

    /// The step the verdict judges in which other processes took the most cores, as its rate and
    /// those cores, when that is more than `OTHERS_MAX_CORES`. The judged steps run up to the one
    /// where the last target failed (all of them when a target never failed). Only a repeat whose
    /// every component was measured can tell: a database on another machine or in a network
    /// namespace of its own (a replica set, a droplet) would count as another process.
    pub fn disturbed(&self) -> Option<(u32, f64)> {
        if self.cpu.components.is_empty() || self.cpu.components.iter().any(|c| c.cpu_seconds.is_none()) {
            return None;
        }
        let failed: Option<Vec<u32>> = self.targets.values().map(|t| t.max_rate.first_failed_rate).collect();
        let last_judged = failed.and_then(|rates| rates.into_iter().max()).unwrap_or(u32::MAX);
        self.cpu
            .steps
            .iter()
            .filter(|s| s.rate <= last_judged)
            .filter_map(|s| Some((s.rate, s.others_cores?)))
            .filter(|(_, others)| *others > OTHERS_MAX_CORES)
            .max_by(|a, b| a.1.total_cmp(&b.1))
    }

    /// The run stopped early although no target failed a step the verdict counts: the steps that
    /// stopped it were stalls of the shared machine (every target slow at once), so the repeat
    /// measured neither database's limit.
    pub fn spoiled_by_stalls(&self) -> bool {
        self.stopped_early
            && !self.targets.is_empty()
            && self.targets.values().all(|t| t.max_rate.first_failed_rate.is_none() && t.retired.is_none())
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TargetResult {
    pub steps: Vec<StepResult>,
    pub max_rate: MaxRate,
    pub requests: u64,
    pub failures: u64,
    /// The generator's own count for the whole run.
    pub dropped_iterations: u64,
    pub latency_ms: Latency,
    /// Requests per endpoint (read, product, insert, ...).
    pub endpoints: BTreeMap<String, u64>,
    /// Where the runner stopped loading this target because it had failed three steps in a row
    /// while the other was still being measured (native generator); its later steps did not run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retired: Option<Retired>,
}

/// Why a `result.json` could not be written or read.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    #[error("writing {path}: {source}")]
    Write { path: PathBuf, source: std::io::Error },
    #[error("reading {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("{path} is not a result.json: {source}")]
    Parse { path: PathBuf, source: serde_json::Error },
    #[error("{path}: schema {schema} (this orders-bench reads {SCHEMA})")]
    Schema { path: PathBuf, schema: String },
}

pub fn write(dir: &Path, rounds: Vec<RoundResult>) -> Result<(), FileError> {
    let file = ResultFile { schema: SCHEMA.into(), rounds };
    let path = dir.join(FILE);
    // A tree of plain structs and maps with string keys: it always serializes.
    let text = serde_json::to_string_pretty(&file).unwrap_or_default();
    std::fs::write(&path, text + "\n").map_err(|source| FileError::Write { path, source })
}

/// The rounds of `dir/result.json` (or of `dir` itself when it is a file), each with `dir`
/// resolved against the folder it was read from.
pub fn read(path: &Path) -> Result<(PathBuf, Vec<RoundResult>), FileError> {
    let file = if path.is_dir() { path.join(FILE) } else { path.to_path_buf() };
    let base = file.parent().map(Path::to_path_buf).unwrap_or_default();
    let text = std::fs::read_to_string(&file).map_err(|source| FileError::Read { path: file.clone(), source })?;
    let parsed: ResultFile =
        serde_json::from_str(&text).map_err(|source| FileError::Parse { path: file.clone(), source })?;
    if !READS.contains(&parsed.schema.as_str()) {
        return Err(FileError::Schema { path: file, schema: parsed.schema });
    }
    Ok((base, parsed.rounds))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::{CpuReport, StepCpu};
    use crate::verdict::MaxRate;

    /// A repeat whose targets first failed at `failed` (`None`: never), with the machine, the
    /// measured components and other processes busy as in `steps` (rate, machine cores,
    /// components' cores; the others are the difference).
    fn repeat(failed: [Option<u32>; 2], steps: &[(u32, f64, f64)]) -> RepeatResult {
        let target = |first_failed_rate| TargetResult {
            steps: Vec::new(),
            max_rate: MaxRate { rate: 100, first_failed_rate },
            requests: 0,
            failures: 0,
            dropped_iterations: 0,
            latency_ms: Default::default(),
            endpoints: BTreeMap::new(),
            retired: None,
        };
        let steps = steps
            .iter()
            .enumerate()
            .map(|(step, (rate, machine, parts))| StepCpu {
                step,
                rate: *rate,
                machine_busy_cores: Some(*machine),
                components_cores: Some(*parts),
                others_cores: Some(machine - parts),
                cores: BTreeMap::new(),
                databases: BTreeMap::new(),
                generator: None,
            })
            .collect();
        RepeatResult {
            index: 2,
            reseeded: true,
            started_at: String::new(),
            fairness: crate::fairness::Fairness { ok: true, checks: Vec::new() },
            start: None,
            run_seconds: 30.0,
            stopped_early: false,
            targets: BTreeMap::from([("a".into(), target(failed[0])), ("b".into(), target(failed[1]))]),
            explain: Default::default(),
            cpu: CpuReport { steps, components: vec![component(Some(1.0))], ..CpuReport::default() },
            files: BTreeMap::new(),
            notes: Vec::new(),
            load_generator: None,
            fleet: None,
            plan: None,
            superseded: None,
        }
    }

    fn component(cpu_seconds: Option<f64>) -> crate::cpu::ComponentCpu {
        crate::cpu::ComponentCpu {
            name: "postgres".into(),
            role: crate::cpu::Role::Database,
            target: Some("a".into()),
            note: None,
            cpu_seconds,
            cores_used: None,
            per_1k_requests: None,
        }
    }

    #[test]
    fn a_repeat_in_which_other_processes_took_a_share_of_the_machine_is_left_out() {
        let quiet = repeat([Some(300), Some(400)], &[(200, 0.50, 0.48), (300, 0.70, 0.69), (400, 0.9, 0.9)]);
        assert!(quiet.counted(), "{:?}", quiet.left_out());
        let busy = repeat([Some(300), Some(400)], &[(200, 0.50, 0.48), (300, 1.70, 0.69), (400, 0.9, 0.9)]);
        assert_eq!(busy.disturbed(), Some((300, 1.01)));
        assert!(!busy.counted());
        assert!(busy.left_out().is_some_and(|why| why.contains("1.01 cores") && why.contains("300 req/s")));
        // Only the steps the verdict judges count: after the last target failed, nothing does.
        let after = repeat([Some(300), Some(300)], &[(200, 0.5, 0.5), (300, 0.7, 0.7), (400, 1.9, 0.5)]);
        assert!(after.counted(), "{:?}", after.left_out());
        // ... unless a target never failed: then every step was judged.
        let never = repeat([Some(300), None], &[(200, 0.5, 0.5), (300, 0.7, 0.7), (400, 1.9, 0.5)]);
        assert_eq!(never.disturbed().map(|(rate, _)| rate), Some(400));
        // A component not measured here (a database in a namespace of its own) would count as
        // another process: nothing is judged.
        let mut elsewhere = busy.clone();
        elsewhere.cpu.components.push(component(None));
        assert!(elsewhere.counted());
    }

    #[test]
    fn version_1_files_still_read_and_unknown_versions_do_not() {
        let dir = std::env::temp_dir().join(format!("orders-bench-schema-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        for (schema, readable) in [("orders-bench/result/1", true), (SCHEMA, true), ("orders-bench/result/9", false)] {
            std::fs::write(dir.join(FILE), format!(r#"{{"schema": "{schema}", "rounds": []}}"#)).expect("write");
            assert_eq!(read(&dir).is_ok(), readable, "{schema}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_plan_lists_every_rate_up_to_the_maximum() {
        let plan =
            RatePlan { start_rate: 100, step: 150, max_rate: 500, step_seconds: Duration::from_secs(5), factor: None };
        assert_eq!(plan.rates(), [100, 250, 400]);
        let json = r#"{"start_rate":100,"step":150,"max_rate":500,"step_seconds":5.0}"#;
        assert_eq!(serde_json::to_string(&plan).expect("JSON"), json, "the step's length in seconds");
        assert_eq!(serde_json::from_str::<RatePlan>(json).expect("plan"), plan);
        assert_eq!(RatePlan { step: 0, ..plan }.rates(), [100]);
    }

    #[test]
    fn a_factor_makes_every_step_that_much_higher_in_round_numbers() {
        let plan = RatePlan {
            start_rate: 500,
            step: 1,
            max_rate: 3000,
            step_seconds: Duration::from_secs(4),
            factor: Some(1.2),
        };
        assert_eq!(plan.rates(), [500, 600, 720, 860, 1000, 1200, 1400, 1700, 2000, 2400, 2900]);
        let slow = RatePlan { start_rate: 10, max_rate: 14, factor: Some(1.01), ..plan };
        assert_eq!(slow.rates(), [10, 11, 12, 13, 14], "at least one more each step");
    }
}
