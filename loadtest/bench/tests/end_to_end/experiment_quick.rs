//! `orders-bench experiment gin|doc-size|durability --quick` end to end, as the README runs them:
//! the local stack (which must be running, as for every database test), the services started
//! with each variant's settings (doc-size's three: the hybrid layout on the stack's server of its
//! own), real rounds and closed loops against real databases, and the report. Each must exit 0, write result.json, report.md, report.html and its charts, and show
//! the study's figure and setup beside ours in every row of its table; durability's mixed
//! settings must be marked UNFAIR with the fairness gate's refusal; doc-size must give the hybrid
//! its rows with sane values, and gin must say from the hybrid's catalog whether F1 can happen to
//! it. No process it started may be
//! left: every one carries `ORDERS_BENCH_EXPERIMENT=<its folder>` in its environment. Like the
//! demo, it puts the stack's databases under its default budgets (nextest runs these tests alone,
//! one at a time, see .config/nextest.toml), every round records them, and the stack's own budgets
//! are put back.

use crate::support;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use support::{
    describe, drop_databases, ensure_services, marked_processes, read_json, repo, stack_budgets, stack_running,
};

const SERVICES: [&str; 3] = ["orders-pg", "orders-mongo", "orders-pg-hybrid"];

/// Runs the experiment in its quick size; returns its folder, result.json and printed output.
async fn run(name: &str, extra: &[&str]) -> (PathBuf, Value, String) {
    assert!(stack_running(), "the local stack must run (bash infra/local/stack.sh start), as for every database test");
    ensure_services(&SERVICES);
    let budgets_before = stack_budgets();
    let out = support::scratch_dir(&format!("experiment_{name}"));
    let db = format!("exp_test_{}_{}", std::process::id(), name.replace('-', "_"));
    let started = std::time::Instant::now();
    let output = tokio::task::spawn_blocking({
        let (out, db, name) = (out.clone(), db.clone(), name.to_owned());
        let extra: Vec<String> = extra.iter().map(|e| (*e).to_owned()).collect();
        move || {
            Command::new(env!("CARGO_BIN_EXE_orders-bench"))
                .args(["experiment", &name, "--quick", "--no-build", "--db-name", &db, "--out"])
                .arg(&out)
                .args(&extra)
                .current_dir(repo())
                .output()
                .expect("run orders-bench experiment")
        }
    })
    .await
    .expect("join");
    drop_databases(&db).await;
    assert!(output.status.success(), "{}", describe(&output));
    eprintln!("orders-bench experiment {name} --quick took {} s", started.elapsed().as_secs());
    let left = marked_processes(&format!("ORDERS_BENCH_EXPERIMENT={}", out.display()));
    assert!(left.is_empty(), "processes the experiment started are still running: {left:#?}");
    assert!(stack_running(), "the stack was running before the experiment, so it must be running after it");
    assert_eq!(stack_budgets(), budgets_before, "the experiment puts the stack's budgets back");
    for file in ["result.json", "report.md", "report.html", "dataset.json"] {
        assert!(out.join(file).is_file(), "{file} missing in {}", out.display());
    }
    let result = read_json(&out.join("result.json"));
    assert_eq!(result["schema"], "orders-bench/experiment/1");
    assert_eq!(result["experiment"], name);
    assert_every_round_ran_under_the_default_budgets(&out, &result, &budgets_before[0]);
    (out, result, String::from_utf8_lossy(&output.stdout).into_owned())
}

/// Every round's own result says the budgets it ran under: the default ones where the stack can
/// set budgets (`method` is not `none`), else none.
fn assert_every_round_ran_under_the_default_budgets(out: &Path, result: &Value, method: &str) {
    let rounds = result["rounds"].as_array().expect("rounds");
    assert!(!rounds.is_empty());
    for round in rounds {
        let dir = out.join(round["dir"].as_str().expect("dir"));
        let own = read_json(&dir.join("result.json"));
        let budget = own["rounds"][0]["budget"].as_str().unwrap_or_else(|| panic!("budgets in words: {own:#}"));
        if method == "none" {
            assert!(budget.starts_with("no budgets"), "{budget}");
        } else {
            assert!(budget.contains(" CPU and ") && budget.ends_with("quota period)"), "{budget}");
        }
        for repeat in own["rounds"][0]["repeats"].as_array().expect("repeats") {
            assert_the_cpu_budget_was_lifted_only_for_a_big_reset(repeat, method, &dir);
        }
    }
}

