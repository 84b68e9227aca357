//! How budgets can be set on this machine, in order of preference:
//!
//! - `cgroup-v1`: root, cgroup v1 with the cpu and memory controllers mounted: written directly
//!   under `<mount>/orders-bench/<name>` in the cpu, cpuacct and memory hierarchies;
//! - `cgroup-v2`: root, a cgroup v2 hierarchy with the cpu and memory controllers:
//!   `<mount>/orders-bench/<name>`;
//! - `systemd-user`: an ordinary user whose systemd user manager delegates cpu and memory: the
//!   server starts in `systemd-run --user --scope -p CPUQuota= -p CPUQuotaPeriodSec= -p MemoryMax=`;
//! - `none`: anything else; the servers run without budgets and every tool says why.

use crate::mounts::{Mounts, v2_has};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

#[derive(Debug, Clone, PartialEq)]
pub enum Method {
    CgroupV1(Mounts),
    CgroupV2(PathBuf),
    SystemdUser,
    /// Why not.
    None(String),
}

impl Method {
    /// The method of this machine for the user running this process.
    pub fn detect() -> Self {
        let mounts = Mounts::read();
        if effective_uid() == Some(0) {
            return root(mounts);
        }
        systemd_user(&mounts)
    }

    /// Its name as `stack.sh` prints it.
    pub fn name(&self) -> &'static str {
        match self {
            Self::CgroupV1(_) => "cgroup-v1",
            Self::CgroupV2(_) => "cgroup-v2",
            Self::SystemdUser => "systemd-user",
            Self::None(_) => "none",
        }
    }
}

fn root(mounts: Mounts) -> Method {
    let file_at = |controller: &str, file: &str| mounts.v1_mount(controller).is_some_and(|m| m.join(file).is_file());
    if file_at("cpu", "cpu.cfs_quota_us") && file_at("memory", "memory.limit_in_bytes") {
        return Method::CgroupV1(mounts);
    }
    if let Some(v2) = mounts.v2.as_ref().filter(|v2| v2_has(v2, &["cpu", "memory"])) {
        return Method::CgroupV2(v2.clone());
    }
    Method::None(
        "running as root, but neither cgroup v1 with the cpu and memory controllers nor cgroup v2 with them is mounted"
            .into(),
    )
}

fn systemd_user(mounts: &Mounts) -> Method {
    let found = |tool: &str| {
        std::env::var_os("PATH").is_some_and(|path| std::env::split_paths(&path).any(|d| d.join(tool).is_file()))
    };
    if !found("systemd-run") || !found("systemctl") {
        return Method::None(
            "not root, and systemd-run is not installed (budgets need root or a systemd user session)".into(),
        );
    }
    let group = Command::new("systemctl")
        .args(["--user", "show", "--property=ControlGroup", "--value"])
        .output()
        .ok()
        .filter(|output| output.status.success())
        .map(|output| String::from_utf8_lossy(&output.stdout).trim().to_owned())
        .unwrap_or_default();
    if group.is_empty() {
        let init = fs::read_to_string("/proc/1/comm").map_or("unknown".into(), |c| c.trim().to_owned());
        return Method::None(format!(
            "not root, and there is no systemd user manager to ask (systemctl --user fails; PID 1 is {init})"
        ));
    }
    let delegated =
        mounts.v2.as_ref().is_some_and(|v2| v2_has(&v2.join(group.trim_start_matches('/')), &["cpu", "memory"]));
    if !delegated {
        return Method::None(
            "not root, and the systemd user manager is not delegated the cpu and memory controllers (see systemd's \
             'Delegate=' for user@.service)"
                .into(),
        );
    }
    Method::SystemdUser
}

/// The effective user id, from `/proc/self/status` (`Uid: real effective saved fs`).
fn effective_uid() -> Option<u32> {
    let status = fs::read_to_string(Path::new("/proc/self/status")).ok()?;
    status.lines().find_map(|line| line.strip_prefix("Uid:")?.split_whitespace().nth(1)?.parse().ok())
}
