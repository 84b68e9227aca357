//! `orders-bench demo --quick` end to end, as the README runs it, twice: the second run must give
//! the same answer within the quick demo's tolerance (below). The local stack (which must be
//! running, as for every database test, and must still be running afterwards), both services,
//! the four rounds and the report. It must exit 0, write result.json, report.md, report.html and
//! the charts with a maximum passing rate per target for every mix, and leave no process it
//! started: every one carries `ORDERS_BENCH_DEMO=<its folder>` in its environment, so none may be
//! found afterwards. The demo uses a database of its own, dropped at the end. It puts the stack's
//! databases under its default budgets (nextest runs it alone, see .config/nextest.toml), records
//! them in result.json and puts the stack's own budgets back.

use crate::support;

use std::path::Path;
use std::process::Command;
use support::{
    describe, drop_databases, ensure_services, marked_processes, read_json, repo, stack_budgets, stack_running,
};

/// Runs `demo --quick` into `out` on database `db` (dropped afterwards); its output and seconds.
async fn quick_demo(out: &Path, db: &str) -> (std::process::Output, u64) {
    let started = std::time::Instant::now();
    let output = tokio::task::spawn_blocking({
        let (out, db) = (out.to_path_buf(), db.to_owned());
        move || {
            Command::new(env!("CARGO_BIN_EXE_orders-bench"))
                .args(["demo", "--quick", "--no-build", "--db-name", &db, "--out"])
                .arg(&out)
                .current_dir(repo())
                .output()
                .expect("run orders-bench demo")
        }
    })
    .await
    .expect("join");
    let seconds = started.elapsed().as_secs();
    drop_databases(db).await;
    (output, seconds)
}

/// Per mix of a report.md's answer table: (PostgreSQL / MongoDB ratio, the answer). The ratio is
/// of the rates as the verdict compares them (`mix_verdict::compared_rates`: a target that failed
/// the first step counts at that step's rate, so its ratio is a bound, not a division by 0).
fn answers(out: &Path) -> Vec<(String, f64, String)> {
    use orders_bench_model::mix_verdict::compared_rates;
    use orders_bench_model::stats::median;
    let (_, rounds) = orders_bench_model::result::read(&out.join("result.json")).expect("result.json");
    let report = std::fs::read_to_string(out.join("report.md")).expect("report.md");
    // The headline table's "answer" column, found by its header.
    let header =
        report.lines().find(|l| l.starts_with("| mix | ") && l.contains(" | answer |")).expect("headline table");
    let column = header.split(" | ").position(|c| c.trim() == "answer").expect("answer column");
    rounds
        .iter()
        .map(|round| {
            let repeats: Vec<_> = round.repeats.iter().collect();
            let compared = compared_rates(&repeats, &round.targets(), &round.plan);
            let rate = |t: &str| median(&compared.iter().filter_map(|r| r.get(t).copied()).collect::<Vec<_>>());
            let ratio = rate("pg").unwrap_or(0.0) / rate("mongo").unwrap_or(1.0);
            let row = report.lines().find(|l| l.starts_with(&format!("| {} | ", round.name))).unwrap_or_default();
            let answer = row.split(" | ").nth(column).unwrap_or_default().trim().to_owned();
            (round.name.clone(), ratio, answer)
        })
        .collect()
}

