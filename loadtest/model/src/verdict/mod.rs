//! The verdicts of a run as `result.json` records them: the pass mark, each step of each target
//! (with the stall of the shared machine the review found in it, if any), the maximum passing rate
//! of a run and its summary over the repeats; and how they are reached from a generator's summary
//! (`judge`: the pass mark and the rate search; `stall`: a stall of the shared machine told from a
//! target's limit). Types and rules sit together so that one crate owns the verdict; the answer
//! over a round's repeats is `mix_verdict`.

mod judge;
pub mod stall;

pub use judge::{drops_by_target, drops_per_step, judge_step, judge_target, max_passing_rate, summarize};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PassMark {
    pub p95_ms: f64,
    /// Failed requests / requests, e.g. 0.01.
    pub max_failed_rate: f64,
    /// Dropped iterations allowed per step (0: none).
    pub max_dropped: u64,
}

impl Default for PassMark {
    fn default() -> Self {
        Self { p95_ms: 50.0, max_failed_rate: 0.01, max_dropped: 0 }
    }
}

/// One step of one target, as the report shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepResult {
    pub step: usize,
    /// Offered rate, requests/s.
    pub rate: u32,
    pub offered: u64,
    /// Requests started in the step.
    pub count: u64,
    pub achieved_rate: f64,
    pub failures: u64,
    pub failed_rate: f64,
    pub p50_ms: Option<f64>,
    pub p95_ms: Option<f64>,
    pub p99_ms: Option<f64>,
    /// Estimated, see the module documentation.
    pub dropped: u64,
    /// False for a step the run did not finish (stopped early once every target had failed).
    pub complete: bool,
    pub passed: bool,
    /// Why it failed: `p95 84.5 ms ≥ 50 ms`, `failed 2.1% ≥ 1%`, `dropped ~120`.
    pub reasons: Vec<String>,
    /// A stall of the shared machine seen in this step (native generator only), and whether it
    /// was discounted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stall: Option<Stall>,
}

impl StepResult {
    /// A stall review left it inconclusive: the rate search steps over it.
    pub fn inconclusive(&self) -> bool {
        self.stall.as_ref().is_some_and(|s| s.outcome == Outcome::Inconclusive)
    }
}

/// The outcome of the rate search of one target in one run.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct MaxRate {
    /// Highest passing rate with every lower step passing; 0 when the first step failed.
    pub rate: u32,
    /// Rate of the first failing step; `None` when no completed step failed (`rate` is then a
    /// lower bound: the target was not saturated).
    pub first_failed_rate: Option<u32>,
}

impl MaxRate {
    pub fn saturated(&self) -> bool {
        self.first_failed_rate.is_some()
    }
}

/// Median and range of the repeats' maximum passing rates.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RateSummary {
    pub median: f64,
    pub min: u32,
    pub max: u32,
    pub runs: Vec<u32>,
    /// True when at least one repeat never failed: the median is then a lower bound.
    pub lower_bound: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The step passed anyway.
    Noted,
    /// Short, and the rest of the step passes: counted as a pass.
    Discounted,
    /// Long, and the rest of the step passes: neither pass nor fail.
    Inconclusive,
    /// The rest of the step fails too: a failure of the target.
    Confirmed,
}

/// What the stall review found in one step of one target.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Stall {
    /// Stalled windows and their length in seconds.
    pub windows: usize,
    pub seconds: f64,
    /// Seconds after the step began at which each stalled window starts.
    pub at_s: Vec<f64>,
    /// Requests, slow requests, failures and drops in those windows.
    pub requests: u64,
    pub slow: u64,
    pub failures: u64,
    pub dropped: u64,
    /// The share of slow requests in the rest of the step, and whether the rest met the pass mark.
    pub slow_share_outside: f64,
    #[serde(default)]
    pub passes_outside: bool,
    pub outcome: Outcome,
    pub note: String,
}

impl Stall {
    /// The stall changed, or could have changed, the step's verdict (worth a line in the report).
    pub fn mattered(&self) -> bool {
        self.passes_outside && self.outcome != Outcome::Noted
    }
}
