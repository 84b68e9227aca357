//! A second estimate of each database's limit that does not hinge on one step: its capacity from
//! its own CPU. At a step it passed, a database under a CPU budget used `cores` for
//! `achieved_rate` requests a second; its capacity is the budget over the CPU one request took.
//! The CPU per request falls as the rate rises (background work is shared by more requests), so
//! the estimate comes from the highest passing step that used at least half the budget; a database
//! without a budget (its machine's cores are shared with everything else) has none. Where the
//! maximum passing rate is well below this capacity, latency (stalls, queueing), not CPU, set the
//! limit.

use super::result::RepeatResult;
use crate::target::TargetInfo;
use serde::{Deserialize, Serialize};

/// The least share of its budget a step must have used to estimate the capacity from it.
const MIN_BUDGET_SHARE: f64 = 0.5;

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Capacity {
    /// Requests a second the budget would serve at this CPU per request.
    pub rate: f64,
    /// The step it was read at.
    pub step_rate: u32,
    /// The database's CPU per request there, microseconds.
    pub cpu_us_per_request: f64,
    pub budget_cores: f64,
}

/// `target`'s capacity in one repeat, when its database ran under a CPU budget.
pub fn of_repeat(repeat: &RepeatResult, target: &TargetInfo) -> Option<Capacity> {
    let steps = &repeat.targets.get(&target.name)?.steps;
    steps
        .iter()
        .filter(|s| s.complete && s.passed && s.achieved_rate > 0.0)
        .filter_map(|s| {
            let cpu = repeat.cpu.steps.iter().find(|c| c.step == s.step)?;
            let db = cpu.databases.get(&target.database)?;
            let (cores, budget) = (db.cores?, db.budget_cores?);
            (cores >= budget * MIN_BUDGET_SHARE && cores > 0.0).then(|| Capacity {
                rate: budget * s.achieved_rate / cores,
                step_rate: s.rate,
                cpu_us_per_request: cores / s.achieved_rate * 1e6,
                budget_cores: budget,
            })
        })
        .max_by_key(|c| c.step_rate)
}
