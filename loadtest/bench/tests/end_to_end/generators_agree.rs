//! Both load generators against the same stand-in services at the same moment: `orders-bench
//! load` and k6 with `loadtest/k6/orders.js`, 100 requests/s per target for 5 s, a mix of every
//! endpoint, answers after a fixed 20 ms (so the median is that delay plus what each generator
//! adds). They must agree: achieved rate within 2%, p50 within 20%; and every request either one
//! sent must be an endpoint of `loadtest/mixes.json` with its method, a path with ids from the
//! manifest's ranges, and a JSON body where the endpoint has one. Skipped, saying so, only when no
//! k6 binary exists.

use crate::support;

use serde_json::Value;
use std::process::Command;
use std::time::Duration;
use support::stub::{self, Seen, Stub};
use support::{describe, read_json};

const DELAY: Duration = Duration::from_millis(20);
const MIX: &str = "read:1,customer:1,product:1,insert:1,status:1";

fn targets(pair: &(Stub, Stub)) -> String {
    format!("pg={},mongo={}", pair.0.url, pair.1.url)
}

/// Every request is a route of the API with the right body; returns the count per endpoint.
fn check_requests(generator: &str, seen: &[Seen]) -> std::collections::BTreeMap<&'static str, usize> {
    let mut counts = std::collections::BTreeMap::new();
    for request in seen {
        let what = format!("{generator}: {} {}", request.method, request.path);
        assert_ne!(stub::status_for(&request.method, &request.path), 404, "{what} is no route of the API");
        let id: u64 = request.path.split('/').nth(2).and_then(|s| s.parse().ok()).unwrap_or(0);
        let endpoint = match (request.method.as_str(), request.path.split('/').nth(1)) {
            ("GET", Some("orders")) => "read",
            ("GET", Some("customers")) => "customer",
            ("GET", Some("products")) => "product",
            ("POST", _) => "insert",
            _ => "status",
        };
        if endpoint != "insert" {
            let max = if matches!(endpoint, "read" | "status") { 1000 } else { 100 };
            assert!((1..=max).contains(&id), "{what}: id outside the manifest's range");
        }
        if matches!(endpoint, "insert" | "status") {
            assert_eq!(request.content_type.as_deref(), Some("application/json"), "{what}");
            let body: Value = serde_json::from_slice(&request.body).unwrap_or_else(|e| panic!("{what}: {e}"));
            if endpoint == "insert" {
                assert_eq!(body["items"].as_array().map(Vec::len), Some(3), "{what}: {body}");
                assert_eq!(body["note"].as_str().map(str::len), Some(200), "{what}: the manifest's note size");
                assert!(body.get("id").is_none(), "{what}: the service assigns ids");
            } else {
                let status = body["status"].as_str().unwrap_or("");
                assert!(["pending", "paid", "shipped", "delivered", "cancelled"].contains(&status), "{what}: {body}");
            }
        } else {
            assert!(request.body.is_empty(), "{what}: a GET has no body");
        }
        if request.path.starts_with("/customers/") {
            assert!(request.path.ends_with("/orders?limit=20"), "{what}");
        }
        if request.path.starts_with("/products/") {
            assert!(request.path.ends_with("/orders?limit=10"), "{what}");
        }
        *counts.entry(endpoint).or_default() += 1;
    }
    counts
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_native_generator_and_k6_agree_on_rate_latency_and_requests() {
    let Some(k6) = support::k6_binary() else {
        eprintln!(
            "SKIPPED: no k6 binary ($K6, .venv/bin/k6 or k6 on PATH); `bash infra/local/stack.sh install` provides it"
        );
        return;
    };
    let scratch = support::scratch_dir("generators_agree");
    let manifest = scratch.join("dataset.json");
    stub::manifest(&manifest, 1000);
    let for_native = (stub::start(DELAY).await, stub::start(DELAY).await);
    let for_k6 = (stub::start(DELAY).await, stub::start(DELAY).await);

    let native_summary = scratch.join("load-summary.json");
    let mut native = Command::new(env!("CARGO_BIN_EXE_orders-bench"));
    native
        .args(["load", "--mix", MIX, "--rate", "100", "--duration", "5s", "--targets"])
        .arg(targets(&for_native))
        .arg("--manifest")
        .arg(&manifest)
        .arg("--summary")
        .arg(&native_summary);
    let k6_summary = scratch.join("k6-summary.json");
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../k6/orders.js");
    let mut k6_run = Command::new(&k6);
    k6_run
        .args(["run", "--no-usage-report", "--no-color", "--quiet"])
        .arg(&script)
        .env("TARGETS", targets(&for_k6))
        .env("MIX", MIX)
        .env("RATE", "100")
        .env("DURATION", "5s")
        .env("MANIFEST", &manifest)
        .env("SUMMARY", &k6_summary)
        .current_dir(&scratch);
    // Both at the same moment, while this runtime serves the four stubs.
    let (native, k6_run) = tokio::join!(
        tokio::task::spawn_blocking(move || native.output()),
        tokio::task::spawn_blocking(move || k6_run.output())
    );
    let native = native.expect("join").expect("run orders-bench load");
    let k6_run = k6_run.expect("join").expect("run k6");
    assert!(native.status.success(), "{}", describe(&native));
    assert!(k6_run.status.success(), "{}", describe(&k6_run));

    let (native_summary, k6_summary) = (read_json(&native_summary), read_json(&k6_summary));
    assert_eq!(native_summary["load_generator"]["kind"], "native");
    assert_eq!(k6_summary["load_generator"]["kind"], "k6");
    for target in ["pg", "mongo"] {
        let (n, k) = (&native_summary["targets"][target], &k6_summary["targets"][target]);
        let figure = |s: &Value, name: &str| s[name].as_f64().unwrap_or_else(|| panic!("{target} {name}: {s}"));
        let (n_rate, k_rate) = (figure(n, "achieved_rate"), figure(k, "achieved_rate"));
        let (n_p50, k_p50) = (figure(&n["latency_ms"], "p50"), figure(&k["latency_ms"], "p50"));
        eprintln!("{target}: achieved native {n_rate} / k6 {k_rate} req/s, p50 native {n_p50} / k6 {k_p50} ms");
        assert!((n_rate - k_rate).abs() <= 0.02 * k_rate, "{target}: achieved {n_rate} vs k6 {k_rate}");
        assert!((n_p50 - k_p50).abs() <= 0.2 * k_p50, "{target}: p50 {n_p50} vs k6 {k_p50} ms");
        assert!(n_p50 >= DELAY.as_secs_f64() * 1000.0, "{target}: the stub's delay is a floor: {n_p50}");
        assert_eq!((n["failures"].as_u64(), k["failures"].as_u64()), (Some(0), Some(0)), "{target}");
    }
    for (generator, pair) in [("native", &for_native), ("k6", &for_k6)] {
        for stub in [&pair.0, &pair.1] {
            let counts = check_requests(generator, &stub.requests());
            let total: usize = counts.values().sum();
            assert!(total >= 490, "{generator}: {total} requests: {counts:?}");
            for (endpoint, count) in &counts {
                // One fifth each; 500 draws stay within ±8 points of it (binomial, > 4 sigma).
                let share = *count as f64 / total as f64;
                assert!((0.12..=0.28).contains(&share), "{generator} {endpoint}: {counts:?}");
            }
            assert_eq!(counts.len(), 5, "{generator}: every endpoint of the mix: {counts:?}");
        }
    }
}
