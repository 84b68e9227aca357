//! CPU time from Linux `/proc`: the user + system time of a process tree (`/proc/<pid>/stat`,
//! including the time of children it has already reaped, so PostgreSQL backends that come and go
//! are still counted by their postmaster), the process that listens on a TCP port
//! (`/proc/net/tcp{,6}` → socket inode → `/proc/*/fd`), and the busy time of the whole machine
//! (`/proc/stat`; niced background work does not count, it yields to the measured run), and the
//! machine's memory figures (`/proc/meminfo`: its total, its page cache not yet written).
//! Everything here is a plain read of text files; on other systems, or without the right to read
//! another user's `/proc/<pid>/fd`, the lookups return `None` and the report says that the figure
//! was not measured.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;

/// `USER_HZ`: the unit of the times in `/proc/<pid>/stat` and `/proc/stat`, 100 on every Linux
/// architecture that exposes it to user space.
const TICKS_PER_SECOND: f64 = 100.0;

/// The fields of `/proc/<pid>/stat` this module uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcStat {
    pub ppid: u32,
    /// utime + stime of the process (all its threads).
    pub own_ticks: u64,
    /// cutime + cstime: children it has waited for, with their own reaped children.
    pub reaped_children_ticks: u64,
    /// Its nice value: above 0, background work that yields to the measured run.
    pub nice: i64,
    /// A kernel thread (`PF_KTHREAD`): the kernel's own work, much of it the run's network traffic.
    pub kernel_thread: bool,
}

/// `PF_KTHREAD` in the flags of `/proc/<pid>/stat`.
const KERNEL_THREAD_FLAG: u64 = 0x0020_0000;

