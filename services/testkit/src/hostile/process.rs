//! What a service process has used, read from `/proc/<pid>` (Linux): CPU time (user + system, all
//! threads, live or exited) and memory (resident set now and its peak).

use std::sync::OnceLock;
use std::time::Duration;

/// The process's user + system CPU time so far (`/proc/<pid>/stat`, in clock ticks).
pub fn cpu_time(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("the service's /proc/<pid>/stat");
    // The command name may hold spaces; the fields after it are space-separated.
    let after_name = &stat[stat.rfind(')').expect("(comm)") + 2..];
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name and state.
    let ticks: u64 = fields[11].parse::<u64>().expect("utime") + fields[12].parse::<u64>().expect("stime");
    Duration::from_secs_f64(ticks as f64 / ticks_per_second() as f64)
}

fn ticks_per_second() -> u64 {
    static TICKS: OnceLock<u64> = OnceLock::new();
    *TICKS.get_or_init(|| {
        std::process::Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .ok()
            .and_then(|out| String::from_utf8_lossy(&out.stdout).trim().parse().ok())
            .unwrap_or(100)
    })
}

/// Resident memory now and its peak since the process started, in bytes (`VmRSS`, `VmHWM`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Memory {
    pub resident: u64,
    pub peak: u64,
}

pub fn memory(pid: u32) -> Memory {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("the service's /proc/<pid>/status");
    let kib = |name: &str| -> u64 {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .expect("a memory figure")
    };
    Memory { resident: kib("VmRSS:") * 1024, peak: kib("VmHWM:") * 1024 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_this_process_cpu_time_and_memory() {
        let pid = std::process::id();
        let before = cpu_time(pid);
        let started = std::time::Instant::now();
        let mut spin = 0_u64;
        // Spins until the figure moves (however little CPU a busy machine gives this thread).
        while cpu_time(pid) - before < Duration::from_millis(50) && started.elapsed() < Duration::from_secs(60) {
            for _ in 0..100_000 {
                spin = spin.wrapping_add(std::hint::black_box(1));
            }
        }
        let used = cpu_time(pid) - before;
        assert!(used >= Duration::from_millis(50), "{used:?} after a minute of spinning ({spin})");
        let memory = memory(pid);
        assert!(memory.resident > 0 && memory.peak >= memory.resident, "{memory:?}");
    }
}
