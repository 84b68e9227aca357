//! The fairness gate, run before every k6 run: a comparison is only worth reading when both
//! databases acknowledge a write at the same point (both only once it is on disk, or neither: study
//! S2's finding F4), hold the same data (the seeder's manifest lists both, and both row counts equal
//! it: exact counts when the runner reaches the databases, else the counters in `/diagnostics`) and
//! get the same number of connections from their service (study S3's unequal pools), and whose
//! services run on the same kind of runtime (`WORKER_THREADS`).
//! A failed check refuses the round unless `--allow-mismatch`, and then the report says so at the
//! top.

use super::counts::Counts;
use crate::diagnostics::snapshot::{MongoSnapshot, PgSnapshot};
use orders_bench_model::fairness::{Check, Fairness};
use orders_bench_model::target::Target;
use orders_dataset::manifest::Manifest;

/// Whether Postgres makes a commit wait for the WAL flush: `fsync` on and `synchronous_commit`
/// anything but `off` (`local`, `remote_write`, `remote_apply` all flush locally first).
pub fn pg_waits_for_disk(pg: &PgSnapshot) -> Option<bool> {
    let fsync = pg.settings.fsync.as_ref()?;
    let commit = pg.settings.synchronous_commit.as_ref()?;
    Some(fsync == "on" && commit != "off")
}

/// Whether MongoDB acknowledges a write only once it is in the on-disk journal: `j: true` (with
/// journaling on), or `w: majority` without `j` on a replica set, where
/// `writeConcernMajorityJournalDefault` makes majority wait for the journal. `w: 0` never waits.
pub fn mongo_waits_for_disk(mongo: &MongoSnapshot) -> Option<bool> {
    if mongo.write_w.as_deref() == Some("0") || mongo.journal_enabled == Some(false) {
        return Some(false);
    }
    match mongo.write_j {
        Some(j) => Some(j),
        None => {
            let replica_set = mongo.topology.as_deref().is_some_and(|t| t.starts_with("replica set"));
            Some(replica_set && mongo.write_w.as_deref() == Some("majority"))
        }
    }
}

fn words(waits: Option<bool>) -> String {
    match waits {
        Some(true) => "waits for disk".into(),
        Some(false) => "does not wait for disk".into(),
        None => "not reported".into(),
    }
}

fn count_text(count: Option<f64>) -> String {
    count.map_or_else(|| "not reported".into(), |c| format!("{c:.0}"))
}

/// Counts within 0.1% (at least 5 rows): `n_live_tup` is maintained by the statistics system.
fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= (a.max(b) * 0.001).max(5.0)
}

