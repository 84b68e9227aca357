//! Parsing of the kernel's files, and budgets checked against the kernel's own accounting: a
//! process tree that burns CPU, run by `infra/local/budget.sh` (the code `stack.sh` starts the
//! databases with) in a budget of 0.2 CPU, must use about 0.2 cores and be throttled; one that
//! writes a file under a memory limit must have the page cache counted against it. Those two
//! need root and cgroups; without them they say so and pass.

use super::*;
use std::os::unix::process::CommandExt as _;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

const MOUNTINFO: &str = "\
24 1 8:1 / / rw,relatime shared:1 - ext4 /dev/vda rw
30 24 0:26 / /sys/fs/cgroup rw - tmpfs tmpfs rw,mode=755
31 30 0:27 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
32 30 0:28 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct
33 30 0:29 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
34 30 0:30 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";

#[test]
fn mountinfo_gives_each_controller_its_hierarchy() {
    let mounts = Mounts::parse(MOUNTINFO);
    assert_eq!(mounts.v1_mount("cpuacct"), Some(Path::new("/sys/fs/cgroup/cpuacct")));
    assert_eq!(mounts.v1_mount("memory"), Some(Path::new("/sys/fs/cgroup/memory")));
    assert_eq!(mounts.v1_mount("blkio"), None);
    assert_eq!(mounts.v2.as_deref(), Some(Path::new("/sys/fs/cgroup/unified")));
}

#[test]
fn a_v1_process_is_placed_per_controller_and_a_v2_one_in_its_one_group() {
    let mounts = Mounts::parse(MOUNTINFO);
    let v1 = parse_placement(
        "4:memory:/orders-bench/postgres-5432\n2:cpuacct:/orders-bench/postgres-5432\n1:cpu:/orders-bench/postgres-5432\n0::/\n",
        &mounts,
    )
    .expect("v1");
    assert_eq!((v1.version, v1.path.as_str()), (Version::V1, "/orders-bench/postgres-5432"));
    assert_eq!(v1.cpuacct.expect("cpuacct").dir, Path::new("/sys/fs/cgroup/cpuacct/orders-bench/postgres-5432"));
    assert_eq!(v1.memory.expect("memory").dir, Path::new("/sys/fs/cgroup/memory/orders-bench/postgres-5432"));

    let v2_only = Mounts { v1: Vec::new(), v2: Some(PathBuf::from("/sys/fs/cgroup")) };
    let v2 = parse_placement("0::/user.slice/orders-bench-mongod-27017.scope\n", &v2_only).expect("v2");
    assert_eq!(v2.version, Version::V2);
    assert_eq!(v2.cpu.expect("cpu").dir, Path::new("/sys/fs/cgroup/user.slice/orders-bench-mongod-27017.scope"));
    assert!(parse_placement("garbage", &v2_only).is_none());
}

#[test]
fn counters_quotas_and_limits_read_like_the_kernel_writes_them() {
    let v1 = "nr_periods 249\nnr_throttled 247\nthrottled_time 1322833030\nnr_bursts 0\n";
    assert_eq!((stat_value(v1, "nr_periods"), stat_value(v1, "nr_throttled")), (Some(249), Some(247)));
    assert_eq!(stat_value(v1, "throttled_time"), Some(1_322_833_030));
    assert_eq!(stat_value("usage_usec 120\nuser_usec 100\n", "usage_usec"), Some(120));
    assert_eq!(stat_value(v1, "nr_throttle"), None, "whole keys only");
    assert_eq!(v1_memory_limit("9223372036854771712\n"), None);
    assert_eq!(v1_memory_limit("268435456\n"), Some(268_435_456));
    assert_eq!(v2_cpu_max("2000 10000\n"), Some((Some(0.2), 10_000)));
    assert_eq!(v2_cpu_max("max 100000\n"), Some((None, 100_000)));
    assert_eq!(tightest([3, 1, 2].into_iter()), Some(1));
}

// --- against the kernel ---------------------------------------------------------------------------

fn budget_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../infra/local/budget.sh")
}

