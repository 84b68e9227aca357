//! The fairness gate, run before every load run: a comparison is only worth reading when every
//! database acknowledges a write at the same point (all only once it is on disk, or none: study
//! S2's finding F4; and once the same number of servers hold it), holds the same data (the seeder's manifest lists every one, and every row count
//! equals it: exact counts when the runner reaches the databases, else the counters in
//! `/diagnostics`) and gets the same number of connections from its service (study S3's unequal
//! pools), and whose services run on the same kind of runtime (`WORKER_THREADS`). What each
//! database says comes from its backend (`Backend::facts`).
//! A failed check refuses the round unless `--allow-mismatch`, and then the report says so at the
//! top.

use crate::diagnostics::Snapshot;
use indexmap::IndexMap;
use orders_bench_engines::{Facts, Targets};
use orders_bench_model::fairness::{Check, Fairness};
use orders_dataset::manifest::Manifest;
use std::collections::BTreeMap;

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

/// One database as the gate sees it: its name, its facts and its exact count (when it was counted).
pub struct Seen {
    pub name: String,
    pub facts: Facts,
    pub counted: Option<u64>,
    /// The setting of its service's pool (`PG_POOL_SIZE`).
    pub pool_setting: &'static str,
}

/// Every target's facts from `snapshot` and its exact count (`Backend::count_orders`, taken first:
/// the count's own sequential scan must not land inside the run's figures).
pub async fn look(targets: &Targets, snapshot: &Snapshot, manifest: Option<&Manifest>) -> Vec<Seen> {
    let counts = futures_util::future::join_all(targets.iter().map(|t| t.backend.count_orders())).await;
    seen_all(targets, snapshot, manifest, counts)
}

/// Every target's facts from `snapshot`, beside its exact count (`counts`, in the targets' order).
fn seen_all(
    targets: &Targets,
    snapshot: &Snapshot,
    manifest: Option<&Manifest>,
    counts: impl IntoIterator<Item = Option<u64>>,
) -> Vec<Seen> {
    targets
        .iter()
        .zip(counts)
        .map(|(t, counted)| Seen {
            facts: t.backend.facts(snapshot.get(&t.name()), manifest),
            name: t.name(),
            counted,
            pool_setting: t.backend.pool_setting(),
        })
        .collect()
}

/// A check whose value per target is `value(seen)`; ok when `ok` says so of all of them.
fn check(seen: &[Seen], name: &str, value: impl Fn(&Seen) -> String, ok: bool, note: String) -> Check {
    let values: IndexMap<String, String> = seen.iter().map(|s| (s.name.clone(), value(s))).collect();
    Check { name: name.into(), values, ok, note }
}

/// Every value the same (and there is one).
fn all_equal<T: PartialEq>(values: &[Option<T>]) -> bool {
    values.first().is_some_and(|first| first.is_some() && values.iter().all(|v| v == first))
}

/// The one check a wait can turn: a data set counted from statistics that lag a freshly loaded
/// table. Durability, pool sizes and runtimes are settings, the same a second later.
const SETTLES: &str = "data set";

/// Whether waiting could make a failed gate pass: it failed on the data set alone.
pub fn may_settle(verdict: &Fairness) -> bool {
    !verdict.ok && verdict.checks.iter().filter(|c| !c.ok).all(|c| c.name == SETTLES)
}