/// A repeat whose data were restored, or reloaded with 100 KB orders (200 of them, 20 MB: above
/// `fresh::LIFT_RELOAD_FROM_BYTES`), was prepared without the stack's CPU budgets (where it has
/// them) and ran its load under them again: every server's quota during the load is the one
/// lifted. Small reloads (200 orders of 1 or 10 KB, or of 40 items) keep them.
fn assert_the_cpu_budget_was_lifted_only_for_a_big_reset(repeat: &Value, method: &str, dir: &Path) {
    let start = &repeat["start"];
    let lifted = start["cpu_budget_lifted"].as_str();
    let name = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let big = start["reset"] == "restored" || (start["reset"] == "reloaded" && name.contains("100k"));
    if !big || method == "none" {
        assert_eq!(lifted, None, "nothing worth lifting in {name}: {start:#}");
        return;
    }
    let lifted: f64 =
        lifted.unwrap_or_else(|| panic!("a reset lifts the CPU budget: {start:#}")).parse().expect("cores");
    let budgets = repeat["cpu"]["budgets"].as_object().expect("budgets during the load");
    assert!(!budgets.is_empty());
    for (server, budget) in budgets {
        assert_eq!(budget["cpus"].as_f64(), Some(lifted), "{server}'s CPU budget put back before the load: {budget:#}");
    }
}

/// The rows of the table under "Ours beside the studies" in report.md.
fn table_rows(report: &str) -> Vec<Vec<String>> {
    let section = report.split("## Ours beside the studies").nth(1).expect("the comparison section");
    section
        .lines()
        .skip_while(|l| !l.starts_with("| finding |"))
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .map(|l| l.trim_matches('|').split(" | ").map(|c| c.trim().to_owned()).collect())
        .collect()
}

/// Every row names a finding, what ran, our figure, the study's figure and its setup, and a verdict.
fn assert_every_row_has_the_study_beside_ours(out: &Path, result: &Value, stdout: &str) -> Vec<Vec<String>> {
    let comparisons = result["comparisons"].as_array().expect("comparisons");
    assert!(!comparisons.is_empty());
    for c in comparisons {
        for key in ["finding", "workload", "ours", "study", "study_setup", "verdict"] {
            assert!(c[key].as_str().is_some_and(|v| !v.is_empty()), "{key} in {c:#}");
        }
        assert!(c["study_setup"].as_str().is_some_and(|s| s.starts_with('S') && s.contains(": ")), "{c:#}");
    }
    let report = std::fs::read_to_string(out.join("report.md")).expect("report.md");
    let rows = table_rows(&report);
    assert_eq!(rows.len(), comparisons.len(), "one table row per comparison:\n{report}");
    for row in &rows {
        assert_eq!(row.len(), 6, "{row:?}");
        assert!(row[3] != "–" && !row[3].is_empty(), "the study's figure in {row:?}");
        assert!(row[4].starts_with('S'), "the study's setup in {row:?}");
    }
    assert!(stdout.contains("| finding | workload | ours | study | study setup | verdict |"), "the table is printed");
    let html = std::fs::read_to_string(out.join("report.html")).expect("report.html");
    assert!(html.contains("<table>") && !html.contains("src="), "self-contained HTML");
    rows
}

