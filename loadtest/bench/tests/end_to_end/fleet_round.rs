//! A round on two load machines, here two processes of one machine: `orders-bench agent` as the
//! follower and `orders-bench round --followers` as the leader, both services in this process over
//! a small seeded data set, two short steps. The round must run its k6 in two execution segments,
//! merge them (the merged step counts are the sum of the machines' counts, each machine offered
//! half of every rate) and keep both machines' summaries and figures. Skipped, saying so, only when
//! no k6 binary exists.

use crate::support;

use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use support::{MongoDatabase, describe, fresh_pg_database, mongodb_uri, read_json, seed, spawn_services};

/// The agent process, killed when the test ends however it ends.
struct Agent(Child);

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).expect("a free port")
}

async fn wait_healthy(url: &str) {
    let begun = Instant::now();
    while begun.elapsed() < Duration::from_secs(20) {
        if reqwest::get(format!("{url}/healthz")).await.is_ok_and(|r| r.status().is_success()) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the agent at {url} did not come up");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_load_machines_run_one_round_in_two_segments_merged_into_one_result() {
    let Some(k6) = support::k6_binary() else {
        eprintln!("SKIPPED: no k6 binary ($K6, .venv/bin/k6 or k6 on PATH)");
        return;
    };
    let pg_url = fresh_pg_database().await;
    let mongo = MongoDatabase::fresh();
    let scratch = support::scratch_dir("fleet_round");
    let manifest = scratch.join("dataset.json");
    let seeded = seed(&["--orders", "2000", "--target", "both"], &pg_url, &mongo, &manifest);
    assert!(seeded.status.success(), "{}", describe(&seeded));
    let (pg, mongo_app) = spawn_services(&pg_url, &mongo).await;

    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../k6/orders.js");
    let port = free_port();
    let agent_url = format!("http://127.0.0.1:{port}");
    let agent = Agent(
        Command::new(env!("CARGO_BIN_EXE_orders-bench"))
            .args(["agent", "--listen", &format!("127.0.0.1:{port}")])
            .arg("--k6")
            .arg(&k6)
            .arg("--script")
            .arg(&script)
            .arg("--work-dir")
            .arg(scratch.join("agent"))
            .stdout(Stdio::null())
            .spawn()
            .expect("start the agent"),
    );
    wait_healthy(&agent_url).await;

    let out = scratch.join("round");
    let mut round = Command::new(env!("CARGO_BIN_EXE_orders-bench"));
    round
        .args(["round", "--mix", "shop", "--repeats", "1", "--start-rate", "20", "--step", "20", "--max-rate", "40"])
        .args([
            "--step-duration",
            "3s",
            "--allow-mismatch",
            "--pg-url",
            &pg.base_url,
            "--mongo-url",
            &mongo_app.base_url,
        ])
        .args([
            "--generator",
            "k6",
            "--followers",
            &agent_url,
            "--database-url",
            &pg_url,
            "--mongodb-uri",
            &mongodb_uri(),
        ])
        .args(["--mongodb-db", &mongo.name])
        .arg("--manifest")
        .arg(&manifest)
        .arg("--k6")
        .arg(&k6)
        .arg("--script")
        .arg(&script)
        .arg("--out")
        .arg(&out);
    let output = tokio::task::spawn_blocking(move || round.output()).await.expect("join").expect("run the round");
    assert!(output.status.success(), "{}", describe(&output));
    drop(agent);

    let result = read_json(&out.join("result.json"));
    let repeat = &result["rounds"][0]["repeats"][0];
    let machines = repeat["fleet"]["machines"].as_array().expect("the repeat lists its load machines");
    assert_eq!(machines.len(), 2, "{:#}", repeat["fleet"]);
    assert_eq!(machines[0]["segment"], "0:1/2");
    assert_eq!(machines[1]["segment"], "1/2:1");
    for (step, rate) in [(0, 20.0), (1, 40.0)] {
        for machine in machines {
            assert_eq!(machine["steps"][step]["offered_rate"].as_f64(), Some(rate / 2.0), "{machine:#}");
        }
        for target in ["pg", "mongo"] {
            let merged = repeat["targets"][target]["steps"][step]["count"].as_u64().expect("merged count");
            let parts: u64 =
                machines.iter().map(|m| m["steps"][step]["targets"][target]["count"].as_u64().unwrap_or(0)).sum();
            assert_eq!(merged, parts, "{target} step {step}: the merged count is the machines' sum");
            let offered = f64::from(u32::try_from(merged).expect("count")) / 3.0;
            assert!((offered - rate).abs() <= rate * 0.2, "{target} step {step}: {offered} req/s offered in all");
            for machine in machines {
                let count = machine["steps"][step]["targets"][target]["count"].as_u64().unwrap_or(0);
                assert!(count > 0, "{target} step {step}: every machine sent requests: {machine:#}");
            }
        }
    }
    let parts = std::fs::read_dir(out.join("repeat-1/fleet")).expect("fleet folder").count();
    assert_eq!(parts, 2, "both machines' summaries are kept");
    let report = std::fs::read_to_string(out.join("report.md")).expect("report");
    assert!(report.contains("Load machines") && report.contains("**all machines**"), "{report}");
}