/// Parses one `/proc/<pid>/stat` line. The command name sits in parentheses and may contain
/// spaces and parentheses itself, so fields are counted from the last `)`.
pub fn parse_stat(line: &str) -> Option<ProcStat> {
    let rest = &line[line.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // fields[0] is field 3 (state) of proc(5).
    let field = |n: usize| fields.get(n - 3).and_then(|f| f.parse::<u64>().ok());
    Some(ProcStat {
        ppid: u32::try_from(field(4)?).ok()?,
        own_ticks: field(14)? + field(15)?,
        reaped_children_ticks: field(16)? + field(17)?,
        nice: fields.get(19 - 3)?.parse().ok()?,
        kernel_thread: field(9)? & KERNEL_THREAD_FLAG != 0,
    })
}

pub fn stat(pid: u32) -> Option<ProcStat> {
    parse_stat(&fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

fn all_pids() -> Vec<u32> {
    let Ok(entries) = fs::read_dir("/proc") else { return Vec::new() };
    entries.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok()).collect()
}

/// CPU seconds used so far by every user-space process at normal priority or above, plus what
/// each has reaped (`all`: the machine's busy time counted process by process), and by those of
/// them outside the trees of `roots` (`others`; the run's own trees: its databases, services, load
/// generator and the runner with everything it started), from one reading of `/proc`
/// (docs/fairness.md, "Other processes"). The kernel scales each task's times to the time it
/// really ran, while `/proc/stat` samples whoever runs at each tick and, on a tickless virtual
/// machine, misses short bursts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ProcessesCpu {
    pub all: f64,
    pub others: f64,
}

pub fn processes_cpu(roots: &[u32]) -> Option<ProcessesCpu> {
    let stats = all_stats();
    if stats.is_empty() {
        return None;
    }
    let all = busy_ticks(&stats, &BTreeSet::new()) as f64 / TICKS_PER_SECOND;
    let others = busy_ticks(&stats, &descendants(&stats, roots)) as f64 / TICKS_PER_SECOND;
    Some(ProcessesCpu { all, others })
}

fn all_stats() -> BTreeMap<u32, ProcStat> {
    all_pids().into_iter().filter_map(|pid| Some((pid, stat(pid)?))).collect()
}

/// `roots` and every live process below them.
fn descendants(stats: &BTreeMap<u32, ProcStat>, roots: &[u32]) -> BTreeSet<u32> {
    let mut children: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    for (pid, s) in stats {
        children.entry(s.ppid).or_default().push(*pid);
    }
    let mut found: BTreeSet<u32> = BTreeSet::new();
    let mut next: Vec<u32> = roots.to_vec();
    while let Some(pid) = next.pop() {
        if found.insert(pid) {
            next.extend(children.get(&pid).into_iter().flatten());
        }
    }
    found
}

/// The ticks of the processes in `stats` but not in `leave_out`, counted as above. Also left
/// out: niced processes (they yield), kernel threads (much of their work is the run's own network
/// traffic) and what init (pid 1) has reaped: a daemon that dies, such as a database stopped
/// before a restore, lands there with its whole life's time at once, whenever init reaps it.
fn busy_ticks(stats: &BTreeMap<u32, ProcStat>, leave_out: &BTreeSet<u32>) -> u64 {
    stats
        .iter()
        .filter(|(pid, s)| s.nice <= 0 && !s.kernel_thread && !leave_out.contains(pid))
        .map(|(pid, s)| s.own_ticks + if *pid == 1 { 0 } else { s.reaped_children_ticks })
        .sum()
}

/// `root` and every live descendant (the walk the budgets move process trees with).
pub fn tree_pids(root: u32) -> BTreeSet<u32> {
    orders_budget::tree(root).into_iter().collect()
}

fn tree_stats(root: u32) -> BTreeMap<u32, ProcStat> {
    orders_budget::tree(root).into_iter().filter_map(|pid| Some((pid, stat(pid)?))).collect()
}

/// CPU seconds used so far by `root` and every live descendant, plus whatever they have reaped.
pub fn tree_cpu_seconds(root: u32) -> Option<f64> {
    let root_stat = stat(root)?;
    let mut tree = tree_stats(root);
    tree.insert(root, root_stat);
    let ticks: u64 = tree.values().map(|s| s.own_ticks + s.reaped_children_ticks).sum();
    Some(ticks as f64 / TICKS_PER_SECOND)
}

/// Voluntary and involuntary context switches of every thread of `root` and its live descendants
/// (`/proc/<pid>/task/<tid>/status`).
pub fn tree_switches(root: u32) -> Option<(u64, u64)> {
    let mut pids = tree_pids(root);
    pids.insert(root);
    let mut total = (0, 0);
    let mut any = false;
    for pid in pids {
        let Ok(tasks) = fs::read_dir(format!("/proc/{pid}/task")) else { continue };
        for task in tasks.filter_map(Result::ok) {
            let Ok(status) = fs::read_to_string(task.path().join("status")) else { continue };
            if let Some((voluntary, involuntary)) = parse_switches(&status) {
                (total.0, total.1, any) = (total.0 + voluntary, total.1 + involuntary, true);
            }
        }
    }
    any.then_some(total)
}

/// The two `*_ctxt_switches` lines of a thread's `status`.
pub fn parse_switches(status: &str) -> Option<(u64, u64)> {
    let field = |name: &str| status.lines().find_map(|l| l.strip_prefix(name)?.strip_prefix(':')?.trim().parse().ok());
    Some((field("voluntary_ctxt_switches")?, field("nonvoluntary_ctxt_switches")?))
}

/// CPU seconds of process `pid`'s own threads, without its children.
pub fn own_cpu_seconds(pid: u32) -> Option<f64> {
    Some(stat(pid)?.own_ticks as f64 / TICKS_PER_SECOND)
}

/// CPU seconds of the children this process has reaped (k6, once it has been waited for).
pub fn own_reaped_children_seconds() -> Option<f64> {
    let own = parse_stat(&fs::read_to_string("/proc/self/stat").ok()?)?;
    Some(own.reaped_children_ticks as f64 / TICKS_PER_SECOND)
}

/// Socket inodes listening on `port` in one `/proc/net/tcp` or `/proc/net/tcp6` table.
pub fn listening_inodes(table: &str, port: u16) -> Vec<u64> {
    table
        .lines()
        .skip(1)
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let local_port = u16::from_str_radix(fields.get(1)?.rsplit(':').next()?, 16).ok()?;
            // st 0A is TCP_LISTEN.
            (local_port == port && *fields.get(3)? == "0A").then(|| fields.get(9)?.parse().ok())?
        })
        .collect()
}

