//! The two engines the published studies compared, as the experiments that reproduce their
//! findings name them: every finding is about PostgreSQL and MongoDB side by side (S1's GIN pending
//! list, S2's durability and document sizes), so an experiment's table has a column for each.
//! Everything else in the runner takes its targets from the backends (`crate::backend`);
//! `name()` is the same key they carry.

use serde::{Deserialize, Serialize};
use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Target {
    Pg,
    Mongo,
}

impl Target {
    /// Every target, in the order the report shows them.
    pub const ALL: [Target; 2] = [Target::Pg, Target::Mongo];

    /// The key in result.json, the manifest and the load generators (`pg`, `mongo`).
    pub const fn name(self) -> &'static str {
        match self {
            Target::Pg => "pg",
            Target::Mongo => "mongo",
        }
    }

    /// The service's process name (`orders-pg`).
    pub const fn service(self) -> &'static str {
        match self {
            Target::Pg => "orders-pg",
            Target::Mongo => "orders-mongo",
        }
    }

    /// The database server's process name (`postgres`, `mongod`), as the CPU sampler and the
    /// budgets name it.
    pub const fn database(self) -> &'static str {
        match self {
            Target::Pg => "postgres",
            Target::Mongo => "mongod",
        }
    }

    /// The database's name in prose and chart legends.
    pub const fn label(self) -> &'static str {
        match self {
            Target::Pg => "PostgreSQL",
            Target::Mongo => "MongoDB",
        }
    }

    /// Its colour in every chart.
    pub const fn color(self) -> &'static str {
        match self {
            Target::Pg => orders_bench_report::charts::PG_COLOR,
            Target::Mongo => orders_bench_report::charts::MONGO_COLOR,
        }
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_the_keys_of_existing_result_files() {
        assert_eq!(Target::ALL.map(Target::name), ["pg", "mongo"]);
        assert_eq!(serde_json::to_string(&Target::ALL).expect("json"), r#"["pg","mongo"]"#);
        for target in Target::ALL {
            assert_eq!(serde_json::from_value::<Target>(target.name().into()).expect("parse"), target);
        }
        assert!(serde_json::from_value::<Target>("mysql".into()).is_err());
    }
}
