//! The systems under test as `result.json` records them: a round lists its targets (`targets`), in
//! the order every report shows them, with what a reader needs to name them: the key of their
//! figures everywhere else in the file (`pg`), the database's name in prose (`PostgreSQL`), and the
//! process names the CPU figures use for its service and its database server. Files written
//! before rounds listed their targets read as the first two backends (`TargetInfo::legacy`).

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TargetInfo {
    /// The key of its figures in `result.json`, the manifest and the load generators (`pg`).
    pub name: String,
    /// The database's name in prose and chart legends (`PostgreSQL`).
    pub label: String,
    /// Its service's process name (`orders-pg`).
    pub service: String,
    /// Its database server's process name (`postgres`), as the CPU figures and budgets name it:
    /// the key of that server's figures, so unique within a round (a second server of one engine
    /// gets a name of its own, `postgres (hybrid)`).
    pub database: String,
}

impl TargetInfo {
    pub fn new(name: &str, label: &str, service: &str, database: &str) -> Self {
        Self { name: name.into(), label: label.into(), service: service.into(), database: database.into() }
    }

    /// The targets of every round written before `targets` was recorded.
    pub fn legacy() -> Vec<TargetInfo> {
        vec![
            TargetInfo::new("pg", "PostgreSQL", "orders-pg", "postgres"),
            TargetInfo::new("mongo", "MongoDB", "orders-mongo", "mongod"),
        ]
    }

    /// A target a file names without describing it: known by its name only.
    pub fn unnamed(name: &str) -> Self {
        TargetInfo::new(name, name, name, name)
    }
}
