//! A budget made and unmade: its cgroups created with the quota, weight and memory limit
//! ([`set`]), a process or a whole process tree moved into it ([`move_process`], [`move_tree`]) or
//! back out of it ([`release`]), a command started inside it ([`exec_in`]), its cgroups deleted once
//! empty ([`remove`]). Root methods write the cgroup files; a systemd user scope is asked of
//! systemd (`systemctl --user set-property`, `systemd-run --user --scope`).

use crate::method::Method;
use crate::{GROUP, Limits, PERIOD_US, SHARES, WEIGHT};
use std::collections::BTreeMap;
use std::fs;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// The systemd scope of budget `name`.
pub fn unit(name: &str) -> String {
    format!("orders-bench-{name}.scope")
}

/// The cgroup directories of budget `name`: on v1 one per hierarchy of the cpu, cpuacct and memory
/// controllers (each once, since several may share one), on v2 one; none for other methods.
pub fn dirs(method: &Method, name: &str) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = match method {
        Method::CgroupV1(mounts) => ["cpu", "cpuacct", "memory"]
            .iter()
            .filter_map(|controller| Some(mounts.v1_mount(controller)?.join(GROUP).join(name)))
            .collect(),
        Method::CgroupV2(v2) => vec![v2.join(GROUP).join(name)],
        _ => Vec::new(),
    };
    dirs.sort();
    dirs.dedup();
    dirs
}

fn write(file: &Path, value: impl std::fmt::Display) -> Result<(), String> {
    fs::write(file, format!("{value}\n"))
        .map_err(|error| format!("could not write '{value}' to {}: {error}", file.display()))
}

/// `mkdir -p`, once more after a moment: a budget being removed at the same moment may take the
/// shared parent away once.
fn make_dir(dir: &Path) -> Result<(), String> {
    fs::create_dir_all(dir)
        .or_else(|_| {
            std::thread::sleep(Duration::from_millis(100));
            fs::create_dir_all(dir)
        })
        .map_err(|error| format!("could not create {}: {error}", dir.display()))
}

/// Gives the group `dir` the sum of its members' CPU weights (`file`: cpu.shares or cpu.weight),
/// so each member competes with the rest of the machine as if it stood alone. Best effort.
fn sum_weights(dir: &Path, file: &str) {
    let Ok(members) = fs::read_dir(dir) else { return };
    let sum: u64 = members
        .flatten()
        .filter_map(|member| fs::read_to_string(member.path().join(file)).ok()?.trim().parse::<u64>().ok())
        .sum();
    if sum > 0 {
        let sum = if file == "cpu.weight" { sum.min(10_000) } else { sum };
        let _ = fs::write(dir.join(file), format!("{sum}\n"));
    }
}

/// Creates budget `name` (root methods) or changes its scope (systemd-user) with `limits` and a
/// high CPU weight (see [`SHARES`]).
pub fn set(method: &Method, name: &str, limits: Limits) -> Result<(), String> {
    match method {
        Method::CgroupV1(_) => {
            for dir in dirs(method, name) {
                make_dir(&dir)?;
                if dir.join("cpu.cfs_quota_us").is_file() {
                    // Period first: a 10 ms period with the old quota may be rejected, a quota
                    // above the old 100 ms period never is once the period is short.
                    write(&dir.join("cpu.cfs_quota_us"), -1)?;
                    write(&dir.join("cpu.cfs_period_us"), PERIOD_US)?;
                    write(&dir.join("cpu.cfs_quota_us"), limits.quota_us().map_or(-1, |q| q as i64))?;
                    write(&dir.join("cpu.shares"), SHARES)?;
                    sum_weights(parent(&dir), "cpu.shares");
                }
                if dir.join("memory.limit_in_bytes").is_file() {
                    // Moved processes take their charges along (deprecated in newer kernels).
                    let _ = fs::write(dir.join("memory.move_charge_at_immigrate"), "3\n");
                    write(&dir.join("memory.limit_in_bytes"), limits.memory.map_or(-1, |m| m as i64))?;
                }
            }
            Ok(())
        }
        Method::CgroupV2(v2) => {
            write(&v2.join("cgroup.subtree_control"), "+cpu +memory")?;
            let group = v2.join(GROUP);
            make_dir(&group)?;
            write(&group.join("cgroup.subtree_control"), "+cpu +memory")?;
            let dir = group.join(name);
            make_dir(&dir)?;
            let quota = limits.quota_us().map_or("max".to_owned(), |q| q.to_string());
            write(&dir.join("cpu.max"), format!("{quota} {PERIOD_US}"))?;
            write(&dir.join("cpu.weight"), WEIGHT)?;
            sum_weights(&group, "cpu.weight");
            write(&dir.join("memory.max"), limits.memory.map_or("max".to_owned(), |m| m.to_string()))
        }
        Method::SystemdUser => {
            let status = Command::new("systemctl")
                .args(["--user", "set-property", "--runtime", &unit(name)])
                .args(systemd_properties(limits).iter().map(|(key, value)| format!("{key}={value}")))
                .status()
                .map_err(|error| format!("systemctl: {error}"))?;
            match status.success() {
                true => Ok(()),
                false => Err(format!("systemctl --user set-property {} failed", unit(name))),
            }
        }
        Method::None(why) => Err(format!("no way to set budgets here: {why}")),
    }
}

