//! `orders-bench experiment` against services it did not start (`--pg-url`, `--mongo-url`), as on
//! droplets: here both services run in this process over test databases of their own. Without
//! `--apply` only the variant they run is measured and the others are listed as skipped; with
//! `--apply CMD` the command gets the variant's settings, and a variant `/diagnostics` does not
//! confirm stops the experiment instead of being measured under the wrong label. Budget flags,
//! which only the local stack's servers can take, are refused before anything runs.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use support::{MongoDatabase, describe, fresh_pg_database, read_json, spawn_services};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

async fn experiment(args: Vec<String>) -> Output {
    tokio::task::spawn_blocking(move || {
        Command::new(env!("CARGO_BIN_EXE_orders-bench"))
            .arg("experiment")
            .args(&args)
            .current_dir(repo())
            .output()
            .expect("run orders-bench experiment")
    })
    .await
    .expect("join")
}

fn deployed(pg: &str, mongo_app: &str, pg_url: &str, mongo: &MongoDatabase, out: &Path) -> Vec<String> {
    [
        "gin",
        "--quick",
        "--pg-url",
        pg,
        "--mongo-url",
        mongo_app,
        "--database-url",
        pg_url,
        "--mongodb-uri",
        &support::mongodb_uri(),
        "--mongodb-db",
        &mongo.name,
        "--out",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .chain([out.display().to_string()])
    .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_apply_only_the_variant_the_services_run_is_measured() {
    let pg_url = fresh_pg_database().await;
    let mongo = MongoDatabase::fresh();
    let (pg, mongo_app) = spawn_services(&pg_url, &mongo).await;
    let out = support::scratch_dir("experiment_deployed");
    let output = experiment(deployed(&pg.base_url, &mongo_app.base_url, &pg_url, &mongo, &out)).await;
    assert!(output.status.success(), "{}", describe(&output));
    let result = read_json(&out.join("result.json"));
    assert_eq!(result["ours"]["mode"], "deployed");
    let skipped = result["skipped"].as_array().expect("skipped");
    assert_eq!(skipped.len(), 4, "{skipped:#?}");
    for name in ["fastupdate-off", "force-custom-plan", "unprepared", "limit-parameter"] {
        assert!(skipped.iter().any(|s| s.as_str().is_some_and(|s| s.contains(&format!("`{name}`")))), "{name}");
    }
    let workloads: Vec<&str> =
        result["comparisons"].as_array().expect("rows").iter().filter_map(|c| c["workload"].as_str()).collect();
    assert!(workloads.contains(&"shop, defaults") && workloads.contains(&"insert, defaults"), "{workloads:?}");
    assert!(workloads.iter().all(|w| w.ends_with("defaults")), "only the variant they run: {workloads:?}");
    let report = std::fs::read_to_string(out.join("report.md")).expect("report.md");
    assert!(report.contains("without --apply the runner cannot change them"), "the report says so");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apply_gets_the_variant_and_a_variant_not_in_effect_stops_the_experiment() {
    let pg_url = fresh_pg_database().await;
    let mongo = MongoDatabase::fresh();
    let (pg, mongo_app) = spawn_services(&pg_url, &mongo).await;
    let out = support::scratch_dir("experiment_apply");
    let applied = out.join("applied.txt");
    let mut args = deployed(&pg.base_url, &mongo_app.base_url, &pg_url, &mongo, &out);
    args.extend([
        "--variants".into(),
        "fastupdate-off".into(),
        "--apply".into(),
        format!("echo {{}} >> {}", applied.display()),
    ]);
    let output = experiment(args).await;
    assert!(!output.status.success(), "the services ignored the setting: {}", describe(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("variant fastupdate-off is not in effect"), "{stderr}");
    assert!(stderr.contains("pg gin_fastupdate: on (expected off)"), "{stderr}");
    let line = std::fs::read_to_string(&applied).expect("the --apply command ran");
    assert_eq!(
        line.trim(),
        "PG_GIN_FASTUPDATE=off PG_PLAN_CACHE_MODE=auto PG_STATEMENT_MODE=prepared PG_LIMIT_MODE=literal"
    );
}

#[tokio::test]
async fn budget_flags_are_refused_for_databases_elsewhere() {
    let out = support::scratch_dir("experiment_deployed_budget");
    let mongo = MongoDatabase::fresh();
    // Nothing listens on these: the refusal comes before any connection.
    let mut args = deployed("http://127.0.0.1:9", "http://127.0.0.1:9", "postgres://127.0.0.1:9/x", &mongo, &out);
    args.extend(["--db-cpus".into(), "0.25".into()]);
    let output = experiment(args).await;
    assert!(!output.status.success(), "{}", describe(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("--db-cpus/--db-memory budget the local stack's database servers only"), "{stderr}");
    assert!(!out.join("result.json").exists(), "nothing ran");
}
