//! Equal resource budgets for the local stack's database servers, and the kernel's own accounting
//! of a process's cgroup: the one place in the project that knows where the cgroup filesystems
//! are and what their files mean.
//!
//! - [`mounts`]: where the hierarchies are mounted (`/proc/self/mountinfo`).
//! - [`placement`]: where a process is accounted and what its cgroup used and may use (CPU,
//!   throttling, quota, memory); the bench and `orders-budget show` read it.
//! - [`method`]: how budgets can be set here (cgroup v1 or v2 as root, a systemd user scope, or not).
//! - [`apply`]: a budget made, a process tree moved in or out, a command started in it, removed.
//!
//! The binary `orders-budget` is what `infra/local/budget.sh` calls; it uses the standard library
//! only, so the stack builds it in seconds (why not `cgroups-rs`: docs/decisions.md).

pub mod apply;
pub mod method;
pub mod mounts;
pub mod placement;

pub use apply::tree;
pub use method::Method;
pub use mounts::Mounts;
pub use placement::{Placement, Reading, Version, placement};

/// Every budget's cgroup lives under this group (`<mount>/orders-bench/<server>-<port>`).
pub const GROUP: &str = "orders-bench";
/// The quota's period: 10 ms, so throttling is short pauses, not 100 ms stalls.
pub const PERIOD_US: u64 = 10_000;
/// Eight times the default CPU weight for each server's cgroup: a whole server (PostgreSQL's many
/// backends, mongod's threads) then weighs about what its busy processes weighed on their own
/// outside a cgroup, and a busy load path does not starve a database below its quota (a database
/// droplet's cores are not shared with the load generator either); the quota caps it.
pub const SHARES: u64 = 8192; // cgroup v1 cpu.shares (default 1024)
pub const WEIGHT: u64 = 800; // cgroup v2 cpu.weight and systemd CPUWeight= (default 100)

/// What a budget limits: CPU in cores, memory in bytes (page cache included); `None`: unlimited.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Limits {
    pub cpus: Option<f64>,
    pub memory: Option<u64>,
}

impl Limits {
    /// From the command line's words: cores ("0.25") or `none`, bytes or `none`.
    pub fn parse(cpus: &str, memory: &str) -> Result<Self, String> {
        fn number<T: std::str::FromStr>(text: &str, what: &str) -> Result<Option<T>, String> {
            match text {
                "none" => Ok(None),
                _ => text.parse().map(Some).map_err(|_| format!("{what} '{text}' is not a number or none")),
            }
        }
        let cpus: Option<f64> = number(cpus, "CPUS")?;
        if cpus.is_some_and(|c| !(c.is_finite() && c > 0.0)) {
            return Err(format!("CPUS must be above 0, got {cpus:?}"));
        }
        Ok(Self { cpus, memory: number(memory, "MEMORY")? })
    }

    /// The quota in microseconds per [`PERIOD_US`].
    pub fn quota_us(&self) -> Option<u64> {
        self.cpus.map(|cores| (cores * PERIOD_US as f64).round() as u64)
    }
}