#[tokio::test]
async fn gin_labels_every_variant_and_compares_each_with_s1() {
    // Three of the five variants: the baseline, the one with an insert round too, and the product
    // query's other form. The two left out differ from the defaults only in the variables they set
    // (`orders-pg`'s toggle tests read each of those back from the server).
    let (out, result, stdout) = run("gin", &["--variants", "defaults,fastupdate-off,limit-parameter"]).await;
    let rows = assert_every_row_has_the_study_beside_ours(&out, &result, &stdout);
    let variants: Vec<&str> =
        result["variants"].as_array().expect("variants").iter().filter_map(|v| v["name"].as_str()).collect();
    assert_eq!(variants, ["defaults", "fastupdate-off", "limit-parameter"]);
    for label in ["shop, defaults", "shop, fastupdate=off", "shop, LIMIT $2", "insert, fastupdate=off"] {
        assert!(rows.iter().any(|r| r[1] == label), "a row for {label}: {rows:#?}");
    }
    for variant in result["variants"].as_array().expect("variants") {
        let settings = &variant["shop"]["pg_figures"]["settings"];
        let name = variant["name"].as_str().expect("name");
        let expected = match name {
            "fastupdate-off" => ["off", "auto", "prepared", "literal"],
            "limit-parameter" => ["on", "auto", "prepared", "parameter"],
            _ => ["on", "auto", "prepared", "literal"],
        };
        let actual = ["gin_fastupdate", "plan_cache_mode", "statement_mode", "limit_mode"].map(|k| &settings[k]);
        assert_eq!(actual, expected.map(Value::from).each_ref(), "{name}");
        assert!(!variant["timeline"].as_array().expect("timeline").is_empty(), "{name}: the timeline");
    }
    let report = std::fs::read_to_string(out.join("report.md")).expect("report.md");
    assert!(report.contains("## Round") && report.contains("`shop (fastupdate=off)`"), "rounds labelled by variant");
    for chart in ["gin-pending-list", "gin-seq-scans"] {
        assert!(out.join("charts").join(format!("{chart}.svg")).is_file(), "{chart}");
    }
    let catalog = &result["hybrid_catalog"];
    assert_eq!(catalog["f1_possible"], false, "read from the hybrid's catalog: {catalog:#}");
    let methods: Vec<(&str, &str)> = catalog["indexes"]
        .as_array()
        .expect("indexes")
        .iter()
        .filter_map(|i| Some((i["index"].as_str()?, i["access_method"].as_str()?)))
        .collect();
    assert!(methods.contains(&("order_items_product", "btree")), "{methods:?}");
    let jsonb = catalog["jsonb_indexes"].as_array().expect("orders-pg's");
    assert!(jsonb.iter().any(|i| i["index"] == "orders_items" && i["access_method"] == "gin"), "{jsonb:?}");
    assert!(report.contains("the hybrid layout has no GIN index (catalog of") && stdout.contains("F1 cannot happen"));
}

#[tokio::test]
async fn doc_size_compares_every_size_with_s2_and_draws_the_log_log_charts() {
    // Three of the four sizes: the smallest and the largest of the log-x axis, and the other shape
    // (40 items); 10 KB only adds a point between them.
    let (out, result, stdout) = run("doc-size", &["--sizes", "1k,100k,40items"]).await;
    let rows = assert_every_row_has_the_study_beside_ours(&out, &result, &stdout);
    for size in ["1 KB", "100 KB", "40 items"] {
        assert!(
            rows.iter().any(|r| r[1].contains(&format!("status, closed loop, {size}"))
                || r[1].contains(&format!("staircase, {size}"))),
            "{size}: {rows:#?}"
        );
    }
    assert!(rows.iter().any(|r| r[3] == "42.3 KiB" && r[1].starts_with("status, 100 KB")), "S2's WAL at 100 KB");
    let sizes = result["variants"].as_array().expect("sizes");
    assert_eq!(sizes.len(), 3);
    for size in sizes {
        assert!(size["closed_loop"]["pg"].as_f64().is_some_and(|r| r > 0.0), "{size:#}");
        assert!(size["status"]["pg_figures"]["wal_bytes_per_write"].as_f64().is_some_and(|b| b > 0.0), "{size:#}");
    }
    let large = sizes.iter().find(|s| s["size"]["key"] == "100k").expect("100 KB");
    assert!(large["approx_doc_bytes"].as_u64().is_some_and(|b| (95_000..105_000).contains(&b)), "{large:#}");
    assert_the_hybrid_has_its_rows(&out, &result, &rows);
    for chart in ["doc-size-bytes", "doc-size-rates"] {
        let svg = std::fs::read_to_string(out.join("charts").join(format!("{chart}.svg"))).expect("chart");
        assert!(svg.contains(">100k<") && svg.contains("S2"), "a log-x chart with the study's line: {chart}");
    }
}