/// `inserted`: orders the round inserted through each service (by target name) after seeding and
/// before its load (`RoundSpec::prefill`, the lead-in's inserts that succeeded), expected in that
/// database on top of the manifest's. They differ between targets only when a lead-in insert
/// failed on one of them (its failures are recorded, not fatal: `lead_in`).
pub fn check_all(manifest: Option<&Manifest>, inserted: &BTreeMap<String, u64>, seen: &[Seen]) -> Fairness {
    let mut checks = Vec::new();
    let waits: Vec<Option<bool>> = seen.iter().map(|s| s.facts.waits_for_disk).collect();
    checks.push(check(
        seen,
        "durability",
        |s| format!("{} ({})", words(s.facts.waits_for_disk), s.facts.durability),
        all_equal(&waits),
        "every target must acknowledge a write at the same point (study S2, finding F4)".into(),
    ));

    let count = |s: &Seen| s.counted.map(|c| c as f64).or(s.facts.estimated_orders);
    let added = |s: &Seen| inserted.get(&s.name).copied().unwrap_or(0);
    let expected = |s: &Seen| manifest.map(|m| (m.orders + added(s)) as f64);
    let in_all = manifest.is_some_and(|m| seen.iter().all(|s| m.targets.contains_key(&s.name)));
    let each_as_expected =
        in_all && seen.iter().all(|s| matches!((count(s), expected(s)), (Some(c), Some(e)) if close(c, e)));
    let since_seeding: Vec<String> = seen.iter().map(|s| format!("{} {}", s.name, added(s))).collect();
    let same_inserts = seen.iter().all(|s| added(s) == seen.first().map_or(0, added));
    checks.push(check(
        seen,
        SETTLES,
        |s| {
            let source = if s.counted.is_some() { "counted" } else { s.facts.estimate_source };
            format!("{} {} ({source})", count_text(count(s)), s.facts.unit)
        },
        each_as_expected,
        match manifest {
            None => "no data set manifest: seed every target with `orders-bench seed` (or pass --reseed)".into(),
            Some(_) if !in_all => "the manifest does not list every target's database: seed them all with the same profile".into(),
            Some(m) => format!(
                "the manifest says {} orders (seed {}, {} items, note {} bytes) in each{}; other counts mean other data \
                 or writes since seeding: reseed (--reseed)",
                m.orders,
                m.seed,
                m.items_per_order,
                m.note_bytes,
                match seen.first().map(added) {
                    Some(0) | None if same_inserts => String::new(),
                    Some(n) if same_inserts => format!(", and the round inserted {n} more before its load"),
                    _ => format!(
                        ", and the round inserted more before its load: {} (lead-in inserts failed on some target)",
                        since_seeding.join(", ")
                    ),
                }
            ),
        },
    ));

    let copies: Vec<Option<u32>> = seen.iter().map(|s| s.facts.copies).collect();
    checks.push(check(
        seen,
        "replication",
        |s| match s.facts.copies {
            Some(n) => format!("{n} server(s) hold a write when it is acknowledged ({})", s.facts.copies_words),
            None => format!("not reported ({})", s.facts.copies_words),
        },
        all_equal(&copies),
        "every target must acknowledge a write once the same number of servers hold it (a single server; or a \
         primary and one synchronous standby against a majority of three)"
            .into(),
    ));

    for (i, owner) in seen.iter().enumerate() {
        for (name, value, ok, note) in &owner.facts.own_checks {
            let values = seen
                .iter()
                .enumerate()
                .map(|(j, s)| (s.name.clone(), if i == j { value.clone() } else { "-".into() }))
                .collect();
            checks.push(Check { name: name.clone(), values, ok: *ok, note: note.clone() });
        }
    }

    let pools: Vec<Option<String>> = seen.iter().map(|s| s.facts.pool_size.clone()).collect();
    let mut settings: Vec<&str> = Vec::new();
    for setting in seen.iter().map(|s| s.pool_setting) {
        if !settings.contains(&setting) {
            settings.push(setting);
        }
    }
    checks.push(check(
        seen,
        "connection pool",
        |s| s.facts.pool_size.clone().unwrap_or_else(|| "not reported".into()),
        all_equal(&pools),
        format!("{} must match (study S3 compared 256 with 64)", settings.join(" and ")),
    ));
    let runtimes: Vec<Option<String>> = seen.iter().map(|s| s.facts.runtime.clone()).collect();
    checks.push(check(
        seen,
        "service runtime",
        |s| s.facts.runtime.clone().unwrap_or_else(|| "not reported".into()),
        runtimes.iter().all(|r| *r == runtimes[0]),
        "every service must run with the same WORKER_THREADS (a multi-threaded service costs more CPU per \
         request on a small machine)"
            .into(),
    ));
    Fairness { ok: checks.iter().all(|c| c.ok), checks }
}
#[cfg(test)]
pub mod tests {
    use super::*;
    use crate::diagnostics::samples;
    use orders_bench_engines::Targets;
    use orders_bench_engines::databases::Databases;
    use orders_core::Timestamp;
    use orders_dataset::Profile;
    use orders_dataset::manifest::TargetRecord;
    use serde_json::{Value, json};

    /// Both targets as the gate sees them from these `/diagnostics` answers and exact counts.
    pub fn seen(m: Option<&Manifest>, pg: Value, mongo: Value, counted: [Option<u64>; 2]) -> Vec<Seen> {
        let databases = Databases {
            database_url: "postgres://h/orders".into(),
            mongodb_uri: "mongodb://h".into(),
            mongodb_db: "orders".into(),
            ..Databases::default()
        };
        let targets = Targets::new(&databases, &[]).expect("targets");
        super::seen_all(&targets, &samples::both(0.0, pg, mongo), m, counted)
    }

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

