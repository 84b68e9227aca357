//! `WORKER_THREADS` on a real service binary: `check_worker_threads` starts it with `1`, `2` and
//! `auto` in turn, and each time reads `"runtime"` back from `/diagnostics`, writes an order and
//! reads it back, and stops the process with SIGTERM; `assert_worker_threads_applied` then wants
//! the runtime asked for (a current-thread runtime for `1`), the order served and a clean exit.
//! A binary that ignored the setting, or could not serve, drain or stop on a current-thread
//! runtime, fails. Each service's binary tests run it.

use crate::TestApp;
use crate::faults::ServiceProcess;
use orders_core::sample::order_body;
use serde_json::{Value, json};
use std::process::ExitStatus;
use std::time::Duration;

/// What one start with one `WORKER_THREADS` value showed.
#[derive(Debug)]
pub struct RuntimeCheck {
    pub worker_threads: &'static str,
    /// `"runtime"` as the setting should make it.
    pub expected: Value,
    /// `"runtime"` of the binary's `/diagnostics` (`Null` when it did not answer 200).
    pub reported: Value,
    /// An order was created (201) and read back equal (200).
    pub served: bool,
    /// The exit after SIGTERM (`None`: still running 15 s later).
    pub exit: Option<ExitStatus>,
}

/// Starts `binary` with `env` plus each `WORKER_THREADS` value in turn (see the module notes).
pub async fn check_worker_threads(binary: &str, env: &[(&str, String)]) -> Vec<RuntimeCheck> {
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let cases = [
        ("1", json!({"flavor": "current_thread", "worker_threads": 1})),
        ("2", json!({"flavor": "multi_thread", "worker_threads": 2})),
        ("auto", json!({"flavor": "multi_thread", "worker_threads": cores})),
    ];
    let mut checks = Vec::new();
    for (worker_threads, expected) in cases {
        let mut owned: Vec<(String, String)> = env.iter().map(|(k, v)| ((*k).to_owned(), v.clone())).collect();
        owned.push(("WORKER_THREADS".into(), worker_threads.into()));
        let binary = binary.to_owned();
        let service = tokio::task::spawn_blocking(move || {
            let env: Vec<(&str, String)> = owned.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
            ServiceProcess::start(&binary, &env)
        })
        .await
        .expect("start the service");
        let app = TestApp::at(service.base_url());
        let diagnostics = app.get("/diagnostics").await;
        let reported = if diagnostics.status == 200 { diagnostics.json["runtime"].clone() } else { Value::Null };
        let created = app.post_json("/orders", &order_body(3, [4, 5, 6])).await;
        let location = created.headers.get("location").and_then(|l| l.to_str().ok()).unwrap_or("/orders/0");
        let fetched = app.get(location).await;
        let served = created.status == 201 && fetched.status == 200 && fetched.json == created.json;
        service.terminate();
        let exit = tokio::task::spawn_blocking(move || {
            let mut service = service;
            service.wait_exit(Duration::from_secs(15))
        })
        .await
        .expect("wait for the service");
        checks.push(RuntimeCheck { worker_threads, expected, reported, served, exit });
    }
    checks
}

/// Every start ran on the runtime asked for, served an order and exited cleanly after SIGTERM.
pub fn assert_worker_threads_applied(checks: &[RuntimeCheck]) {
    assert_eq!(checks.len(), 3, "{checks:?}");
    for check in checks {
        assert_eq!(check.reported, check.expected, "WORKER_THREADS={}: {check:?}", check.worker_threads);
        assert!(check.served, "WORKER_THREADS={}: an order written and read back: {check:?}", check.worker_threads);
        assert!(
            check.exit.is_some_and(|status| status.success()),
            "WORKER_THREADS={}: a clean exit after SIGTERM: {check:?}",
            check.worker_threads
        );
    }
}