/// The budget method of this machine when it is a root one, else why the kernel tests skip.
fn root_budgets() -> Result<(), String> {
    let output = Command::new("bash").arg(budget_script()).arg("method").output().map_err(|e| e.to_string())?;
    let text = String::from_utf8_lossy(&output.stdout).to_string();
    match text.lines().next() {
        Some("cgroup-v1" | "cgroup-v2") => Ok(()),
        _ => Err(format!("no root cgroup budgets here: {}", text.trim())),
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
        let child = Command::new("bash")
            .arg(budget_script())
            .args(["run", &name, cpus, memory, "--"])
            .args(command)
            .stdout(Stdio::null())
            .process_group(0)
            .spawn()
            .expect("bash budget.sh run");
        let budgeted = Self { name, child };
        // `run` moves itself into the budget (one hierarchy after the other), then execs the
        // command under the same pid: once it is no longer bash, it is in all of them.
        let deadline = Instant::now() + Duration::from_secs(5);
        let mut budgeted = budgeted;
        let comm = |pid: u32| std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
        while comm(budgeted.child.id()).trim() == "bash"
            || !budgeted.placement().is_some_and(|p| p.path.ends_with(&budgeted.name))
        {
            let exited = budgeted.child.try_wait().expect("try_wait");
            assert!(exited.is_none(), "budget.sh run exited ({exited:?}) before its command ran in the budget");
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
        let _ = Command::new("bash").arg(budget_script()).args(["remove", &self.name]).status();
    }
}

#[test]
fn a_cpu_budget_of_a_fifth_of_a_core_is_what_the_kernel_accounts_and_throttles() {
    if let Err(why) = root_budgets() {
        eprintln!("SKIPPED: {why}");
        return;
    }
    let burner = Budgeted::start("0.2", "256M", &["sh", "-c", "while :; do :; done"]);
    let cgroup = burner.placement().expect("placement");
    let tree = BTreeSet::from([burner.child.id()]);
    assert!(cgroup.holds_only(&tree), "the budget's cgroup holds the burner alone");
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
    let file = std::env::temp_dir().join(format!("orders-bench-cgroup-{}", std::process::id()));
    let limit: u64 = 64 << 20;
    let script = format!("dd if=/dev/zero of='{}' bs=1M count=160 status=none && sleep 30", file.display());
    let writer = Budgeted::start("2", "64M", &["sh", "-c", &script]);
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
fn the_cpu_sampler_reports_a_budgeted_databases_use_and_throttling_per_step() {
    use crate::round::cpu::Sampler;
    use orders_bench_model::cpu::{Component, Role};
    use orders_loadgen::summary::OfferedStep;
    use std::collections::BTreeMap;
    if let Err(why) = root_budgets() {
        eprintln!("SKIPPED: {why}");
        return;
    }
    let burner = Budgeted::start("0.3", "512M", &["sh", "-c", "while :; do :; done"]);
    let database = Component {
        name: "burner".into(),
        role: Role::Database,
        target: Some("pg".into()),
        pid: Some(burner.child.id()),
        note: None,
    };
    let mut sampler = Sampler::new(vec![database], Instant::now());
    for _ in 0..5 {
        sampler.sample();
        std::thread::sleep(Duration::from_millis(400));
    }
    sampler.sample();
    let steps = [OfferedStep { from_s: 0.0, to_s: 1.0, rate: 100 }, OfferedStep { from_s: 1.0, to_s: 2.0, rate: 200 }];
    let report = sampler.report(None, 0.0, &steps, &BTreeMap::from([("pg".to_owned(), 300)]), None);

    let budget = &report.budgets["burner"];
    assert_eq!((budget.cpus, budget.memory_bytes, budget.dedicated), (Some(0.3), Some(512 << 20), true));
    assert_eq!(budget.period_ms, Some(10.0));
    for step in &report.steps {
        let db = &step.databases["burner"];
        eprintln!("step {}: {db:?}", step.step);
        let cores = db.cores.expect("cores");
        assert!((0.15..=0.33).contains(&cores), "step {}: {cores:.3} cores under a 0.3 budget", step.step);
        assert_eq!(db.budget_cores, Some(0.3));
        assert!(db.throttled_share.is_some_and(|s| s > 0.5), "{db:?}");
        assert!(db.throttled_seconds.is_some_and(|s| s > 0.0), "{db:?}");
        assert_eq!(step.cores["burner"], cores, "the database's cores are the kernel's");
    }
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
    let as_nobody = |args: &[&str]| {
        Command::new("runuser")
            .args(["-u", "nobody", "--", "bash"])
            .arg(budget_script())
            .args(args)
            .output()
            .expect("runuser")
    };
    let method = as_nobody(&["method"]);
    let text = String::from_utf8_lossy(&method.stdout);
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("none"), "{text}");
    assert!(lines.next().is_some_and(|why| why.starts_with("not root")), "says why: {text}");
    let run = as_nobody(&["run", "x", "0.2", "256M", "--", "true"]);
    assert!(!run.status.success(), "a budget that cannot be set is an error, not a silent run");
    assert!(String::from_utf8_lossy(&run.stderr).contains("budgets are not available here"));
}
