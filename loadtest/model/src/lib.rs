//! `orders-bench-model`: what `result.json` is made of, and nothing else. A round's orchestration
//! fills it, the report renders it, `compare` reads two of them; it depends on none of them (no
//! workspace crate at all, no driver, no runtime), so a reader of result.json needs only this.
//!
//! `result` is the file and its rounds and repeats; `verdict`, `explain`, `fairness`, `start`,
//! `cpu` (with the databases' `budget`), `generator` and `fleet` the parts of a repeat; `plans`
//! the planner's evidence for finding F1. `summary` is what both load generators write and `live`
//! what they show while running: `verdict` judges them (the pass mark, the rate search, the stall
//! model), so every verdict is one crate's. `limit`, `capacity` and `mix_verdict` are the rules that turn
//! figures into words and an answer (what limited a target where it first failed, a second
//! estimate from the databases' CPU, a winner only beyond the spread): they read nothing but the
//! model. `target` names the systems under test; `seconds` writes a `Duration` as the files' seconds;
//! `step_cost` reads a database's cost per request at one rate, and `regime` holds the demo's check
//! that its budget favours neither engine.

pub mod budget;
pub mod capacity;
pub mod cpu;
pub mod explain;
pub mod fairness;
pub mod fleet;
pub mod generator;
pub mod limit;
pub mod live;
pub mod mix_verdict;
pub mod plans;
pub mod regime;
pub mod result;
pub mod seconds;
pub mod start;
pub mod stats;
pub mod step_cost;
pub mod summary;
pub mod target;
pub mod verdict;
