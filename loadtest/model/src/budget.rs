//! The budget each database ran under, as `result.json` records it (`cpu.budgets`): its cgroup,
//! CPU quota and memory limit as the kernel reported them, and its engine's cache. The
//! orchestration's `budget::record` reads them and words them.

use serde::{Deserialize, Serialize};

/// The cgroup hierarchy a budget lives in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CgroupVersion {
    V1,
    V2,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DbBudget {
    /// The server's cgroup (`/orders-bench/postgres-55432`); `None` when not on this machine.
    pub cgroup: Option<String>,
    pub cgroup_version: Option<CgroupVersion>,
    /// The CPU quota in cores; `None`: unlimited.
    pub cpus: Option<f64>,
    pub period_ms: Option<f64>,
    /// The memory limit (page cache included); `None`: unlimited.
    pub memory_bytes: Option<u64>,
    /// The cgroup holds this server's processes only, so its counters are the server's.
    pub dedicated: bool,
    /// PostgreSQL `shared_buffers`, the WiredTiger cache's configured maximum.
    pub cache_bytes: Option<u64>,
    pub note: Option<String>,
}

impl DbBudget {
    pub fn not_here(why: &str) -> Self {
        Self { note: Some(why.to_owned()), ..Self::default() }
    }

    pub fn limited(&self) -> bool {
        self.cpus.is_some() || self.memory_bytes.is_some()
    }
}
