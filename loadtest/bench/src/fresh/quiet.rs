//! Waiting until both databases are quiet before a repeat's load, and saying what was not: a
//! checkpoint first (PostgreSQL `CHECKPOINT`, MongoDB `fsync`), then one-second windows, each
//! after writing the machine's page cache to disk (`sync`: a restore's copied files would
//! otherwise be written back by the kernel some 30 s later, inside the load, on the disk both
//! databases flush their commits to), in which each server's CPU (its cgroup's accounting when it
//! has one of its own, else its process tree's from `/proc`) stays under `QUIET_CORES`, nothing
//! else runs on its database (PostgreSQL: autovacuum workers and sessions that are not idle;
//! MongoDB: active client operations such as an index build) and the machine leaves less than
//! `QUIET_UNWRITTEN_MIB` unwritten. It waits at most `limit`; the repeat then goes on, and its
//! record says why the start was not quiet.

use crate::components::locate;
use crate::procstat;
use orders_bench_engines::{Target, Targets};
use orders_bench_model::cpu::Role;
use orders_bench_model::start::{DatabaseStart, QUIET_CORES, QUIET_UNWRITTEN_MIB, StartState};
use std::time::{Duration, Instant};

const WINDOW: Duration = Duration::from_secs(1);

fn mib(bytes: u64) -> f64 {
    bytes as f64 / f64::from(1 << 20)
}

/// Writes the machine's unwritten page cache to disk; returns how long that took.
async fn flush_page_cache() -> Duration {
    let began = Instant::now();
    // sync(2) blocks until the writes are done, hence its own thread.
    let _ = tokio::task::spawn_blocking(nix::unistd::sync).await;
    began.elapsed()
}

/// CPU seconds used so far by `target`'s database server, and its cgroup's memory.
fn server_reading(target: &Target) -> (Option<f64>, Option<f64>, Option<String>) {
    let info = target.backend.info();
    let component = locate(&info.name, Role::Database, &info.name, target.backend.database_url());
    let Some(pid) = component.pid else { return (None, None, component.note) };
    let placement = orders_budget::placement(pid);
    let own = placement.as_ref().filter(|p| p.holds_only(&procstat::tree_pids(pid)));
    match own.map(orders_budget::Placement::read) {
        Some(reading) if reading.usage_seconds.is_some() => {
            (reading.usage_seconds, reading.memory_bytes.map(|b| b as f64), None)
        }
        _ => (procstat::tree_cpu_seconds(pid), None, Some("no cgroup of its own: CPU from /proc".into())),
    }
}