/// The process that listens on TCP `port` on this machine: of all processes holding the socket,
/// the one whose parent does not hold it too (the postmaster, not a backend that inherited it).
pub fn listening_pid(port: u16) -> Option<u32> {
    let inodes: BTreeSet<u64> = ["/proc/net/tcp", "/proc/net/tcp6"]
        .iter()
        .filter_map(|path| fs::read_to_string(path).ok())
        .flat_map(|table| listening_inodes(&table, port))
        .collect();
    if inodes.is_empty() {
        return None;
    }
    let holders: BTreeSet<u32> = all_pids()
        .into_iter()
        .filter(|pid| {
            let Ok(fds) = fs::read_dir(format!("/proc/{pid}/fd")) else { return false };
            fds.filter_map(Result::ok).any(|fd| {
                fs::read_link(fd.path())
                    .ok()
                    .and_then(|target| socket_inode(&target.to_string_lossy()))
                    .is_some_and(|inode| inodes.contains(&inode))
            })
        })
        .collect();
    holders.iter().copied().find(|pid| stat(*pid).is_none_or(|s| !holders.contains(&s.ppid)))
}

fn socket_inode(link: &str) -> Option<u64> {
    link.strip_prefix("socket:[")?.strip_suffix(']')?.parse().ok()
}

/// Busy and total CPU seconds of the whole machine since boot (all cores), from `/proc/stat`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MachineCpu {
    /// Busy at normal priority or above: everything but idle, iowait and niced time.
    pub busy_seconds: f64,
    /// Time of niced processes (nice > 0: background builds and tests, `nice -n 19`). They yield
    /// the CPU to normal-priority work (weight 15 against 1,024 at nice 19), so a measured run could
    /// have had those cycles: they do not count as busy.
    pub niced_seconds: f64,
    pub total_seconds: f64,
}

pub fn parse_machine_cpu(text: &str) -> Option<MachineCpu> {
    let line = text.lines().find(|l| l.starts_with("cpu "))?;
    let ticks: Vec<u64> = line.split_whitespace().skip(1).filter_map(|f| f.parse().ok()).collect();
    // user nice system idle iowait irq softirq steal (guest time is already inside user).
    let total: u64 = ticks.iter().take(8).sum();
    let idle = ticks.get(3)? + ticks.get(4).copied().unwrap_or(0);
    let niced = ticks.get(1).copied().unwrap_or(0);
    Some(MachineCpu {
        busy_seconds: (total - idle - niced) as f64 / TICKS_PER_SECOND,
        niced_seconds: niced as f64 / TICKS_PER_SECOND,
        total_seconds: total as f64 / TICKS_PER_SECOND,
    })
}

pub fn machine_cpu() -> Option<MachineCpu> {
    parse_machine_cpu(&fs::read_to_string("/proc/stat").ok()?)
}

pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

/// Field `name` of `/proc/meminfo`-formatted `text` (`Dirty:  1234 kB`), in bytes.
pub fn meminfo_field(text: &str, name: &str) -> Option<u64> {
    let value = text.lines().find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))?;
    let kib: u64 = value.trim().trim_end_matches("kB").trim().parse().ok()?;
    Some(kib * 1024)
}

/// Field `name` of this machine's `/proc/meminfo`, in bytes.
pub fn meminfo(name: &str) -> Option<u64> {
    meminfo_field(&fs::read_to_string("/proc/meminfo").ok()?, name)
}

