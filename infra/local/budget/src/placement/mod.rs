//! Where a process is accounted and what its cgroup has used and may use: the placement from
//! `/proc/<pid>/cgroup`, then CPU time (`cpuacct.usage` on cgroup v1, `usage_usec` of `cpu.stat` on
//! v2), throttling (`nr_periods`, `nr_throttled`, `throttled_time` / `throttled_usec`), the CPU
//! quota and period (`cpu.cfs_quota_us` + `cpu.cfs_period_us`, `cpu.max`), memory in use and its
//! limit (`memory.usage_in_bytes` + `memory.limit_in_bytes`, `memory.current` + `memory.max`; both
//! count the page cache). The budget is the tightest quota and limit on the way up to the
//! hierarchy's root, since a parent's limit binds its children too.
//!
//! These figures describe a database only when its cgroup holds nothing but that server's process
//! tree ([`Placement::holds_only`]): the stack's budgets make such cgroups; a server in a shared
//! cgroup (a login session, the root) is measured from `/proc` instead.

use crate::mounts::Mounts;
use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

/// The cgroup hierarchy a process is accounted in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    V1,
    V2,
}

/// Where a process's CPU and memory are accounted: one directory per controller on v1 (they may
/// be separate hierarchies), one directory on v2.
#[derive(Debug, Clone, PartialEq)]
pub struct Placement {
    pub version: Version,
    /// The cgroup path as `/proc/<pid>/cgroup` gives it (of the cpu controller on v1).
    pub path: String,
    cpu: Option<Located>,
    cpuacct: Option<Located>,
    memory: Option<Located>,
}

/// A cgroup directory and the root of its hierarchy (where the walk up for limits stops).
#[derive(Debug, Clone, PartialEq)]
struct Located {
    dir: PathBuf,
    root: PathBuf,
}

impl Located {
    fn new(mount: &Path, path: &str) -> Self {
        Self { dir: mount.join(path.trim_start_matches('/')), root: mount.to_path_buf() }
    }

    fn read(&self, file: &str) -> Option<String> {
        fs::read_to_string(self.dir.join(file)).ok()
    }

    /// This directory and its parents up to the hierarchy's root.
    fn lineage(&self) -> impl Iterator<Item = &Path> {
        self.dir.ancestors().take_while(|dir| dir.starts_with(&self.root))
    }
}

/// The placement of a process from the text of its `/proc/<pid>/cgroup`: v1 when a v1 hierarchy
/// holds the cpu controller, else v2 (`0::/path`).
pub fn parse_placement(proc_cgroup: &str, mounts: &Mounts) -> Option<Placement> {
    let mut v1: Vec<(Vec<&str>, &str)> = Vec::new();
    let mut v2_path = None;
    for line in proc_cgroup.lines() {
        let mut fields = line.splitn(3, ':');
        let (_, controllers, path) = (fields.next()?, fields.next()?, fields.next()?);
        if controllers.is_empty() {
            v2_path = Some(path);
        } else {
            v1.push((controllers.split(',').collect(), path));
        }
    }
    let v1_path = |controller: &str| v1.iter().find(|(c, _)| c.contains(&controller)).map(|(_, p)| *p);
    let v1_located = |controller: &str| Some(Located::new(mounts.v1_mount(controller)?, v1_path(controller)?));
    if let Some(cpu) = v1_located("cpu") {
        return Some(Placement {
            version: Version::V1,
            path: v1_path("cpu")?.to_owned(),
            cpu: Some(cpu),
            cpuacct: v1_located("cpuacct"),
            memory: v1_located("memory"),
        });
    }
    let (mount, path) = (mounts.v2.as_ref()?, v2_path?);
    let located = Located::new(mount, path);
    Some(Placement {
        version: Version::V2,
        path: path.to_owned(),
        cpu: Some(located.clone()),
        cpuacct: Some(located.clone()),
        memory: Some(located),
    })
}

pub fn placement(pid: u32) -> Option<Placement> {
    parse_placement(&fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?, &Mounts::read())
}

/// One reading of a cgroup's counters and limits; `None` where the kernel does not say.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Reading {
    pub usage_seconds: Option<f64>,
    /// Periods in which the cgroup had work to run under a quota, and those it was throttled in.
    pub periods: Option<u64>,
    pub throttled_periods: Option<u64>,
    pub throttled_seconds: Option<f64>,
    /// The tightest CPU quota, in cores; `None`: unlimited.
    pub quota_cores: Option<f64>,
    /// The period of that quota, microseconds.
    pub period_us: Option<u64>,
    pub memory_bytes: Option<u64>,
    /// The most it has used since it was made (v1 `memory.max_usage_in_bytes`, v2 `memory.peak`).
    pub memory_peak_bytes: Option<u64>,
    /// The tightest memory limit; `None`: unlimited.
    pub memory_limit_bytes: Option<u64>,
}

/// `key value` lines (`cpu.stat`) → the value of `key`.
pub fn stat_value(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|line| line.strip_prefix(key)?.strip_prefix(' ')?.trim().parse().ok())
}

/// A v1 memory limit: "no limit" is the largest page-aligned 64-bit number, so anything beyond
/// 2^62 bytes means none.
pub fn v1_memory_limit(text: &str) -> Option<u64> {
    text.trim().parse::<u64>().ok().filter(|limit| *limit < 1 << 62)
}

/// v2 `cpu.max` ("20000 100000", or "max 100000") → (quota cores or None, period µs).
pub fn v2_cpu_max(text: &str) -> Option<(Option<f64>, u64)> {
    let mut fields = text.split_whitespace();
    let (quota, period) = (fields.next()?, fields.next()?.parse::<u64>().ok()?);
    let cores = if quota == "max" { None } else { Some(quota.parse::<f64>().ok()? / period as f64) };
    Some((cores, period))
}

