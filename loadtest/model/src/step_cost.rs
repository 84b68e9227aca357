//! What a database spent per request at one offered rate of a round: CPU, budget used, throttling
//! and context switches, the median over the repeats of the steps that passed. Shared by the
//! budget experiment and the demo's regime check, which hold two regimes' costs side by side.

use crate::result::RoundResult;
use crate::stats::median;

pub use crate::regime::Cost;

/// Every offered rate of `round`, lowest first.
pub fn rates(round: &RoundResult) -> Vec<u32> {
    let mut rates: Vec<u32> =
        round.repeats.iter().flat_map(|r| r.targets.values().flat_map(|t| t.steps.iter().map(|s| s.rate))).collect();
    rates.sort_unstable();
    rates.dedup();
    rates
}

/// The cost of target `name`'s database at offered `rate`, the median over the repeats. A failed
/// step's CPU went partly to requests that timed out: only passed steps give a cost per request.
pub fn at(round: &RoundResult, name: &str, rate: u32) -> Cost {
    let Some(target) = round.targets().into_iter().find(|t| t.name == name) else {
        return Cost::default();
    };
    let (mut per_request, mut cores, mut throttled, mut shares) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let (mut voluntary, mut involuntary) = (Vec::new(), Vec::new());
    for repeat in &round.repeats {
        let Some(step) = repeat.targets.get(name).and_then(|t| t.steps.iter().find(|s| s.rate == rate)) else {
            continue;
        };
        let Some(db) =
            repeat.cpu.steps.iter().find(|c| c.step == step.step).and_then(|c| c.databases.get(&target.database))
        else {
            continue;
        };
        if let Some(used) = db.cores.filter(|c| *c > 0.0 && step.achieved_rate > 0.0 && step.passed) {
            per_request.push(used / step.achieved_rate * 1e6);
            cores.push(used);
            shares.extend(db.budget_cores.filter(|b| *b > 0.0).map(|b| used / b));
            let requests = step.count as f64;
            voluntary.extend(db.voluntary_switches.filter(|v| *v >= 0.0 && requests > 0.0).map(|v| v / requests));
            involuntary.extend(db.involuntary_switches.filter(|v| *v >= 0.0 && requests > 0.0).map(|v| v / requests));
        }
        throttled.extend(db.throttled_share);
    }
    Cost {
        cpu_us_per_request: median(&per_request),
        cores: median(&cores),
        budget_share: median(&shares),
        throttled_share: median(&throttled),
        voluntary_per_request: median(&voluntary),
        involuntary_per_request: median(&involuntary),
    }
}
