//! The fairness gate's findings as `result.json` records them: each check with every target's
//! value. `round::fairness` runs the checks.

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Check {
    pub name: String,
    /// Each target's value, by target name (`"pg": "waits for disk (...)"`), in the round's order.
    #[serde(flatten)]
    pub values: IndexMap<String, String>,
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
            .map(|c| {
                let values: Vec<String> = c.values.iter().map(|(target, value)| format!("{target} {value}")).collect();
                format!("{}: {} ({})", c.name, values.join(", "), c.note)
            })
            .collect()
    }
}
