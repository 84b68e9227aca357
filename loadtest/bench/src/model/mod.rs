//! The result model: what a round records in `result.json` and what `report` reads back. A leaf:
//! it imports neither `round` (which fills it) nor `report` (which renders it), only the figures
//! of other leaves it embeds (the load generator's latency, the fleet's machines, the budgets).
//! `result` is the file and its rounds and repeats; `verdict`, `explain`, `fairness` and `cpu`
//! the parts of a repeat.

pub mod capacity;
pub mod cpu;
pub mod explain;
pub mod fairness;
pub mod mix_verdict;
pub mod plans;
pub mod result;
pub mod start;
pub mod verdict;
