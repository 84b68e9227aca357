//! The targets an experiment measures, as its tables name them: the two engines the published
//! studies compared (every finding is about PostgreSQL jsonb and MongoDB side by side: S1's GIN
//! pending list, S2's durability and document sizes), and the hybrid layout (`pgh`,
//! orders-pg-hybrid), PostgreSQL with the hot fields in columns: S2's "counter in a column of its
//! own", which `doc-size` measures beside them. Which ones run is `--targets` (`Selection`):
//! PostgreSQL and MongoDB always, since every study row compares them. Everything else in the
//! runner takes its targets from the backends (`crate::backend`); `name()` is the same key they
//! carry.

use anyhow::{Result, bail};
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

    /// The key in result.json, the manifest and the load generators (`pg`, `mongo`, `pgh`).
    pub const fn name(self) -> &'static str {
        match self {
            Target::Pg => "pg",
            Target::Mongo => "mongo",
            Target::Pgh => crate::backend::hybrid::NAME,
        }
    }

    /// The service's process name (`orders-pg`).
    pub const fn service(self) -> &'static str {
        match self {
            Target::Pg => "orders-pg",
            Target::Mongo => "orders-mongo",
            Target::Pgh => crate::backend::hybrid::SERVICE,
        }
    }

    /// The database server's name (`postgres`, `mongod`, `postgres (hybrid)`), as the CPU
    /// sampler and the budgets name it.
    pub const fn database(self) -> &'static str {
        match self {
            Target::Pg => "postgres",
            Target::Mongo => "mongod",
            Target::Pgh => crate::backend::hybrid::SERVER,
        }
    }

    /// Whether its engine is PostgreSQL: the PostgreSQL settings of a variant apply to it.
    pub const fn is_postgres(self) -> bool {
        matches!(self, Target::Pg | Target::Pgh)
    }

    /// The database's name in prose and chart legends.
    pub const fn label(self) -> &'static str {
        match self {
            Target::Pg => "PostgreSQL",
            Target::Mongo => "MongoDB",
            Target::Pgh => "PostgreSQL hybrid",
        }
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

    /// Leaves `target` out (a default the machine cannot run).
    pub fn without(&mut self, target: Target) {
        self.targets.retain(|t| *t != target);
    }
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
}