/// The machine's page cache waiting to be written to disk (`Dirty` + `Writeback`), in bytes.
pub fn unwritten_bytes() -> Option<u64> {
    let text = fs::read_to_string("/proc/meminfo").ok()?;
    Some(meminfo_field(&text, "Dirty")? + meminfo_field(&text, "Writeback")?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn context_switches_are_read_by_exact_name() {
        let status = "Name:\tmongod\nvoluntary_ctxt_switches:\t1520\nnonvoluntary_ctxt_switches:\t37\n";
        assert_eq!(parse_switches(status), Some((1520, 37)));
        assert_eq!(parse_switches("voluntary_ctxt_switches:\t3\n"), None, "both or nothing");
        let mine = tree_switches(std::process::id()).expect("this process's threads");
        assert!(mine.0 + mine.1 > 0, "a running test has been switched at least once: {mine:?}");
    }

    #[test]
    fn meminfo_fields_are_read_in_bytes_by_exact_name() {
        let text = "MemTotal:       24605204 kB\nDirty:              4680 kB\nWriteback:             12 kB\nWritebackTmp:        0 kB\n";
        assert_eq!(meminfo_field(text, "MemTotal"), Some(24_605_204 * 1024));
        assert_eq!(meminfo_field(text, "Writeback"), Some(12 * 1024), "not WritebackTmp");
        assert_eq!(meminfo_field(text, "Dirty"), Some(4680 * 1024));
        assert_eq!(meminfo_field(text, "Cached"), None);
    }

    #[test]
    fn stat_fields_are_counted_from_the_last_parenthesis() {
        let line = "4242 (postgres: x (y)) S 17 4242 4242 0 -1 4194560 100 0 0 0 250 50 7 3 20 0 1 0 1 2 3";
        assert_eq!(
            parse_stat(line),
            Some(ProcStat { ppid: 17, own_ticks: 300, reaped_children_ticks: 10, nice: 0, kernel_thread: false })
        );
        let niced = "77 (rustc) R 1 77 77 0 -1 0 0 0 0 0 900 100 0 0 39 19 1 0 1 2 3";
        assert_eq!(parse_stat(niced).map(|s| s.nice), Some(19));
        let kernel = "12 (ksoftirqd/0) S 2 0 0 0 -1 69238848 0 0 0 0 0 840 0 0 20 0 1 0 3 0 0";
        assert_eq!(parse_stat(kernel).map(|s| s.kernel_thread), Some(true));
        assert_eq!(parse_stat("garbage"), None);
    }

    #[test]
    fn only_listening_sockets_on_the_port_are_found() {
        let table = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:D8F8 00000000:0000 0A 00000000:00000000 00:00000000 00000000   999        0 31337 1 0
   1: 0100007F:D8F8 0100007F:9C40 01 00000000:00000000 00:00000000 00000000   999        0 31338 1 0
   2: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4711 1 0";
        assert_eq!(listening_inodes(table, 55544), [31337]);
        assert_eq!(listening_inodes(table, 8080), [4711]);
        assert!(listening_inodes(table, 9).is_empty());
    }

    #[test]
    fn machine_busy_time_excludes_idle_iowait_and_niced_time() {
        let cpu = parse_machine_cpu("cpu  100 30 50 770 50 0 0 0 0 0\ncpu0 1 2 3").expect("cpu line");
        assert_eq!(cpu, MachineCpu { busy_seconds: 1.5, niced_seconds: 0.3, total_seconds: 10.0 });
    }

    #[test]
    fn this_process_is_found_and_measured() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        assert_eq!(listening_pid(port), Some(std::process::id()));
        assert!(tree_cpu_seconds(std::process::id()).is_some());
        assert!(machine_cpu().is_some_and(|m| m.total_seconds >= m.busy_seconds));
    }

    #[test]
    fn other_processes_are_those_outside_the_runs_trees_less_what_init_reaped_and_niced_and_kernel_work() {
        let stat = |ppid, own_ticks, reaped_children_ticks, nice, kernel_thread| ProcStat {
            ppid,
            own_ticks,
            reaped_children_ticks,
            nice,
            kernel_thread,
        };
        let stats = BTreeMap::from([
            (1, stat(0, 5, 9_000, 0, false)),
            (40, stat(1, 100, 20, 0, false)),
            (41, stat(1, 300, 0, 19, false)),
            (42, stat(2, 70, 0, 0, true)),
            (50, stat(1, 1_000, 4_000, 0, false)),
            (51, stat(50, 200, 0, 0, false)),
            (52, stat(51, 30, 0, 0, false)),
        ]);
        assert_eq!(descendants(&stats, &[50]), BTreeSet::from([50, 51, 52]));
        assert_eq!(busy_ticks(&stats, &BTreeSet::new()), 5 + 100 + 20 + 1_000 + 4_000 + 200 + 30);
        assert_eq!(busy_ticks(&stats, &descendants(&stats, &[50])), 5 + 100 + 20, "the run's tree is ours");
    }

    #[test]
    fn the_process_by_process_count_sees_work_this_process_does() {
        let before = processes_cpu(&[]).expect("processes").all;
        let spin = std::time::Instant::now();
        let mut x = 0u64;
        while spin.elapsed() < std::time::Duration::from_millis(300) {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
        }
        let after = processes_cpu(&[]).expect("processes").all;
        assert!(after - before >= 0.2, "300 ms of spinning counted as {:.2} s", after - before);
    }
}
