//! The targets an experiment measures, as its tables name them: the two engines the published
//! studies compared (every finding is about PostgreSQL jsonb and MongoDB side by side: S1's GIN
//! pending list, S2's durability and document sizes), and the hybrid layout (`pgh`,
//! orders-pg-hybrid), PostgreSQL with the hot fields in columns: S2's "counter in a column of its
//! own", which `doc-size` measures beside them. Which ones run is `--targets` (`Selection`):
//! PostgreSQL and MongoDB always, since every study row compares them; the hybrid only on a
//! PostgreSQL server of its own (`own_server`). Everything else in the
//! runner takes its targets from the backends (`orders_bench_engines`); every name here is the
//! backend's own constant.

use anyhow::{Result, bail};
use orders_bench_engines::{Identity, hybrid, mongo, postgres};
use serde::{Deserialize, Serialize};
use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Target {
    Pg,
    Mongo,
    Pgh,
}

impl Target {
    /// Every target, in the order the report shows them (the backends' order).
    pub const ALL: [Target; 3] = [Target::Pg, Target::Mongo, Target::Pgh];

    /// Its engine's names (`orders_bench_engines::Identity`).
    pub const fn identity(self) -> Identity {
        match self {
            Target::Pg => postgres::IDENTITY,
            Target::Mongo => mongo::IDENTITY,
            Target::Pgh => hybrid::IDENTITY,
        }
    }

    /// The key in result.json, the manifest and the load generators (`pg`, `mongo`, `pgh`).
    pub const fn name(self) -> &'static str {
        self.identity().name
    }

    /// The service's process name (`orders-pg`).
    pub const fn service(self) -> &'static str {
        self.identity().service
    }

    /// The database server's name (`postgres`, `mongod`, `postgres (hybrid)`), as the CPU
    /// sampler and the budgets name it.
    pub const fn database(self) -> &'static str {
        self.identity().server
    }

    /// Whether its engine is PostgreSQL: the PostgreSQL settings of a variant apply to it.
    pub const fn is_postgres(self) -> bool {
        matches!(self, Target::Pg | Target::Pgh)
    }

    /// The database's name in prose and chart legends.
    pub const fn label(self) -> &'static str {
        self.identity().label
    }

    /// Its colour in every chart.
    pub const fn color(self) -> &'static str {
        match self {
            Target::Pg => orders_bench_report::charts::PG_COLOR,
            Target::Mongo => orders_bench_report::charts::MONGO_COLOR,
            Target::Pgh => HYBRID_COLOR,
        }
    }

    fn parse(name: &str) -> Option<Target> {
        Self::ALL.into_iter().find(|t| t.name() == name)
    }
}

/// The hybrid's colour: the report's third colour, which a round's charts give the third target.
pub const HYBRID_COLOR: &str = "#c0392b";

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.name())
    }
}

/// The targets an experiment measures, in report order, and whether the user chose them (a
/// default the machine cannot run is dropped with a note; a choice it cannot run is an error).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selection {
    pub targets: Vec<Target>,
    pub chosen: bool,
}

impl Selection {
    /// `--targets` as given (empty: `default`). PostgreSQL and MongoDB must be among them: every
    /// row of every experiment compares the two, as the studies did.
    pub fn parse(given: &[String], default: &[Target]) -> Result<Self> {
        if given.is_empty() {
            return Ok(Self { targets: default.to_vec(), chosen: false });
        }
        let mut chosen = Vec::new();
        for name in given {
            let Some(target) = Target::parse(name.trim()) else {
                let known: Vec<&str> = Target::ALL.iter().map(|t| t.name()).collect();
                bail!("--targets: no target \"{name}\" (known: {})", known.join(", "));
            };
            chosen.push(target);
        }
        for needed in [Target::Pg, Target::Mongo] {
            if !chosen.contains(&needed) {
                bail!(
                    "--targets: {needed} must be among them: every row of an experiment compares PostgreSQL with \
                     MongoDB, as the studies did (add pgh for the hybrid layout)"
                );
            }
        }
        Ok(Self { targets: Target::ALL.into_iter().filter(|t| chosen.contains(t)).collect(), chosen: true })
    }

    pub fn includes(&self, target: Target) -> bool {
        self.targets.contains(&target)
    }