/// Checkpoints every database, then watches them until one window finds all quiet or `limit`
/// has passed; fills `start` (`quiet`, `waited_seconds`, `not_quiet` and per database its CPU,
/// memory, checkpoint and what ran).
pub async fn wait(targets: &Targets, limit: Duration, start: &mut StartState) {
    let began = Instant::now();
    for target in targets.iter() {
        let entry = start.databases.entry(target.name()).or_default();
        match target.backend.checkpoint().await {
            Ok(()) => entry.checkpointed = true,
            Err(error) => entry.notes.push(format!("checkpoint failed: {error}")),
        }
    }
    start.unwritten_mib_flushed = procstat::unwritten_bytes().map(mib);
    start.flush_seconds = Some(flush_page_cache().await.as_secs_f64());
    let mut first = true;
    loop {
        if !std::mem::take(&mut first) {
            flush_page_cache().await;
        }
        let before: Vec<_> = targets.iter().map(server_reading).collect();
        tokio::time::sleep(WINDOW).await;
        let mut reasons = Vec::new();
        start.unwritten_mib = procstat::unwritten_bytes().map(mib);
        if let Some(unwritten) = start.unwritten_mib.filter(|u| *u >= QUIET_UNWRITTEN_MIB) {
            reasons.push(format!(
                "the machine left {unwritten:.0} MiB of page cache unwritten in {:.0} s (quiet is below {QUIET_UNWRITTEN_MIB:.0})",
                WINDOW.as_secs_f64()
            ));
        }
        for (target, before) in targets.iter().zip(&before) {
            let label = target.backend.info().label;
            let (cpu_after, memory, note) = server_reading(target);
            let cores = before.0.zip(cpu_after).map(|(b, a)| (a - b) / WINDOW.as_secs_f64());
            let running = target.backend.busy().await;
            let entry: &mut DatabaseStart = start.databases.entry(target.name()).or_default();
            entry.cpu_cores = cores;
            entry.cgroup_memory_bytes = memory;
            if let Some(note) = note.filter(|n| !entry.notes.contains(n)) {
                entry.notes.push(note);
            }
            if let Some(cores) = cores.filter(|c| *c >= QUIET_CORES) {
                reasons.push(format!("{label} used {cores:.3} cores (quiet is below {QUIET_CORES})"));
            }
            match running {
                Ok(list) => {
                    if !list.is_empty() {
                        reasons.push(format!("{label} was running {}", list.join("; ")));
                    }
                    entry.busy = list;
                }
                Err(error) => entry.notes.push(format!("could not list what runs: {error}")),
            }
        }
        if reasons.is_empty() || began.elapsed() >= limit {
            start.quiet = reasons.is_empty();
            start.not_quiet = reasons;
            start.waited_seconds = began.elapsed().as_secs_f64();
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use orders_bench_engines::databases::{Databases, pg_session};

    /// The test servers (`infra/local/stack.sh env`), with a database of the test's own on
    /// PostgreSQL.
    async fn databases() -> Databases {
        Databases {
            database_url: orders_pg::testing::fresh_database().await,
            mongodb_uri: std::env::var("MONGODB_URI").unwrap_or_else(|_| "mongodb://127.0.0.1:57017".into()),
            mongodb_db: "orders_test_quiet".into(),
            ..Databases::default()
        }
    }

    #[tokio::test]
    async fn a_repeat_started_while_another_client_works_is_not_quiet_and_says_what_ran() {
        let databases = databases().await;
        let (busy, _connection) = pg_session(&databases.database_url).await.expect("connect");
        let sleeper = tokio::spawn(async move { busy.simple_query("SELECT pg_sleep(6)").await.map(drop) });
        tokio::time::sleep(Duration::from_millis(300)).await;
        let mut start = StartState::default();
        let targets = Targets::new(&databases, &[]).expect("targets");
        wait(&targets, Duration::from_millis(500), &mut start).await;
        assert!(!start.quiet, "{start:?}");
        assert!(
            start.not_quiet.iter().any(|r| r.starts_with("PostgreSQL was running client backend: SELECT pg_sleep(6)")),
            "{:?}",
            start.not_quiet
        );
        assert_eq!(start.databases["pg"].busy, ["client backend: SELECT pg_sleep(6)"]);
        assert!(start.databases["pg"].checkpointed && start.databases["mongo"].checkpointed);
        assert!(start.waited_seconds < 5.0, "it gave up after its limit: {}", start.waited_seconds);
        sleeper.await.expect("join").expect("sleep");
    }

    /// Rewrites a 128 MiB file next to the test binary (a real disk, where tmpfs would keep no
    /// dirty pages) as fast as it can until `stop`: a machine that keeps writing.
    fn writer(stop: std::sync::Arc<std::sync::atomic::AtomicBool>) -> std::thread::JoinHandle<()> {
        use std::io::{Seek, Write};
        let dir = std::env::current_exe().expect("exe").parent().expect("dir").to_path_buf();
        let path = dir.join(format!("quiet-writer-{}", std::process::id()));
        std::thread::spawn(move || {
            let mut file = std::fs::File::create(&path).expect("create");
            let chunk = vec![7u8; 1 << 20];
            let mut written = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                file.write_all(&chunk).expect("write");
                written += 1;
                if written % 128 == 0 {
                    file.rewind().expect("rewind");
                }
            }
            drop(file);
            std::fs::remove_file(&path).expect("remove");
        })
    }

    #[tokio::test]
    async fn a_repeat_started_while_the_machine_still_writes_is_not_quiet() {
        let databases = databases().await;
        let targets = Targets::new(&databases, &[]).expect("targets");
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let writing = writer(stop.clone());
        tokio::time::sleep(Duration::from_millis(200)).await;
        let mut start = StartState::default();
        wait(&targets, Duration::from_millis(500), &mut start).await;
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        writing.join().expect("writer");
        assert!(!start.quiet, "{start:?}");
        assert!(
            start
                .not_quiet
                .iter()
                .any(|r| r.starts_with("the machine left") && r.contains("MiB of page cache unwritten")),
            "{:?}",
            start.not_quiet
        );
        assert!(start.unwritten_mib.is_some_and(|u| u >= QUIET_UNWRITTEN_MIB), "{start:?}");
        assert!(start.flush_seconds.is_some() && start.unwritten_mib_flushed.is_some(), "{start:?}");
    }

    /// The other side of the test above: 64 MiB written once and left unwritten (no writer
    /// afterwards) is flushed before the windows, and the wait finds the page cache quiet
    /// (nextest runs this test alone: another test's writes would count).
    #[tokio::test]
    async fn page_cache_quiet_once_the_machine_stops_writing() {
        let databases = databases().await;
        let targets = Targets::new(&databases, &[]).expect("targets");
        let dir = std::env::current_exe().expect("exe").parent().expect("dir").to_path_buf();
        let path = dir.join(format!("quiet-once-{}", std::process::id()));
        std::fs::write(&path, vec![7u8; 64 << 20]).expect("write");
        let mut start = StartState::default();
        wait(&targets, Duration::from_secs(3), &mut start).await;
        std::fs::remove_file(&path).expect("remove");
        assert!(start.unwritten_mib_flushed.is_some_and(|u| u >= QUIET_UNWRITTEN_MIB), "nothing to flush: {start:?}");
        assert!(start.unwritten_mib.is_some_and(|u| u < QUIET_UNWRITTEN_MIB), "{start:?}");
        assert!(!start.not_quiet.iter().any(|r| r.contains("page cache")), "{:?}", start.not_quiet);
    }
}