/// doc-size's hybrid (a default target): its closed loop and figures at every size, heap-only
/// status updates writing less WAL than jsonb's at 100 KB, its rows against S2's column, its own
/// table and the paragraph on what it is for.
fn assert_the_hybrid_has_its_rows(out: &Path, result: &Value, rows: &[Vec<String>]) {
    assert_eq!(result["ours"]["targets"], serde_json::json!(["pg", "mongo", "pgh"]), "{:#}", result["notes"]);
    for size in result["variants"].as_array().expect("sizes") {
        let key = &size["size"]["key"];
        assert!(size["closed_loop"]["pgh"].as_f64().is_some_and(|r| r > 0.0), "{key}: {:#}", size["closed_loop"]);
        let hybrid = &size["status"]["pgh_figures"];
        assert!(hybrid["hot_share"].as_f64().is_some_and(|s| s > 0.0), "{key}: HOT updates: {hybrid:#}");
        assert!(hybrid["wal_bytes_per_write"].as_f64().is_some_and(|b| b > 0.0), "{key}: its own WAL: {hybrid:#}");
        assert!(size["read"]["pgh"].is_object(), "{key}: its read staircase: {:#}", size["read"]);
    }
    let large = result["variants"].as_array().and_then(|s| s.iter().find(|s| s["size"]["key"] == "100k"));
    let status = &large.expect("100 KB")["status"];
    let (hybrid, jsonb) = (&status["pgh_figures"]["wal_bytes_per_write"], &status["pg_figures"]["wal_bytes_per_write"]);
    let less = hybrid.as_f64().zip(jsonb.as_f64()).is_some_and(|(h, j)| h < j);
    assert!(less, "WAL per update at 100 KB: hybrid {hybrid} against jsonb {jsonb}");
    for workload in
        ["hybrid: status, closed loop, over jsonb, 100 KB", "hybrid: status, closed loop, over MongoDB, 1 KB"]
    {
        assert!(rows.iter().any(|r| r[1].starts_with(workload) && r[4].starts_with("S2")), "{workload}: {rows:#?}");
    }
    assert!(rows.iter().any(|r| r[1].starts_with("hybrid: status, 100 KB") && r[3] == "260 B"), "S2's ~260 B");
    let report = std::fs::read_to_string(out.join("report.md")).expect("report.md");
    assert!(report.contains("## The hybrid layout per size"), "its table");
    assert!(report.contains("**The hybrid layout at 100 KB**") && report.contains("**Its price.**"), "{report}");
}

