//! The command line of `orders-pg-hybrid`: the shared HTTP settings and orders-pg's Postgres
//! settings (`DATABASE_URL`, `PG_POOL_SIZE`, `PG_PLAN_CACHE_MODE`, `PG_STATEMENT_MODE`,
//! `PG_LIMIT_MODE`, `PG_SYNCHRONOUS_COMMIT`), parsed by the same clap definitions so the two
//! services cannot drift. `PG_GIN_FASTUPDATE` is accepted and ignored with a warning: this
//! layout has no GIN index.

use clap::Parser;
use orders_http::HttpConfig;
use orders_pg::PgConfig;

#[derive(Debug, Clone, Parser)]
#[command(
    name = "orders-pg-hybrid",
    version,
    about = "Order service on PostgreSQL, hot fields in typed columns beside jsonb (same HTTP API as orders-pg)",
    long_about = "Order service on PostgreSQL: customer id, status and updated_at in typed columns, product ids \
                  in a child table with a B-tree, the rest of each order in jsonb. Applies \
                  migrations/postgres-hybrid at start-up and serves the order API of docs/api.md. Every setting \
                  is a flag or an environment variable."
)]
pub struct Config {
    #[command(flatten)]
    pub http: HttpConfig,
    #[command(flatten)]
    pub pg: PgConfig,
}

impl Config {
    /// The store's settings with the shared limits (`POOL_TIMEOUT_MS`, `REQUEST_TIMEOUT_MS`).
    pub fn store(&self) -> PgConfig {
        PgConfig { limits: self.http.database_limits(), ..self.pg.clone() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use orders_pg::config::{LimitMode, PlanCacheMode, StatementMode};

    fn parse(args: &[&str]) -> Result<Config, clap::Error> {
        Config::try_parse_from(std::iter::once("orders-pg-hybrid").chain(args.iter().copied()))
    }

    #[test]
    fn the_postgres_toggles_are_orders_pgs() {
        let config = parse(&[
            "--pg-plan-cache-mode",
            "force_generic_plan",
            "--pg-statement-mode",
            "unprepared",
            "--pg-limit-mode",
            "parameter",
        ])
        .expect("valid");
        assert_eq!(config.pg.plan_cache_mode, Some(PlanCacheMode::ForceGenericPlan));
        assert_eq!(config.pg.statement_mode, StatementMode::Unprepared);
        assert_eq!(config.pg.limit_mode, LimitMode::Parameter);
        let error = parse(&["--pg-statement-mode", "sometimes"]).expect_err("invalid").to_string();
        assert!(error.contains("PG_STATEMENT_MODE"), "{error}");
    }
}
