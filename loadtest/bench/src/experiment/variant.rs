//! A variant of an experiment: the service settings it runs with (environment variables of
//! `orders-pg` and `orders-mongo`, as documented in docs/configuration.md; orders-pg-hybrid takes
//! orders-pg's), the settings `/diagnostics` must then report (so a variant is proven to be in
//! effect, not assumed), and whether the two sides acknowledge writes at the same point. Every
//! variant sets each knob of its experiment explicitly, so an earlier variant's setting cannot
//! linger (the GIN index keeps `fastupdate=off` until told otherwise).
//!
//! The PostgreSQL settings go to, and are read back from, every PostgreSQL target: a hybrid layout
//! acknowledging writes earlier than orders-pg would be S2's F4 again. The one exception is a
//! setting of an index the layout does not have (`gin_fastupdate`: the hybrid has no GIN index,
//! its service ignores `PG_GIN_FASTUPDATE` and reports none).

use crate::diagnostics::Snapshot;
use crate::experiment::engine::Target;
use orders_bench_engines::mongo::snapshot::MongoSnapshot;
use orders_bench_engines::postgres::snapshot::PgSnapshot;
use serde::Serialize;

/// A setting `/diagnostics` must report: `gin_fastupdate`, `plan_cache_mode`, `statement_mode`,
/// `synchronous_commit` (PostgreSQL: `side` is `Target::Pg`, and it is checked on every PostgreSQL
/// target); `w`, `j` (MongoDB's write concern).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Expect {
    pub side: Target,
    pub setting: &'static str,
    pub value: &'static str,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Variant {
    /// Short name: `defaults`, `fastupdate-off`, `pg-async`, ...
    pub name: &'static str,
    /// What a reader sees in the tables.
    pub label: &'static str,
    pub pg_env: Vec<(&'static str, &'static str)>,
    pub mongo_env: Vec<(&'static str, &'static str)>,
    pub expect: Vec<Expect>,
    /// Both sides acknowledge a write at the same point; false for the deliberately unfair ones.
    pub fair: bool,
}

/// Settings of an index a target's layout does not have, so it neither takes nor reports them.
fn lacks(target: Target, setting: &str) -> bool {
    target == Target::Pgh && setting == "gin_fastupdate"
}

impl Variant {
    /// `NAME=value ...`, PostgreSQL's first: what `--apply`'s `{}` becomes.
    pub fn assignments(&self) -> String {
        self.pg_env.iter().chain(&self.mongo_env).map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" ")
    }

    /// The settings `target`'s service starts with.
    pub fn env_for(&self, target: Target) -> &[(&'static str, &'static str)] {
        if target.is_postgres() { &self.pg_env } else { &self.mongo_env }
    }

    /// Settings that `/diagnostics` reports otherwise than this variant expects, for every target
    /// in `snapshot`, as "pg plan_cache_mode: auto (expected force_custom_plan)".
    pub fn mismatches(&self, snapshot: &Snapshot) -> Vec<String> {
        let present = Target::ALL.into_iter().filter(|t| snapshot.services.contains_key(t.name()));
        let checks = present.flat_map(|target| {
            let applies = move |e: &&Expect| e.side.is_postgres() == target.is_postgres() && !lacks(target, e.setting);
            self.expect.iter().filter(applies).map(move |e| (target, e))
        });
        checks
            .filter_map(|(target, e)| {
                let diagnostics = snapshot.get(target.name());
                let actual = if target.is_postgres() {
                    PgSnapshot::from_json(diagnostics).settings_map().remove(e.setting)
                } else {
                    let mongo = MongoSnapshot::from_json(diagnostics);
                    match e.setting {
                        "w" => mongo.write_w.clone(),
                        "j" => mongo.write_j.map(|j| j.to_string()),
                        _ => None,
                    }
                };
                (actual.as_deref() != Some(e.value)).then(|| {
                    format!(
                        "{target} {}: {} (expected {})",
                        e.setting,
                        actual.as_deref().unwrap_or("not reported"),
                        e.value
                    )
                })
            })
            .collect()
    }
}

pub const fn pg(setting: &'static str, value: &'static str) -> Expect {
    Expect { side: Target::Pg, setting, value }
}

pub const fn mongo(setting: &'static str, value: &'static str) -> Expect {
    Expect { side: Target::Mongo, setting, value }
}

/// The services' own defaults, both waiting for the disk: what `doc-size` runs.
pub fn both_wait() -> Variant {
    Variant {
        name: "defaults",
        label: "defaults (both wait for the disk)",
        pg_env: vec![("PG_SYNCHRONOUS_COMMIT", "on")],
        mongo_env: vec![("MONGO_WRITE_CONCERN", "majority"), ("MONGO_JOURNAL", "true")],
        expect: vec![pg("synchronous_commit", "on"), mongo("w", "majority"), mongo("j", "true")],
        fair: true,
    }
}

/// Keeps the variants whose names are in `only` (all when it is empty); an unknown name is an
/// error that lists the known ones.
pub fn select(all: Vec<Variant>, only: &[String]) -> anyhow::Result<Vec<Variant>> {
    if let Some(unknown) = only.iter().find(|name| !all.iter().any(|v| v.name == name.as_str())) {
        let known: Vec<&str> = all.iter().map(|v| v.name).collect();
        anyhow::bail!("--variants: no variant \"{unknown}\" (this experiment has {})", known.join(", "));
    }
    Ok(all.into_iter().filter(|v| only.is_empty() || only.iter().any(|o| o == v.name)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnostics::samples;
    use serde_json::json;

    #[test]
    fn a_variant_is_in_effect_only_when_diagnostics_say_so() {
        let variant = both_wait();
        let pair = |j| samples::both(0.0, samples::pg(0, 1, 0, 10), samples::mongo(10, j, "orders"));
        assert!(variant.mismatches(&pair(json!(true))).is_empty());
        assert_eq!(variant.mismatches(&pair(json!(false))), ["mongo j: false (expected true)"]);
        assert_eq!(variant.mismatches(&pair(json!(null))), ["mongo j: not reported (expected true)"]);
        assert_eq!(variant.assignments(), "PG_SYNCHRONOUS_COMMIT=on MONGO_WRITE_CONCERN=majority MONGO_JOURNAL=true");
    }

    #[test]
    fn postgresql_settings_are_checked_on_the_hybrid_too_but_for_an_index_it_lacks() {
        let mut hybrid = samples::pg(0, 1, 0, 10);
        hybrid["settings"]["synchronous_commit"] = json!("off");
        hybrid.as_object_mut().expect("object").remove("gin_index");
        let mut three = samples::both(0.0, samples::pg(0, 1, 0, 10), samples::mongo(10, json!(true), "orders"));
        three.services.insert("pgh".into(), hybrid);
        assert_eq!(both_wait().mismatches(&three), ["pgh synchronous_commit: off (expected on)"]);
        assert_eq!(both_wait().env_for(Target::Pgh), both_wait().pg_env.as_slice());
        let fastupdate = Variant {
            pg_env: vec![("PG_GIN_FASTUPDATE", "on")],
            expect: vec![pg("gin_fastupdate", "on")],
            ..both_wait()
        };
        assert!(fastupdate.mismatches(&three).is_empty(), "the hybrid has no GIN index to report on");
    }

    #[test]
    fn selecting_an_unknown_variant_names_the_known_ones() {
        let error = select(vec![both_wait()], &["nope".into()]).expect_err("unknown");
        assert!(error.to_string().contains("defaults"), "{error}");
        assert_eq!(select(vec![both_wait()], &[]).expect("all").len(), 1);
    }
}