    fn gate(m: Option<&Manifest>, pg: Value, mongo: Value) -> Fairness {
        check_all(m, &BTreeMap::new(), &seen(m, pg, mongo, [None, None]))
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

    /// orders-pg's `replication` on a Patroni primary whose standby `pg2` is synchronous (or
    /// none is), and orders-mongo's on the primary of a set of three writing `w: majority`.
    fn replicated(sync_standby: bool) -> (Value, Value) {
        let mut pg = samples::pg(0, 1, 0, 5000);
        let state = if sync_standby { "sync" } else { "async" };
        pg["replication"] = json!({"in_recovery": false, "synchronous_commit": "on",
            "synchronous_standby_names": if sync_standby { "pg2" } else { "" },
            "standbys": [{"name": "pg2", "sync_state": state}, {"name": "pg3", "sync_state": "async"}],
            "commit_waits_for": "the WAL flush on this server and the WAL flushed on the synchronous standby pg2"});
        let mut mongo = samples::mongo(5000, json!(true), "orders");
        mongo["replication"] = json!({"role": "primary", "members": 3, "acknowledged_by": 2,
            "write_waits_for": "a majority, 2 of 3 members"});
        (pg, mongo)
    }

    #[test]
    fn a_write_must_reach_as_many_servers_on_every_target_before_it_is_acknowledged() {
        let m = manifest(5000, &["pg", "mongo"]);
        let (pg, mongo) = replicated(true);
        let fairness = gate(Some(&m), pg, mongo);
        assert!(fairness.ok, "a synchronous standby against a majority of three: {:#?}", fairness.mismatches());
        let (pg, mongo) = replicated(false);
        let fairness = gate(Some(&m), pg, mongo);
        assert_eq!(fairness.mismatches().len(), 1, "{:#?}", fairness.mismatches());
        assert!(fairness.mismatches()[0].starts_with("replication: pg 1 server(s)"), "{:?}", fairness.mismatches());
        let (_, mongo) = replicated(true);
        assert!(!gate(Some(&m), samples::pg(0, 1, 0, 5000), mongo).ok, "a single server against a replica set");
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
        let lagging = check_all(Some(&m), &BTreeMap::new(), &seen(Some(&m), pg.clone(), mongo.clone(), [None, None]));
        assert!(!lagging.ok);
        let counted = check_all(Some(&m), &BTreeMap::new(), &seen(Some(&m), pg, mongo, [Some(2000), Some(2000)]));
        assert!(counted.ok, "{:?}", counted.mismatches());
        assert_eq!(counted.checks[1].values["pg"], "2000 rows (counted)");
    }

    #[test]
    fn each_database_is_expected_to_hold_the_orders_its_own_lead_in_inserted() {
        let m = manifest(20_000, &["pg", "mongo"]);
        let inserted = BTreeMap::from([("pg".to_string(), 1_040), ("mongo".to_string(), 1_100)]);
        let counted = |pg, mongo| {
            let (pg_doc, mongo_doc) = (samples::pg(0, 1, 0, pg), samples::mongo(mongo, json!(true), "orders"));
            check_all(Some(&m), &inserted, &seen(Some(&m), pg_doc, mongo_doc, [Some(pg as u64), Some(mongo as u64)]))
        };
        let as_inserted = counted(21_040, 21_100);
        assert!(as_inserted.ok, "{:?}", as_inserted.mismatches());
        assert!(as_inserted.checks[1].note.contains("pg 1040"), "{}", as_inserted.checks[1].note);
        assert!(!counted(21_100, 21_100).ok, "pg holds orders its service did not acknowledge");
        assert!(!counted(21_040, 21_040).ok, "mongo lost acknowledged orders");
    }

    #[test]
    fn only_a_lagging_data_set_is_worth_waiting_for() {
        let m = manifest(2000, &["pg", "mongo"]);
        let mongo = || samples::mongo(2000, json!(true), "orders");
        let lagging = gate(Some(&m), samples::pg(0, 1, 0, 2089), mongo());
        assert!(may_settle(&lagging), "{:?}", lagging.mismatches());
        assert!(!may_settle(&gate(Some(&m), samples::pg(0, 1, 0, 2000), mongo())), "passed: nothing to wait for");
        let mut pg_async = samples::pg(0, 1, 0, 2089);
        pg_async["settings"]["synchronous_commit"] = json!("off");
        let unfair = gate(Some(&m), pg_async, mongo());
        assert!(!may_settle(&unfair), "a setting stays: {:?}", unfair.mismatches());
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
        assert!(same.ok && check.values["pg"] == "current_thread, 1 worker thread", "{check:?}");
        mongo["runtime"] = runtime("multi_thread", 2);
        let different = gate(Some(&m), pg.clone(), mongo);
        assert!(!different.ok, "{:?}", different.checks);
        let unknown = gate(Some(&m), pg, samples::mongo(5000, json!(true), "orders"));
        assert!(!unknown.ok, "one service reporting its runtime and the other not cannot be compared");
    }
}
