//! The fairness gate's findings as `result.json` records them: each check with both targets'
//! values. `round::fairness` runs the checks.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Check {
    pub name: String,
    pub pg: String,
    pub mongo: String,
    pub ok: bool,
    /// What the values mean, or what to do about a mismatch.
    pub note: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Fairness {
    pub ok: bool,
    pub checks: Vec<Check>,
}

impl Fairness {
    pub fn mismatches(&self) -> Vec<String> {
        self.checks
            .iter()
            .filter(|c| !c.ok)
            .map(|c| format!("{}: pg {}, mongo {} ({})", c.name, c.pg, c.mongo, c.note))
            .collect()
    }
}