/// `prefilled`: orders the round inserted through both services after seeding and before its
/// load (`RoundSpec::prefill`), expected in both on top of the manifest's.
pub fn check(
    manifest: Option<&Manifest>,
    prefilled: u64,
    pg: &PgSnapshot,
    mongo: &MongoSnapshot,
    exact: Counts,
) -> Fairness {
    let mut checks = Vec::new();
    let (pg_waits, mongo_waits) = (pg_waits_for_disk(pg), mongo_waits_for_disk(mongo));
    checks.push(Check {
        name: "durability".into(),
        pg: format!(
            "{} (synchronous_commit={}, fsync={})",
            words(pg_waits),
            pg.settings.synchronous_commit.as_deref().unwrap_or("?"),
            pg.settings.fsync.as_deref().unwrap_or("?")
        ),
        mongo: format!(
            "{} (w={}, j={}, journal {})",
            words(mongo_waits),
            mongo.write_w.as_deref().unwrap_or("unset"),
            mongo.write_j.map_or("unset".into(), |j| j.to_string()),
            match mongo.journal_enabled {
                Some(false) => "off",
                Some(true) => "on",
                None => "?",
            }
        ),
        ok: pg_waits.is_some() && pg_waits == mongo_waits,
        note: "both must acknowledge a write at the same point (study S2, finding F4)".into(),
    });

    let pg_count = exact.pg.map(|c| c as f64).or(pg.counter(|t| t.n_live_tup));
    let mongo_count = exact.mongo.map(|c| c as f64).or(mongo.count);
    let source = |exact: Option<u64>, estimate: &str| if exact.is_some() { "counted" } else { estimate }.to_owned();
    let seeded = manifest.map(|m| (m.orders + prefilled) as f64);
    let in_both = manifest.is_some_and(|m| Target::ALL.iter().all(|t| m.targets.contains_key(t.name())));
    checks.push(Check {
        name: "data set".into(),
        pg: format!("{} rows ({})", count_text(pg_count), source(exact.pg, "n_live_tup")),
        mongo: format!("{} documents ({})", count_text(mongo_count), source(exact.mongo, "collStats")),
        ok: match (pg_count, mongo_count, seeded) {
            (Some(p), Some(m), Some(s)) => in_both && close(p, m) && close(p, s) && close(m, s),
            _ => false,
        },
        note: match manifest {
            None => "no data set manifest: seed both with `orders-bench seed --target both` (or pass --reseed)".into(),
            Some(_) if !in_both => "the manifest does not list both databases: seed both with the same profile".into(),
            Some(m) => format!(
                "the manifest says {} orders (seed {}, {} items, note {} bytes) in both{}; other counts mean other data \
                 or writes since seeding: reseed (--reseed)",
                m.orders,
                m.seed,
                m.items_per_order,
                m.note_bytes,
                if prefilled > 0 { format!(", and the round inserted {prefilled} more before its load") } else { String::new() }
            ),
        },
    });

    let mongo_db_seeded =
        manifest.and_then(|m| m.targets.get(Target::Mongo.name())).map(|t| t.database.rsplit('/').next().unwrap_or(""));
    if let (Some(seeded_db), Some(served_db)) = (mongo_db_seeded, mongo.database.as_deref()) {
        checks.push(Check {
            name: "MongoDB database".into(),
            pg: "-".into(),
            mongo: format!("service reads {served_db}, manifest seeded {seeded_db}"),
            ok: seeded_db == served_db,
            note: "the service must read the database the manifest describes".into(),
        });
    }

    let pg_pool = pg.settings.pool_size.map(|p| p.to_string());
    let mongo_pool = mongo.pool_size.map(|p| format!("{p:.0}"));
    checks.push(Check {
        name: "connection pool".into(),
        pg: pg_pool.clone().unwrap_or_else(|| "not reported".into()),
        mongo: mongo_pool.clone().unwrap_or_else(|| "not reported".into()),
        ok: pg_pool.is_some() && pg_pool == mongo_pool,
        note: "PG_POOL_SIZE and MONGO_POOL_SIZE must match (study S3 compared 256 with 64)".into(),
    });
    checks.push(Check {
        name: "service runtime".into(),
        pg: pg.runtime.clone().unwrap_or_else(|| "not reported".into()),
        mongo: mongo.runtime.clone().unwrap_or_else(|| "not reported".into()),
        ok: pg.runtime == mongo.runtime,
        note: "both services must run with the same WORKER_THREADS (a multi-threaded service costs more CPU per \
               request on a small machine)"
            .into(),
    });
    Fairness { ok: checks.iter().all(|c| c.ok), checks }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnostics::snapshot::samples;
    use orders_core::Timestamp;
    use orders_dataset::Profile;
    use orders_dataset::manifest::TargetRecord;
    use serde_json::json;

    fn manifest(orders: u64, targets: &[&str]) -> Manifest {
        let profile =
            Profile { seed: 1, orders, customers: orders / 10, products: orders / 10, items: 3, note_bytes: 0 };
        let mut manifest = Manifest::new(&profile, 630);
        for target in targets {
            let database = if *target == "mongo" { "mongodb://127.0.0.1:57017/orders" } else { "postgres://h/orders" };
            manifest.targets.insert(
                (*target).into(),
                TargetRecord {
                    database: database.into(),
                    seeded_at: Timestamp::from_millis(0),
                    seconds: 1.0,
                    docs_per_sec: 1.0,
                    bytes_on_disk: 1,
                },
            );
        }
        manifest
    }

    fn gate(m: Option<&Manifest>, pg: serde_json::Value, mongo: serde_json::Value) -> Fairness {
        check(m, 0, &PgSnapshot::from_json(&pg), &MongoSnapshot::from_json(&mongo), Counts::default())
    }

    #[test]
    fn identical_durability_data_and_pools_pass() {
        let m = manifest(5000, &["pg", "mongo"]);
        let fairness = gate(Some(&m), samples::pg(0, 1, 0, 5000), samples::mongo(5000, json!(true), "orders"));
        assert!(fairness.ok, "{:#?}", fairness.mismatches());
    }

    #[test]
    fn postgres_without_synchronous_commit_against_a_journaled_mongo_is_refused() {
        let m = manifest(5000, &["pg", "mongo"]);
        let mut pg = samples::pg(0, 1, 0, 5000);
        pg["settings"]["synchronous_commit"] = json!("off");
        let fairness = gate(Some(&m), pg, samples::mongo(5000, json!(true), "orders"));
        assert!(!fairness.ok);
        assert_eq!(fairness.mismatches().len(), 1);
        assert!(fairness.mismatches()[0].starts_with("durability: pg does not wait"), "{:?}", fairness.mismatches());
    }

    #[test]
    fn mongo_without_j_on_a_standalone_does_not_wait_for_the_journal() {
        let m = manifest(5000, &["pg", "mongo"]);
        let fairness = gate(Some(&m), samples::pg(0, 1, 0, 5000), samples::mongo(5000, json!(null), "orders"));
        assert!(!fairness.ok);
        let mut both_lax = samples::pg(0, 1, 0, 5000);
        both_lax["settings"]["fsync"] = json!("off");
        assert!(gate(Some(&m), both_lax, samples::mongo(5000, json!(false), "orders")).ok, "equally lax is fair");
    }

    #[test]
    fn different_counts_a_missing_target_or_another_database_are_refused() {
        let both = manifest(5000, &["pg", "mongo"]);
        let ok_mongo = || samples::mongo(5000, json!(true), "orders");
        assert!(!gate(Some(&both), samples::pg(0, 1, 0, 5600), ok_mongo()).ok, "inserts since seeding");
        assert!(gate(Some(&both), samples::pg(0, 1, 0, 5004), ok_mongo()).ok, "statistics lag a few rows");
        assert!(!gate(Some(&manifest(5000, &["pg"])), samples::pg(0, 1, 0, 5000), ok_mongo()).ok);
        assert!(!gate(None, samples::pg(0, 1, 0, 5000), ok_mongo()).ok);
        let other_db = gate(Some(&both), samples::pg(0, 1, 0, 5000), samples::mongo(5000, json!(true), "scratch"));
        assert!(other_db.mismatches().iter().any(|m| m.starts_with("MongoDB database")), "{other_db:?}");
    }

    #[test]
    fn exact_counts_win_over_lagging_statistics() {
        let m = manifest(2000, &["pg", "mongo"]);
        let (pg, mongo) = (samples::pg(0, 1, 0, 2089), samples::mongo(2000, json!(true), "orders"));
        let lagging =
            check(Some(&m), 0, &PgSnapshot::from_json(&pg), &MongoSnapshot::from_json(&mongo), Counts::default());
        assert!(!lagging.ok);
        let exact = Counts { pg: Some(2000), mongo: Some(2000) };
        let counted = check(Some(&m), 0, &PgSnapshot::from_json(&pg), &MongoSnapshot::from_json(&mongo), exact);
        assert!(counted.ok, "{:?}", counted.mismatches());
        assert_eq!(counted.checks[1].pg, "2000 rows (counted)");
    }

    #[test]
    fn unequal_pools_are_refused() {
        let m = manifest(5000, &["pg", "mongo"]);
        let mut pg = samples::pg(0, 1, 0, 5000);
        pg["settings"]["pool_size"] = json!(64);
        assert!(!gate(Some(&m), pg, samples::mongo(5000, json!(true), "orders")).ok);
    }

    #[test]
    fn services_on_different_runtimes_are_refused() {
        let m = manifest(5000, &["pg", "mongo"]);
        let runtime = |flavor: &str, threads: u64| json!({"flavor": flavor, "worker_threads": threads});
        let (mut pg, mut mongo) = (samples::pg(0, 1, 0, 5000), samples::mongo(5000, json!(true), "orders"));
        pg["runtime"] = runtime("current_thread", 1);
        mongo["runtime"] = runtime("current_thread", 1);
        let same = gate(Some(&m), pg.clone(), mongo.clone());
        let check = same.checks.iter().find(|c| c.name == "service runtime").expect("checked");
        assert!(same.ok && check.pg == "current_thread, 1 worker thread", "{check:?}");
        mongo["runtime"] = runtime("multi_thread", 2);
        let different = gate(Some(&m), pg.clone(), mongo);
        assert!(!different.ok, "{:?}", different.checks);
        let unknown = gate(Some(&m), pg, samples::mongo(5000, json!(true), "orders"));
        assert!(!unknown.ok, "one service reporting its runtime and the other not cannot be compared");
    }
}