#[tokio::test]
async fn the_quick_demo_writes_its_report_and_leaves_nothing_running() {
    assert!(stack_running(), "the local stack must run (bash infra/local/stack.sh start), as for every database test");
    ensure_services(&["orders-pg", "orders-mongo"]);
    let budgets_before = stack_budgets();
    let out = support::scratch_dir("demo_quick");
    let db = format!("demo_test_{}", std::process::id());
    let (output, seconds) = quick_demo(&out, &db).await;
    assert!(output.status.success(), "{}", describe(&output));
    // Three minutes on the machine it was tuned on (132 s a run in CI); four here, since the same
    // 2-core VM ran a third slower after the host paused and resumed it (the quick experiments
    // went from 225 s to over 300 s).
    assert!(seconds < 240, "--quick must finish in under four minutes, took {seconds} s");
    eprintln!("orders-bench demo --quick took {seconds} s");

    for file in ["result.json", "report.md", "report.html", "dataset.json", "logs/orders-pg.log"] {
        assert!(out.join(file).is_file(), "{file} missing in {}", out.display());
    }
    let charts: Vec<_> = std::fs::read_dir(out.join("charts")).expect("charts/").filter_map(|e| e.ok()).collect();
    assert_eq!(
        charts.len(),
        10,
        "every repeat (the first screen), the answer, and p95 and achieved charts for four mixes"
    );
    assert!(out.join("charts/repeats.svg").is_file(), "the first screen's chart of every repeat");
    for chart in charts {
        let svg = std::fs::read_to_string(chart.path()).expect("svg");
        assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\"") && svg.trim_end().ends_with("</svg>"));
    }
    let result = read_json(&out.join("result.json"));
    let rounds = result["rounds"].as_array().expect("rounds");
    let mixes: Vec<&str> = rounds.iter().filter_map(|r| r["mix"].as_str()).collect();
    assert_eq!(mixes, ["read", "insert", "status", "shop"]);
    let (_, typed) = orders_bench_model::result::read(&out.join("result.json")).expect("result.json");
    for (round, typed) in rounds.iter().zip(&typed) {
        // A repeat in which other processes took a share of the machine is left out, and the quick
        // demo has one repeat a mix: such a mix has no rates, and says why.
        let left_out: Vec<String> = typed.repeats.iter().filter_map(|r| r.left_out()).collect();
        if left_out.len() == typed.repeats.len() {
            eprintln!("{}: not measured: {}", typed.name, left_out.join("; "));
            assert!(round["max_rate"]["pg"].is_null(), "a left-out repeat has no rate: {round:#}");
        }
        for target in ["pg", "mongo"].into_iter().filter(|_| left_out.len() < typed.repeats.len()) {
            assert!(round["max_rate"][target]["median"].is_number(), "{target} in {}: {round:#}", round["mix"]);
        }
        assert_eq!(round["repeats"][0]["fairness"]["ok"], true, "{:#}", round["repeats"][0]["fairness"]);
        assert!(out.join(round["dir"].as_str().expect("dir")).join("repeat-1/load-summary.json").is_file());
        // The lead-in ran the round's own mix below its first step on both, unjudged, and every
        // request of it succeeded (the quick staircase starts at 200 req/s: 0.6 of it).
        let lead_in = &round["repeats"][0]["start"]["lead_in"];
        assert_eq!(lead_in["rate"], 120, "{lead_in:#}");
        for target in ["pg", "mongo"] {
            let answered = &lead_in["targets"][target];
            assert!(answered["requests"].as_u64().unwrap_or(0) >= 200, "{target}: {lead_in:#}");
            assert_eq!(answered["failures"], 0, "{target}: {lead_in:#}");
        }
        let budget = round["budget"].as_str().expect("the budgets in words");
        if budgets_before[0] == "none" {
            assert!(budget.starts_with("no budgets"), "{budget}");
            assert!(round["regime"].is_null(), "no budget, no regime check: {:#}", round["regime"]);
        } else {
            assert!(budget.contains(" CPU and ") && budget.ends_with("quota period)"), "{budget}");
            // The regime check measured both databases at both of its rates, under the budget and
            // under a quota of every core, and the kernel throttled nothing without a budget.
            let steps = round["regime"]["steps"].as_array().expect("the regime check in every round");
            assert_eq!(steps.len(), 2, "{steps:#?}");
            for step in steps {
                for regime in ["budget", "reference"] {
                    for target in ["pg", "mongo"] {
                        let us = step[regime][target]["cpu_us_per_request"].as_f64().unwrap_or(0.0);
                        assert!(us > 0.0, "{regime} {target} at {}: {step:#}", step["rate"]);
                    }
                }
            }
        }
    }
    let report = std::fs::read_to_string(out.join("report.md")).expect("report.md");
    assert_eq!(report.contains("**The regime**"), budgets_before[0] != "none", "the report states the regime");
    assert!(report.contains("| mix | PostgreSQL max rate, req/s | PostgreSQL CPU capacity |"), "{report}");
    for finding in ["**F1", "**F2", "**F3"] {
        assert!(report.contains(finding), "{finding} in {report}");
    }
    let html = std::fs::read_to_string(out.join("report.html")).expect("report.html");
    assert_eq!(html.matches("<svg").count(), 10, "charts inline");
    assert!(String::from_utf8_lossy(&output.stdout).contains("| read |"), "the table is printed");

    let left = marked_processes(&format!("ORDERS_BENCH_DEMO={}", out.display()));
    assert!(left.is_empty(), "processes the demo started are still running: {left:#?}");
    assert!(stack_running(), "the stack was running before the demo, so it must be running after it");
    assert_eq!(stack_budgets(), budgets_before, "the demo puts the stack's budgets back");

    // The same command again gives the same answer, within the quick demo's looser tolerance:
    // one repeat per mix on a staircase of 1.3x steps, so one run's rate may land a few steps from
    // the next run's. Measured in CI on a 2-core VM whose CPU per request had doubled during the
    // day: PostgreSQL's `status` passed 220 req/s and then 490 (three steps, p95 130 ms at 290 in
    // the first run), the ratio 1.00 then 2.23. So a ratio within a factor of 3 (three steps of one
    // target and one of the other: 1.3^4 = 2.86); and a winner named by both runs must be the same
    // one (a winner needs more than a step's difference within the run). A target below the first
    // step counts at the first step's rate, as the verdict compares it (see `answers`): in CI on 2026-12-05 both databases'
    // CPU per request rose 10-20% between the two runs and MongoDB's `insert` and `status` failed
    // the first step at 200 req/s (p95 56 ms) under their 0.25-core budget, where the first run
    // had passed 260 and 340: the ratio 1.69 then "PostgreSQL only" (340 against below 200, at
    // least 1.70), and both runs said "no clear winner".
    let again = support::scratch_dir("demo_quick_again");
    let (output, _) = quick_demo(&again, &format!("{db}_again")).await;
    assert!(output.status.success(), "{}", describe(&output));
    for ((mix, first, said), (_, second, said_again)) in answers(&out).into_iter().zip(answers(&again)) {
        let (low, high) = (first.min(second), first.max(second));
        assert!(low > 0.0 && high / low <= 3.0, "{mix}: PG/MongoDB {first:.2} then {second:.2}");
        let named = |a: &str| a.starts_with("PostgreSQL") || a.starts_with("MongoDB");
        if named(&said) && named(&said_again) {
            assert_eq!(said.split(' ').next(), said_again.split(' ').next(), "{mix}: {said} then {said_again}");
        }
    }
}
