//! `orders-bench demo --quick` with a person's own workload, end to end: a mixes file naming one
//! round (`checkout = read:60,product:30,insert:10`) and a document shape of its own (`--items
//! 10 --note-bytes 2000`). The round must run under its name with exactly those weights, over a
//! data set of that shape, and the report must name both; nothing the demo started may be left.
//! Needs the local stack running, as every database test (nextest runs it alone).

use crate::support;

use std::process::Command;
use support::{describe, drop_databases, ensure_services, marked_processes, read_json, repo, stack_running};

#[tokio::test]
async fn a_demo_of_their_own_mix_and_documents_names_both_in_its_report() {
    assert!(stack_running(), "the local stack must run (bash infra/local/stack.sh start), as for every database test");
    ensure_services(&["orders-pg", "orders-mongo"]);
    let out = support::scratch_dir("demo_custom_mix");
    let mixes = out.with_extension("mixes.txt");
    std::fs::write(&mixes, "# what our shop does\ncheckout = read:60, product:30, insert:10\n").expect("mixes file");
    let db = format!("demo_mix_test_{}", std::process::id());
    let output = tokio::task::spawn_blocking({
        let (out, mixes, db) = (out.clone(), mixes.clone(), db.clone());
        move || {
            Command::new(env!("CARGO_BIN_EXE_orders-bench"))
                .args(["demo", "--quick", "--no-build", "--items", "10", "--note-bytes", "2000", "--db-name", &db])
                .arg("--mixes-file")
                .arg(&mixes)
                .arg("--out")
                .arg(&out)
                .current_dir(repo())
                .output()
                .expect("run orders-bench demo")
        }
    })
    .await
    .expect("join");
    drop_databases(&db).await;
    assert!(output.status.success(), "{}", describe(&output));

    let result = read_json(&out.join("result.json"));
    let rounds = result["rounds"].as_array().expect("rounds");
    assert_eq!(rounds.len(), 1, "only the file's round: a mix of one's own replaces the named ones");
    let round = &rounds[0];
    assert_eq!(
        (round["name"].as_str(), round["mix"].as_str()),
        (Some("checkout"), Some("read:60,product:30,insert:10"))
    );
    assert_eq!(round["mix_weights"], serde_json::json!({"insert": 10, "product": 30, "read": 60}), "{round:#}");
    assert_eq!(
        (round["data_set"]["items_per_order"].as_u64(), round["data_set"]["note_bytes"].as_u64()),
        (Some(10), Some(2000))
    );
    assert!(out.join("checkout/result.json").is_file(), "the round's folder is named after it");
    let report = std::fs::read_to_string(out.join("report.md")).expect("report.md");
    assert!(report.contains("checkout (mix read:60,product:30,insert:10)"), "{report}");
    assert!(report.contains("10 items per order, note 2000 bytes"), "{report}");

    let left = marked_processes(&format!("ORDERS_BENCH_DEMO={}", out.display()));
    assert!(left.is_empty(), "processes the demo started are still running: {left:#?}");
    assert!(stack_running(), "the stack was running before the demo, so it must be running after it");
}
