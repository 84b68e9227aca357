//! The state a repeat started from, as `result.json` records it (`start`): how the databases were
//! reset, whether they were quiet when the load began and how long the runner waited for that,
//! and per database what a reader needs to tell two repeats' starting points apart: a fingerprint
//! of the data, the bytes on disk, the memory its cgroup held (page cache included) and the CPU it
//! used while the runner watched.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// CPU below this, in cores, over the quiet window counts as idle (an idle mongod 6.0 uses about
/// 0.004 with its once-a-second diagnostics capture, an idle PostgreSQL under 0.001).
pub const QUIET_CORES: f64 = 0.02;

/// The machine's page cache waiting to be written (`Dirty` + `Writeback` in `/proc/meminfo`)
/// above this, in MiB, at the end of a quiet window means something still writes: the kernel
/// would write it back inside the load, on the disk both databases flush their commits to. A
/// restore leaves a whole copied data directory unwritten (mongod's, about 120 MiB at 100,000
/// orders), which the kernel writes back some 30 s later: in the middle of a staircase.
pub const QUIET_UNWRITTEN_MIB: f64 = 16.0;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StartState {
    /// `restored` (from snapshots taken after the first load), `reloaded` (the seeder) or `kept`.
    pub reset: String,
    /// Seconds the reset took.
    pub reset_seconds: Option<f64>,
    /// Seconds spent warming the caches (every page of the orders read once).
    pub warm_seconds: Option<f64>,
    /// Both databases quiet when the load began.
    pub quiet: bool,
    /// Seconds the runner waited for quiet after the checkpoints.
    pub waited_seconds: f64,
    /// Why a database was not quiet (what ran, how much CPU), one line each.
    #[serde(default)]
    pub not_quiet: Vec<String>,
    /// The machine's unwritten page cache after the checkpoints, MiB, which the runner then wrote
    /// to the disk (`sync`), and how long that took.
    #[serde(default)]
    pub unwritten_mib_flushed: Option<f64>,
    #[serde(default)]
    pub flush_seconds: Option<f64>,
    /// The machine's unwritten page cache at the end of the last quiet window, MiB.
    #[serde(default)]
    pub unwritten_mib: Option<f64>,
    /// The CPU budget (cores each, as `stack.sh` took it) lifted from the local stack's servers
    /// while they were restored and warmed, put back before the quiet check; `None`: none lifted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_budget_lifted: Option<String>,
    /// The round's own mix run on every target at once right before the staircase, unjudged:
    /// each database's start transient falls in it (see `LeadIn`); `None`: no lead-in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lead_in: Option<LeadIn>,
    /// Per target (`pg`, `mongo`).
    pub databases: BTreeMap<String, DatabaseStart>,
}

/// The lead-in: the round's mix at a constant rate below the staircase's first step, on every
/// target at once, after the checkpoint and before the load that is judged. A repeat starts right
/// after checkpoints, so PostgreSQL's first change to every page of the indexes writes the whole
/// page to the WAL, and mongod has just been restarted by the restore: without a lead-in those
/// seconds fell in the first step, and which repeats failed it depended on where the staircase
/// began (docs/fairness.md).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LeadIn {
    /// Requests a second, per target.
    pub rate: u32,
    pub seconds: f64,
    /// Per target: what it answered and how fast.
    pub targets: BTreeMap<String, LeadInTarget>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LeadInTarget {
    pub requests: u64,
    pub failures: u64,
    pub p95_ms: Option<f64>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DatabaseStart {
    /// A digest of every order in id order (PostgreSQL: of its JSON text; MongoDB: of its BSON),
    /// the same in every repeat when the data are.
    pub data_fingerprint: Option<String>,
    pub orders: Option<u64>,
    /// The database's files (PostgreSQL `pg_database_size`, MongoDB storage + indexes).
    pub bytes_on_disk: Option<f64>,
    /// The server's cgroup memory (page cache included) after the warm-up.
    pub cgroup_memory_bytes: Option<f64>,
    /// The server's CPU over the last quiet window, cores.
    pub cpu_cores: Option<f64>,
    /// A checkpoint ran (PostgreSQL `CHECKPOINT`, MongoDB `fsync`) before the window.
    pub checkpointed: bool,
    /// What else ran on it during the last look (autovacuum, index builds, other clients).
    #[serde(default)]
    pub busy: Vec<String>,
    /// Why a figure is missing, when one is.
    #[serde(default)]
    pub notes: Vec<String>,
}

impl StartState {
    /// The repeats whose data or database size differ from the first repeat's, in words.
    pub fn differences(starts: &[&StartState]) -> Vec<String> {
        let Some(first) = starts.first() else { return Vec::new() };
        let mut out = Vec::new();
        for (n, start) in starts.iter().enumerate().skip(1) {
            for (name, db) in &start.databases {
                let Some(base) = first.databases.get(name) else { continue };
                if db.data_fingerprint.is_some() && db.data_fingerprint != base.data_fingerprint {
                    out.push(format!("repeat {}: {name}'s data differ from repeat 1's", n + 1));
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn start(fingerprint: &str) -> StartState {
        let db = DatabaseStart { data_fingerprint: Some(fingerprint.into()), ..DatabaseStart::default() };
        StartState { databases: BTreeMap::from([("pg".to_owned(), db)]), ..StartState::default() }
    }

    #[test]
    fn only_repeats_whose_data_differ_from_the_first_are_named() {
        let (a, b) = (start("x"), start("y"));
        assert!(StartState::differences(&[&a, &a]).is_empty());
        assert_eq!(StartState::differences(&[&a, &a, &b]), ["repeat 3: pg's data differ from repeat 1's"]);
    }
}