/// A systemd scope's properties for `limits` (an empty value lifts a limit on `set-property`).
fn systemd_properties(limits: Limits) -> Vec<(&'static str, String)> {
    vec![
        ("CPUQuotaPeriodSec", "10ms".into()),
        ("CPUWeight", WEIGHT.to_string()),
        ("CPUQuota", limits.cpus.map_or(String::new(), |c| format!("{:.0}%", c * 100.0))),
        ("MemoryMax", limits.memory.map_or("infinity".into(), |m| m.to_string())),
    ]
}

fn parent(dir: &Path) -> &Path {
    dir.parent().unwrap_or(dir)
}

/// Moves process `pid` (all its threads) into budget `name` (root methods); a process that is
/// gone meanwhile is no error.
pub fn move_process(method: &Method, name: &str, pid: u32) -> Result<(), String> {
    for dir in dirs(method, name) {
        if !enter(&dir, pid) {
            return Err(format!("could not move pid {pid} into budget {name} ({})", dir.display()));
        }
    }
    Ok(())
}

/// Moves `pid` into the cgroup `dir`; true also when the process is gone meanwhile.
fn enter(dir: &Path, pid: u32) -> bool {
    fs::write(dir.join("cgroup.procs"), format!("{pid}\n")).is_ok() || !Path::new(&format!("/proc/{pid}")).exists()
}

/// `root` and all its descendants, from `/proc/<pid>/stat` (the name may hold spaces and
/// parentheses: the parent is the second field after the last `)`).
pub fn tree(root: u32) -> Vec<u32> {
    let mut parents: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    for entry in fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
        let Ok(stat) = fs::read_to_string(entry.path().join("stat")) else { continue };
        let Some(parent) = stat.rsplit_once(") ").and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse().ok())
        else {
            continue;
        };
        parents.entry(parent).or_default().push(pid);
    }
    let mut tree = vec![root];
    let mut next = 0;
    while next < tree.len() {
        tree.extend(parents.get(&tree[next]).into_iter().flatten());
        next += 1;
    }
    tree
}

/// Moves the whole process tree of `root` into budget `name` (root methods). The root goes
/// first, so children forked meanwhile are born inside; a second pass catches any born before it
/// moved.
pub fn move_tree(method: &Method, name: &str, root: u32) -> Result<(), String> {
    for _ in 0..2 {
        for pid in tree(root) {
            move_process(method, name, pid)?;
        }
    }
    Ok(())
}

/// Deletes budget `name`'s cgroups once no process is left in them (a systemd scope goes by
/// itself), and the shared parent once empty.
pub fn remove(method: &Method, name: &str) -> Result<(), String> {
    for dir in dirs(method, name).iter().filter(|dir| dir.is_dir()) {
        fs::remove_dir(dir)
            .map_err(|error| format!("could not remove {} (processes left in it?): {error}", dir.display()))?;
        let parent = parent(dir);
        let _ = fs::remove_dir(parent);
        for file in ["cpu.shares", "cpu.weight"] {
            if parent.join(file).is_file() {
                sum_weights(parent, file);
            }
        }
    }
    Ok(())
}

/// Lifts budget `name` from the process tree of `root` (root methods): moves every process back
/// to the root of each hierarchy, where processes without a budget are, and deletes the cgroups.
pub fn release(method: &Method, name: &str, root: u32) -> Result<(), String> {
    for dir in dirs(method, name).iter().filter(|dir| dir.is_dir()) {
        let hierarchy = parent(parent(dir));
        for _ in 0..2 {
            for pid in tree(root) {
                if !enter(hierarchy, pid) {
                    return Err(format!("could not move pid {pid} out of budget {name}"));
                }
            }
        }
    }
    remove(method, name)
}

/// Runs `command` inside budget `name` with `limits`, under this process's pid (root methods: the
/// budget is made, this process enters it, then becomes the command) or in a systemd user scope.
/// Returns only on failure.
pub fn exec_in(method: &Method, name: &str, limits: Limits, command: &[String]) -> String {
    let Some((program, args)) = command.split_first() else { return "no command to run".into() };
    let error = match method {
        Method::CgroupV1(_) | Method::CgroupV2(_) => {
            if let Err(error) = set(method, name, limits).and_then(|()| move_process(method, name, std::process::id()))
            {
                return error;
            }
            Command::new(program).args(args).exec()
        }
        Method::SystemdUser => Command::new("systemd-run")
            .args(["--user", "--scope", "--quiet", "--collect", &format!("--unit={}", unit(name))])
            .args(
                systemd_properties(limits)
                    .iter()
                    .filter(|(_, value)| !value.is_empty() && value != "infinity")
                    .flat_map(|(key, value)| ["-p".to_owned(), format!("{key}={value}")]),
            )
            .arg("--")
            .arg(program)
            .args(args)
            .exec(),
        Method::None(why) => return format!("budgets are not available here: {why}"),
    };
    format!("could not run {program}: {error}")
}
