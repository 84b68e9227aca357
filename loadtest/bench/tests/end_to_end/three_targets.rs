//! A round over three targets: orders-pg, orders-mongo and orders-pg-hybrid (the hybrid layout,
//! `--database pgh=URL`, a PostgreSQL database of its own), all three services in this process
//! over a small seeded data set, two short steps of the native generator. The round must drive
//! all three at the same rates, judge each, pass the fairness gate with every check covering the
//! third (the pool check naming each pool setting once), and the
//! report must give the third target its own column group and its own table of what its
//! database did (its product search on `order_items_product`, not orders-pg's GIN index).

use crate::support;

use orders_http::HttpConfig;
use orders_pg::PgConfig;
use orders_pg_hybrid::HybridStore;
use orders_testkit::TestApp;
use support::{MongoDatabase, describe, fresh_pg_database, mongodb_uri, read_json, seed, spawn_services};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_round_drives_judges_and_reports_a_third_target() {
    let pg_url = fresh_pg_database().await;
    let pgh_url = fresh_pg_database().await;
    let mongo = MongoDatabase::fresh();
    let scratch = support::scratch_dir("three_targets");
    let manifest = scratch.join("dataset.json");
    let pgh = format!("pgh={pgh_url}");
    let seeded = seed(&["--orders", "2000", "--database", &pgh], &pg_url, &mongo, &manifest);
    assert!(seeded.status.success(), "{}", describe(&seeded));
    assert!(read_json(&manifest)["targets"]["pgh"].is_object(), "the manifest lists the third target");

    let (pg, mongo_app) = spawn_services(&pg_url, &mongo).await;
    let hybrid_store = HybridStore::connect(&PgConfig::with_url(&pgh_url)).await.expect("orders-pg-hybrid store");
    let hybrid = TestApp::spawn(hybrid_store, HttpConfig::for_tests()).await;

    let out = scratch.join("round");
    let mut round = std::process::Command::new(env!("CARGO_BIN_EXE_orders-bench"));
    round
        .args(["round", "--mix", "shop", "--repeats", "1", "--start-rate", "20", "--step", "20", "--max-rate", "40"])
        .args(["--step-duration", "2s", "--pg-url", &pg.base_url, "--mongo-url", &mongo_app.base_url])
        .args(["--target", &format!("pgh={}", hybrid.base_url), "--database", &pgh])
        .args(["--database-url", &pg_url, "--mongodb-uri", &mongodb_uri(), "--mongodb-db", &mongo.name])
        .arg("--manifest")
        .arg(&manifest)
        .arg("--out")
        .arg(&out);
    let output = tokio::task::spawn_blocking(move || round.output()).await.expect("join").expect("run the round");
    assert!(output.status.success(), "{}", describe(&output));

    let result = read_json(&out.join("result.json"));
    let round = &result["rounds"][0];
    let names: Vec<&str> =
        round["targets"].as_array().expect("targets").iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(names, ["pg", "mongo", "pgh"], "{:#}", round["targets"]);
    let repeat = &round["repeats"][0];
    for target in names {
        let steps = repeat["targets"][target]["steps"].as_array().expect("steps");
        assert_eq!(steps.len(), 2, "{target}: {steps:#?}");
        for step in steps {
            assert!(step["count"].as_u64().unwrap_or(0) > 0, "{target} was sent requests at every rate: {step:#}");
        }
    }
    assert_eq!(
        repeat["explain"]["pgh"]["write_requests"], repeat["explain"]["pg"]["write_requests"],
        "same mix, same writes"
    );
    // Both PostgreSQL layouts' table counters were read once the round's sessions had sent theirs,
    // or the repeat would say they may miss the last seconds (a sampler opened before the sessions
    // were ended was ended with them).
    let notes = repeat["notes"].as_array().expect("notes");
    assert!(!notes.iter().any(|n| n.as_str().is_some_and(|n| n.contains("table counters"))), "{notes:#?}");
    // Beside the other tests a repeat may be left out (other processes took a share of the
    // machine): then no target has a rate.
    let (_, typed) = orders_bench_model::result::read(&out.join("result.json")).expect("result.json");
    match typed[0].repeats[0].left_out() {
        None => assert!(round["max_rate"]["pgh"].is_object(), "the third target's rate: {:#}", round["max_rate"]),
        Some(why) => eprintln!("the round's one repeat was left out: {why}"),
    }
    let fairness = &repeat["fairness"];
    assert_eq!(fairness["ok"], true, "{fairness:#}");
    let checks = fairness["checks"].as_array().expect("checks");
    for check in checks {
        assert!(check["pgh"].is_string(), "every check has the third target's value: {check:#}");
    }
    let pools = checks.iter().find(|c| c["name"] == "connection pool").and_then(|c| c["note"].as_str());
    let note = pools.expect("the pool check");
    assert!(note.starts_with("PG_POOL_SIZE and MONGO_POOL_SIZE must match"), "each setting named once: {note}");
    let report = std::fs::read_to_string(out.join("report.md")).expect("report");
    assert!(report.contains("| PostgreSQL hybrid max rate, req/s | PostgreSQL hybrid CPU capacity |"), "{report}");
    let own_table =
        report.split("\n\n").find(|b| b.starts_with("| PostgreSQL hybrid | repeat 1 |")).expect("its table");
    assert!(own_table.contains("Index Only Scan on order_items_product"), "its own plan: {own_table}");
    let jsonb_table =
        report.split("\n\n").find(|b| b.starts_with("| PostgreSQL | repeat 1 |")).expect("orders-pg's table");
    assert!(!jsonb_table.contains("order_items_product"), "orders-pg's table is its own: {jsonb_table}");
}