/// The tightest of the limits found on the way up; `None` when none of them limits.
fn tightest<T: PartialOrd>(limits: impl Iterator<Item = T>) -> Option<T> {
    limits.reduce(|best, next| if next < best { next } else { best })
}

impl Placement {
    pub fn read(&self) -> Reading {
        match self.version {
            Version::V1 => self.read_v1(),
            Version::V2 => self.read_v2(),
        }
    }

    fn read_v1(&self) -> Reading {
        let cpu_stat = self.cpu.as_ref().and_then(|c| c.read("cpu.stat")).unwrap_or_default();
        let quota = self.cpu.as_ref().and_then(|cpu| {
            tightest(cpu.lineage().filter_map(|dir| {
                let read = |file: &str| fs::read_to_string(dir.join(file)).ok()?.trim().parse::<i64>().ok();
                let (quota, period) = (read("cpu.cfs_quota_us")?, u64::try_from(read("cpu.cfs_period_us")?).ok()?);
                (quota > 0 && period > 0).then(|| (quota as f64 / period as f64, period))
            }))
        });
        let memory = self.memory.as_ref();
        Reading {
            usage_seconds: self
                .cpuacct
                .as_ref()
                .and_then(|c| c.read("cpuacct.usage")?.trim().parse::<u64>().ok())
                .map(|ns| ns as f64 / 1e9),
            periods: stat_value(&cpu_stat, "nr_periods"),
            throttled_periods: stat_value(&cpu_stat, "nr_throttled"),
            throttled_seconds: stat_value(&cpu_stat, "throttled_time").map(|ns| ns as f64 / 1e9),
            quota_cores: quota.map(|(cores, _)| cores),
            period_us: quota.map(|(_, period)| period),
            memory_bytes: memory.and_then(|m| m.read("memory.usage_in_bytes")?.trim().parse().ok()),
            memory_peak_bytes: memory.and_then(|m| m.read("memory.max_usage_in_bytes")?.trim().parse().ok()),
            memory_limit_bytes: memory.and_then(|m| {
                tightest(
                    m.lineage().filter_map(|dir| {
                        v1_memory_limit(&fs::read_to_string(dir.join("memory.limit_in_bytes")).ok()?)
                    }),
                )
            }),
        }
    }

    fn read_v2(&self) -> Reading {
        let Some(cgroup) = self.cpu.as_ref() else { return Reading::default() };
        let cpu_stat = cgroup.read("cpu.stat").unwrap_or_default();
        let quota = tightest(cgroup.lineage().filter_map(|dir| {
            let (cores, period) = v2_cpu_max(&fs::read_to_string(dir.join("cpu.max")).ok()?)?;
            Some((cores?, period))
        }));
        Reading {
            usage_seconds: stat_value(&cpu_stat, "usage_usec").map(|us| us as f64 / 1e6),
            periods: stat_value(&cpu_stat, "nr_periods"),
            throttled_periods: stat_value(&cpu_stat, "nr_throttled"),
            throttled_seconds: stat_value(&cpu_stat, "throttled_usec").map(|us| us as f64 / 1e6),
            quota_cores: quota.map(|(cores, _)| cores),
            period_us: quota.map(|(_, period)| period),
            memory_bytes: cgroup.read("memory.current").and_then(|t| t.trim().parse().ok()),
            memory_peak_bytes: cgroup.read("memory.peak").and_then(|t| t.trim().parse().ok()),
            memory_limit_bytes: tightest(
                cgroup
                    .lineage()
                    .filter_map(|dir| fs::read_to_string(dir.join("memory.max")).ok()?.trim().parse::<u64>().ok()),
            ),
        }
    }

    /// The processes in this cgroup (of the CPU accounting controller), when readable.
    pub fn processes(&self) -> Option<BTreeSet<u32>> {
        let text = self.cpuacct.as_ref().or(self.cpu.as_ref())?.read("cgroup.procs")?;
        Some(text.lines().filter_map(|line| line.trim().parse().ok()).collect())
    }

    /// True when every process of the cgroup belongs to `tree` (a server and its descendants):
    /// then the cgroup's counters are the server's own.
    pub fn holds_only(&self, tree: &BTreeSet<u32>) -> bool {
        self.processes().is_some_and(|procs| !procs.is_empty() && procs.is_subset(tree))
    }
}

impl Reading {
    /// `cpus=0.25 period_us=10000 memory=4294967296 cgroup=/orders-bench/postgres-55432`: what
    /// `orders-budget show` prints for `stack.sh` (`none` where unlimited).
    pub fn show(&self, cgroup: &str) -> String {
        let or_none = |value: Option<String>| value.unwrap_or_else(|| "none".into());
        format!(
            "cpus={} period_us={} memory={} cgroup={cgroup}",
            or_none(self.quota_cores.map(three_digits)),
            or_none(self.period_us.map(|p| p.to_string())),
            or_none(self.memory_limit_bytes.map(|m| m.to_string())),
        )
    }
}

/// A number to three significant digits without trailing zeros (0.25, 1, 0.333), as people and
/// `stack.sh env` write a CPU budget.
fn three_digits(value: f64) -> String {
    let digits = if value == 0.0 { 0 } else { (2 - value.abs().log10().floor() as i32).max(0) as usize };
    let text = format!("{value:.digits$}");
    match text.contains('.') {
        true => text.trim_end_matches('0').trim_end_matches('.').to_owned(),
        false => text,
    }
}

#[cfg(test)]
mod tests;
