//! Budgets checked against the kernel's own accounting: a process tree that burns CPU, started by
//! `orders-budget run` (what `stack.sh` starts the databases with) in a budget of 0.2 CPU, must
//! use about 0.2 cores and be throttled; one that writes a file under a memory limit must have the
//! page cache counted against it; an ordinary user without a delegating systemd is told there are
//! none. The first two need root and cgroups; without them they say so and pass.

use orders_budget::{Method, Placement, Reading, placement};
use std::collections::BTreeSet;
use std::os::unix::process::CommandExt as _;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_orders-budget");

/// The budget method of this machine when it is a root one, else why the kernel tests skip.
fn root_budgets() -> Result<(), String> {
    match Method::detect() {
        Method::CgroupV1(_) | Method::CgroupV2(_) => Ok(()),
        other => Err(format!("no root cgroup budgets here: {other:?}")),
    }
}

static NEXT: AtomicU32 = AtomicU32::new(0);

/// A command running inside a fresh budget, removed again when dropped.
struct Budgeted {
    name: String,
    child: Child,
}

impl Budgeted {
    fn start(cpus: &str, memory: &str, command: &[&str]) -> Self {
        let name = format!("test-{}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::SeqCst));
        let child = Command::new(BIN)
            .args(["run", &name, cpus, memory, "--"])
            .args(command)
            .stdout(Stdio::null())
            .process_group(0)
            .spawn()
            .expect("orders-budget run");
        let mut budgeted = Self { name, child };
        // `run` makes the budget, moves itself into it, then execs the command under the same pid.
        let deadline = Instant::now() + Duration::from_secs(5);
        let comm = |pid: u32| std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
        while comm(budgeted.child.id()).trim() == "orders-budget"
            || !budgeted.placement().is_some_and(|p| p.path.ends_with(&budgeted.name))
        {
            let exited = budgeted.child.try_wait().expect("try_wait");
            assert!(exited.is_none(), "orders-budget run exited ({exited:?}) before its command ran in the budget");
            assert!(Instant::now() < deadline, "the process never entered budget {}", budgeted.name);
            std::thread::sleep(Duration::from_millis(20));
        }
        budgeted
    }

    fn placement(&self) -> Option<Placement> {
        placement(self.child.id())
    }
}

impl Drop for Budgeted {
    /// Kills the whole process group (a cgroup with a process left in it cannot be removed).
    fn drop(&mut self) {
        let cgroup = self.placement();
        let group = format!("-{}", self.child.id());
        let _ = Command::new("kill").args(["-KILL", "--", &group]).status();
        let _ = self.child.wait();
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline && cgroup.as_ref().and_then(Placement::processes).is_some_and(|p| !p.is_empty())
        {
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = Command::new(BIN).args(["remove", &self.name]).status();
    }
}

#[test]
fn a_cpu_budget_of_a_fifth_of_a_core_is_what_the_kernel_accounts_and_throttles() {
    if let Err(why) = root_budgets() {
        eprintln!("SKIPPED: {why}");
        return;
    }
    let burner = Budgeted::start("0.2", &(256u64 << 20).to_string(), &["sh", "-c", "while :; do :; done"]);
    let cgroup = burner.placement().expect("placement");
    let tree = BTreeSet::from([burner.child.id()]);
    assert!(cgroup.holds_only(&tree), "the budget's cgroup holds the burner alone");
    let shown = Command::new(BIN).args(["show", &burner.child.id().to_string()]).output().expect("show");
    assert_eq!(
        String::from_utf8_lossy(&shown.stdout).trim(),
        format!("cpus=0.2 period_us=10000 memory=268435456 cgroup=/orders-bench/{}", burner.name)
    );
    let (start, before) = (Instant::now(), cgroup.read());
    std::thread::sleep(Duration::from_secs(2));
    let (seconds, after) = (start.elapsed().as_secs_f64(), cgroup.read());

    assert_eq!(after.quota_cores, Some(0.2));
    assert_eq!(after.period_us, Some(10_000), "a 10 ms period");
    assert_eq!(after.memory_limit_bytes, Some(256 << 20));
    let used = |r: &Reading| r.usage_seconds.expect("usage");
    let cores = (used(&after) - used(&before)) / seconds;
    let periods = after.periods.unwrap_or(0) - before.periods.unwrap_or(0);
    let throttled = after.throttled_periods.unwrap_or(0) - before.throttled_periods.unwrap_or(0);
    eprintln!(
        "budget 0.2 CPU: used {cores:.3} cores over {seconds:.2} s; throttled in {throttled} of {periods} periods, {:.2} s",
        after.throttled_seconds.unwrap_or(0.0) - before.throttled_seconds.unwrap_or(0.0)
    );
    // Upwards the quota binds; downwards a busy shared machine may give it less than its quota.
    assert!((0.1..=0.22).contains(&cores), "a burner under a 0.2 CPU budget used {cores:.3} cores");
    assert!(throttled > 0 && throttled * 2 > periods, "throttled in {throttled} of {periods} periods");
}

#[test]
fn a_memory_budget_counts_the_page_cache() {
    if let Err(why) = root_budgets() {
        eprintln!("SKIPPED: {why}");
        return;
    }
    let file = std::env::temp_dir().join(format!("orders-budget-cgroup-{}", std::process::id()));
    let limit: u64 = 64 << 20;
    let script = format!("dd if=/dev/zero of='{}' bs=1M count=160 status=none && sleep 30", file.display());
    let writer = Budgeted::start("2", &limit.to_string(), &["sh", "-c", &script]);
    let cgroup = writer.placement().expect("placement");
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::fs::metadata(&file).map_or(0, |m| m.len()) < 160 << 20 {
        assert!(Instant::now() < deadline, "dd did not write 160 MiB in 30 s");
        std::thread::sleep(Duration::from_millis(50));
    }
    let reading = cgroup.read();
    let _ = std::fs::remove_file(&file);
    let peak = reading.memory_peak_bytes.expect("peak");
    eprintln!(
        "memory budget 64 MiB, 160 MiB written: peak {} MiB, now {} MiB",
        peak >> 20,
        reading.memory_bytes.unwrap_or(0) >> 20
    );
    assert_eq!(reading.memory_limit_bytes, Some(limit));
    assert!(peak <= limit, "the limit binds: peak {peak}");
    assert!(peak >= limit / 2, "the written file's page cache is charged to the budget: peak {peak}");
}

#[test]
fn an_ordinary_user_without_a_delegating_systemd_is_told_there_are_no_budgets() {
    let is_root = std::fs::read_to_string("/proc/self/status")
        .is_ok_and(|s| s.lines().any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0")));
    let has_user_manager =
        Command::new("systemctl").args(["--user", "show"]).output().is_ok_and(|o| o.status.success());
    if !is_root || has_user_manager {
        eprintln!("SKIPPED: needs root (to run as nobody) on a machine without a systemd user manager");
        return;
    }
    let as_nobody =
        |args: &[&str]| Command::new("runuser").args(["-u", "nobody", "--", BIN]).args(args).output().expect("runuser");
    let method = as_nobody(&["method"]);
    let text = String::from_utf8_lossy(&method.stdout);
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("none"), "{text}");
    assert!(lines.next().is_some_and(|why| why.starts_with("not root")), "says why: {text}");
    let run = as_nobody(&["run", "x", "0.2", "268435456", "--", "true"]);
    assert!(!run.status.success(), "a budget that cannot be set is an error, not a silent run");
    assert!(String::from_utf8_lossy(&run.stderr).contains("budgets are not available here"));
}
