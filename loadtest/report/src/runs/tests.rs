//! The runs page built from small result folders made here (a demo, a demo of a custom mix, an
//! experiment, a run one level down) beside folders that are not runs: a broken `result.json`, an
//! unknown schema, a folder of something else.

use super::*;
use crate::fixtures::round;
use orders_bench_model::result;

fn folder(results: &Path, name: &str, rounds: Vec<RoundResult>) -> PathBuf {
    let dir = results.join(name);
    std::fs::create_dir_all(&dir).expect("run folder");
    result::write(&dir, rounds).expect("result.json");
    dir
}

fn fixture(test: &str) -> PathBuf {
    let results = std::env::temp_dir().join(format!("orders-bench-runs-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&results);
    let at = |hour: u32| format!("2026-12-07T{hour:02}:00:00.000Z");
    let demo = folder(
        &results,
        "20261207T010000Z-demo",
        vec![
            round("read", "read", &at(1), &[(3000, 1000), (3100, 1000)]),
            round("shop", "shop", &at(1), &[(900, 1000)]),
        ],
    );
    std::fs::write(demo.join("report.html"), "<html></html>").expect("report");
    let custom = "read:60,product:30,insert:10";
    folder(
        &results,
        "20261207T020000Z-demo",
        vec![round(custom, custom, &at(2), &[(1500, 1000)]), round("read", "read", &at(2), &[(2000, 1000)])],
    );
    let experiment = results.join("20261207T030000Z-experiment-gin");
    folder(&experiment, "defaults-shop", vec![round("shop (defaults)", "shop", &at(3), &[(800, 900)])]);
    let json = serde_json::json!({
        "schema": "orders-bench/experiment/1", "experiment": "gin", "title": "S1 F1: the GIN pending list",
        "started_at": at(3), "commit": "def5678",
        "ours": {"machine": {"cores": 2, "os": "Linux test"}, "scale": {"size": "quick", "orders": 2000, "repeats": 1,
                 "step_seconds": 2.0}, "targets": ["pg", "mongo"]},
        "comparisons": [{"finding": "S1 F1", "workload": "shop", "ours": "450 scans", "study": "82 scans", "verdict": "reproduced"},
                        {"finding": "S1 F1", "workload": "insert", "verdict": "not_measured"}],
        "rounds": [{"name": "shop (defaults)", "dir": "defaults-shop"}, {"name": "gone", "dir": "missing"}]
    });
    std::fs::write(experiment.join("result.json"), json.to_string()).expect("experiment");
    let mut small = round("shop", "shop", &at(4), &[(5000, 4000)]);
    if let Some(data) = small.data_set.as_mut() {
        data.items_per_order = 3;
    }
    folder(&results.join("do"), "a1b2", vec![small]);
    for (name, text) in [("broken", "{ not json"), ("future", r#"{"schema": "orders-bench/result/9", "rounds": []}"#)] {
        std::fs::create_dir_all(results.join(name)).expect("dir");
        std::fs::write(results.join(name).join("result.json"), text).expect("file");
    }
    std::fs::create_dir_all(results.join("notes")).expect("foreign folder");
    std::fs::write(results.join("notes").join("todo.txt"), "not a run").expect("file");
    results
}

#[test]
fn every_folder_is_a_row_newest_first_and_the_broken_ones_say_why() {
    let results = fixture("rows");
    let written = write(&results).expect("written");
    assert_eq!((written.runs, written.unreadable), (7, 3), "4 runs, 3 folders that are not");
    let runs = scan(&results).expect("scan");
    let folders: Vec<&str> = runs.iter().map(|r| r.folder.as_str()).collect();
    assert_eq!(
        folders,
        [
            "do/a1b2",
            "20261207T030000Z-experiment-gin",
            "20261207T020000Z-demo",
            "20261207T010000Z-demo",
            "notes",
            "future",
            "broken"
        ]
    );
    let page = std::fs::read_to_string(&written.index).expect("index.html");
    assert!(page.contains("no result.json: not a run, or one still running"), "{page}");
    assert!(page.contains("result.json is not JSON"), "{page}");
    assert!(page.contains("result.json of an unknown schema: orders-bench/result/9"), "{page}");
    assert!(page.contains("<a href=\"20261207T010000Z-demo/report.html\">"), "the report is linked");
    assert!(page.contains("2026-12-07 01:00 UTC") && page.contains("2 cores, Linux test") && page.contains("abc1234"));
    assert!(page.contains("2,000 orders, 40 items, note 1024 B"), "the shape: {page}");
    assert!(page.contains("budget: 0.25 CPU and 4.0 GiB each"), "{page}");
    assert!(page.contains("<b>read:60,product:30,insert:10</b>"), "the custom mix named: {page}");
    assert!(page.contains("PostgreSQL / MongoDB 3.05"), "the ratio as the report gives it: {page}");
    assert!(page.contains("experiment gin") && page.contains("def5678"), "{page}");
    assert!(page.contains("1 reproduced, 1 not measured"), "{page}");
    assert!(page.contains("<li><b>reproduced</b>: S1 F1 (shop): ours 450 scans; the study 82 scans</li>"), "{page}");
    assert!(page.contains("1 round folder(s) could not be read"), "{page}");
}

#[test]
fn runs_with_a_round_in_common_get_a_comparison_page_linked_from_the_list() {
    let results = fixture("compare");
    std::fs::create_dir_all(results.join(COMPARE_DIR)).expect("compare");
    std::fs::write(results.join(COMPARE_DIR).join("old--gone.html"), "stale").expect("stale page");
    let written = write(&results).expect("written");
    let page = std::fs::read_to_string(&written.index).expect("index.html");
    // read: the two demos; shop: the first demo and do/a1b2. The experiment's round is "shop (defaults)".
    assert_eq!(written.comparisons, 2, "{page}");
    let demos = "compare/20261207T010000Z-demo--20261207T020000Z-demo.html";
    assert!(page.contains(&format!("<a href=\"{demos}\">with 20261207T010000Z-demo</a>")), "{page}");
    assert!(page.contains(&format!(r#""20261207T010000Z-demo|20261207T020000Z-demo":"{demos}""#)), "{page}");
    let comparison = std::fs::read_to_string(results.join(demos)).expect("comparison page");
    assert!(
        comparison.contains("<td>read</td><td>PostgreSQL</td><td>3,050 (3,000 / 3,100)</td><td>2,000 (2,000)</td>"),
        "{comparison}"
    );
    assert!(comparison.contains("href=\"../index.html\""), "{comparison}");
    assert!(!comparison.contains("data sets differ"), "both demos held the same data: {comparison}");
    assert!(page.contains("<option selected>20261207T010000Z-demo</option>"), "the newest pair is picked: {page}");
    assert!(page.contains("<option selected>do/a1b2</option>"), "{page}");
    assert!(!results.join(COMPARE_DIR).join("old--gone.html").exists(), "old pages are removed");
    let other_shape =
        std::fs::read_to_string(results.join("compare/20261207T010000Z-demo--do_a1b2.html")).expect("page");
    assert!(other_shape.contains("The data sets differ</strong>: A 2,000 orders, 40 items"), "{other_shape}");
    assert!(other_shape.contains("B 2,000 orders, 3 items"), "{other_shape}");
}

#[test]
fn text_from_a_result_file_is_escaped() {
    let results = std::env::temp_dir().join(format!("orders-bench-runs-escape-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&results);
    folder(&results, "x", vec![round("<script>alert(1)</script>", "read", "2026-12-07T01:00:00.000Z", &[(1, 1)])]);
    let page = std::fs::read_to_string(write(&results).expect("written").index).expect("index.html");
    assert!(page.contains("&lt;script&gt;alert(1)") && !page.contains("<script>alert"), "{page}");
}

#[test]
fn an_empty_folder_is_a_page_of_no_runs_and_a_missing_one_an_error() {
    let results = std::env::temp_dir().join(format!("orders-bench-runs-empty-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&results);
    assert!(write(&results).is_err(), "no folder");
    std::fs::create_dir_all(&results).expect("dir");
    let written = write(&results).expect("written");
    assert_eq!((written.runs, written.comparisons), (0, 0));
}
