//! `orders-bench-model`: what `result.json` is made of, what it is judged from, and the rules.
//! The orchestration fills it, the report renders it, `compare` reads two; it depends on none of
//! them (no workspace crate, no driver, no runtime), so a reader of result.json needs only this.
//!
//! `result` is the file, its rounds and repeats; `verdict`, `explain`, `fairness`, `start`, `cpu`
//! (with `budget`), `generator` and `fleet` the parts of a repeat; `plans` the planner's evidence
//! for F1. `summary` and `live` are what the load generators write and show: `verdict` judges them
//! (pass mark, rate search, stall model), so every verdict is this crate's. `limit`, `capacity`
//! and `mix_verdict` turn figures into words and an answer, reading nothing but the model.
//! `target` names the systems under test; `seconds` writes a `Duration` as seconds; `step_cost`
//! reads a database's cost per request at one rate, `regime` the demo's check that its budget
//! favours neither engine.

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