#[tokio::test]
async fn durability_runs_the_unfair_settings_knowingly_and_says_so_on_every_such_row() {
    // Two of the four settings: the services' defaults and one UNFAIR setting, which the "PG off
    // against on" rows compare (the other unfair one only sets other variables).
    let (out, result, stdout) = run("durability", &["--sizes", "100k", "--variants", "both-wait,pg-async"]).await;
    let rows = assert_every_row_has_the_study_beside_ours(&out, &result, &stdout);
    let comparisons = result["comparisons"].as_array().expect("comparisons");
    for c in comparisons {
        let workload = c["workload"].as_str().expect("workload");
        let mixed = workload.contains("synchronous_commit=off vs") || workload.contains("synchronous_commit=on vs");
        assert_eq!(c["unfair"], mixed, "{c:#}");
        if mixed {
            assert!(c["ours"].as_str().is_some_and(|o| o.contains("gate refused it")), "{c:#}");
        }
    }
    assert_eq!(rows.iter().filter(|r| r[1].starts_with("**UNFAIR**")).count(), 2, "one unfair setting × two mixes");
    assert!(rows.iter().any(|r| r[1].contains("PG off against on")), "pg-async compared with both-wait: {rows:#?}");
    let report = std::fs::read_to_string(out.join("report.md")).expect("report.md");
    assert!(report.contains("**UNFAIR COMPARISON, on purpose.**"), "{report}");
    for setting in result["variants"].as_array().expect("settings") {
        for w in setting["workloads"].as_array().expect("workloads") {
            let flushes = w["round"]["pg_figures"]["wal_flushes_per_write"].as_f64();
            let syncs = w["round"]["mongo_figures"]["journal_syncs_per_write"].as_f64();
            assert!(flushes.is_some() && syncs.is_some(), "flushes and syncs per write: {w:#}");
        }
    }
}

#[tokio::test]
async fn budget_measures_each_database_under_every_budget_and_puts_the_stack_back() {
    assert!(stack_running(), "the local stack must run (bash infra/local/stack.sh start), as for every database test");
    ensure_services(&SERVICES);
    let budgets_before = stack_budgets();
    let out = support::scratch_dir("experiment_budget");
    let db = format!("exp_test_{}_budget", std::process::id());
    let output = tokio::task::spawn_blocking({
        let (out, db) = (out.clone(), db.clone());
        move || {
            Command::new(env!("CARGO_BIN_EXE_orders-bench"))
                .args(["experiment", "budget", "--quick", "--no-build", "--budgets", "0.5", "--db-name", &db])
                .arg("--out")
                .arg(&out)
                .current_dir(repo())
                .output()
                .expect("run orders-bench experiment budget")
        }
    })
    .await
    .expect("join");
    drop_databases(&db).await;
    assert!(output.status.success(), "{}", describe(&output));
    assert_eq!(stack_budgets(), budgets_before, "the experiment puts the stack's budgets back");
    let left = marked_processes(&format!("ORDERS_BENCH_EXPERIMENT={}", out.display()));
    assert!(left.is_empty(), "processes the experiment started are still running: {left:#?}");
    let result = read_json(&out.join("result.json"));
    let regimes = result["variants"].as_array().expect("one entry per budget and mix");
    let seen: Vec<(&str, &str)> =
        regimes.iter().filter_map(|r| Some((r["budget"].as_str()?, r["mix"].as_str()?))).collect();
    assert_eq!(seen, [("all", "read"), ("all", "insert"), ("0.5", "read"), ("0.5", "insert")], "the reference first");
    for regime in regimes {
        let steps = regime["steps"].as_array().expect("steps");
        assert_eq!(steps.len(), 2, "both rates of the quick staircase: {regime:#}");
        for step in steps {
            for db in ["pg", "mongo"] {
                let us = step[db]["cpu_us_per_request"].as_f64().unwrap_or_else(|| panic!("{db}'s cost: {step:#}"));
                assert!(us > 1.0 && us < 1e6, "{db}: {us} µs a request");
            }
        }
        let budgeted = regime["budget"] != "all";
        assert_eq!(regime["shift"].is_f64(), budgeted, "a budget is held against the reference, which is not");
    }
    let method = &budgets_before[0];
    for round in result["rounds"].as_array().expect("rounds") {
        let own = read_json(&out.join(round["dir"].as_str().expect("dir")).join("result.json"));
        let words = own["rounds"][0]["budget"].as_str().expect("budget in words");
        let unbudgeted = round["dir"].as_str().is_some_and(|d| d.contains("-all-"));
        if method != "none" && !unbudgeted {
            assert!(words.starts_with("0.5 CPU"), "{words}");
        }
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("| mix | pool | budget | rate |") && stdout.contains("× the reference's"), "{stdout}");
}