    /// Leaves the hybrid out when it was only a default (with a note), or stops when it was asked
    /// for.
    pub fn leave_out_hybrid(&mut self, why: &str, notes: &mut Vec<String>) -> Result<()> {
        if self.chosen {
            bail!("--targets pgh: {why}");
        }
        eprintln!("experiment: the hybrid layout (pgh) is left out: {why}");
        notes.push(format!("The hybrid layout (pgh), measured by default, was left out: {why}."));
        self.targets.retain(|t| *t != Target::Pgh);
        Ok(())
    }
}

/// The hybrid's database `url`, if it is on a server of its own, or why it cannot be measured: WAL
/// per update is read from the server's WAL position, which counts every database's writes (on
/// orders-pg's server the two layouts' WAL would be summed in both figures).
pub fn own_server(pg_url: &str, url: Option<&str>) -> std::result::Result<String, String> {
    let Some(url) = url else { return Err("no database of the hybrid layout was named (--database pgh=URL)".into()) };
    let server = |url: &str| {
        let config = orders_bench_engines::databases::pg_config(url).ok()?;
        let host = config.get_hosts().first().map(|h| format!("{h:?}"));
        Some((host, config.get_ports().first().copied().unwrap_or(5432)))
    };
    if server(pg_url).is_some_and(|s| Some(s) == server(url)) {
        return Err(format!(
            "its database ({}) is on orders-pg's PostgreSQL server, and WAL per update is read from the server's WAL \
             position, which would sum both layouts' writes: give it a server of its own",
            orders_bench_engines::databases::redact(url)
        ));
    }
    Ok(url.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_the_keys_of_existing_result_files() {
        assert_eq!(Target::ALL.map(Target::name), ["pg", "mongo", "pgh"]);
        assert_eq!(serde_json::to_string(&Target::ALL).expect("json"), r#"["pg","mongo","pgh"]"#);
        for target in Target::ALL {
            assert_eq!(serde_json::from_value::<Target>(target.name().into()).expect("parse"), target);
        }
        assert!(serde_json::from_value::<Target>("mysql".into()).is_err());
    }

    #[test]
    fn a_selection_keeps_report_order_and_needs_both_engines_of_the_studies() {
        let two = [Target::Pg, Target::Mongo];
        let default = Selection::parse(&[], &two).expect("default");
        assert_eq!((default.targets.as_slice(), default.chosen), (two.as_slice(), false));
        let given = |names: &[&str]| Selection::parse(&names.iter().map(|n| (*n).to_owned()).collect::<Vec<_>>(), &two);
        let three = given(&["pgh", "mongo", "pg"]).expect("three");
        assert_eq!((three.targets, three.chosen), (Target::ALL.to_vec(), true));
        let unknown = given(&["pg", "mongo", "mysql"]).expect_err("unknown").to_string();
        assert!(unknown.contains("\"mysql\"") && unknown.contains("pg, mongo, pgh"), "{unknown}");
        let alone = given(&["pg", "pgh"]).expect_err("no MongoDB").to_string();
        assert!(alone.contains("mongo must be among them"), "{alone}");
    }

    #[test]
    fn a_default_hybrid_that_cannot_run_is_left_out_with_a_note_a_chosen_one_stops() {
        let mut notes = Vec::new();
        let mut default = Selection::parse(&[], &Target::ALL).expect("default");
        default.leave_out_hybrid("no server", &mut notes).expect("left out");
        assert_eq!((default.targets.as_slice(), notes.len()), ([Target::Pg, Target::Mongo].as_slice(), 1));
        let mut chosen = Selection::parse(&["pg".into(), "mongo".into(), "pgh".into()], &[]).expect("chosen");
        let error = chosen.leave_out_hybrid("no server", &mut notes).expect_err("asked for").to_string();
        assert_eq!(error, "--targets pgh: no server");
    }

    #[test]
    fn the_hybrid_needs_a_server_other_than_orders_pgs() {
        let pg = "postgres://postgres@127.0.0.1:54432/x";
        assert_eq!(
            own_server(pg, Some("postgres://postgres@127.0.0.1:54433/x")).as_deref(),
            Ok("postgres://postgres@127.0.0.1:54433/x")
        );
        let shared = own_server(pg, Some("postgres://postgres@127.0.0.1:54432/y")).expect_err("one server");
        assert!(shared.contains("on orders-pg's PostgreSQL server"), "{shared}");
        assert!(own_server(pg, None).is_err());
    }
}
