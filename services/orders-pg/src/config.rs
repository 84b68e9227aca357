//! Settings of the Postgres service: the connection, the pool, and the knobs the benchmark
//! toggles (`PG_GIN_FASTUPDATE`, `PG_PLAN_CACHE_MODE`, `PG_STATEMENT_MODE`, `PG_LIMIT_MODE`) plus
//! `PG_SYNCHRONOUS_COMMIT`. A bad value stops start-up with clap's message, which names the
//! variable and lists the allowed values.

use clap::{Args, Parser, ValueEnum};
use orders_http::{DatabaseLimits, HttpConfig};

#[derive(Debug, Clone, Parser)]
#[command(
    name = "orders-pg",
    version,
    about = "Order service on PostgreSQL jsonb (same HTTP API as orders-mongo)",
    long_about = "Order service on PostgreSQL jsonb. Applies migrations/postgres at start-up and serves the \
                  order API of docs/api.md. Every setting is a flag or an environment variable."
)]
pub struct Config {
    #[command(flatten)]
    pub http: HttpConfig,
    #[command(flatten)]
    pub pg: PgConfig,
}

#[derive(Debug, Clone, Args)]
pub struct PgConfig {
    /// PostgreSQL connection URL; TLS is its `sslmode` (disable, prefer, require, verify-ca,
    /// verify-full) with `sslrootcert=<CA file>`, as in libpq. Without `sslmode`: no TLS.
    #[arg(
        long = "database-url",
        env = "DATABASE_URL",
        value_name = "DATABASE_URL",
        default_value = "postgres://postgres@127.0.0.1:5432/orders",
        hide_env_values = true,
        value_parser = parse_database_url
    )]
    pub database_url: String,

    /// Reads (get, list by customer, list by product) from a second pool on this URL, e.g. a
    /// replicated deployment's standbys (`target_session_attrs=read-only`,
    /// `load_balance_hosts=random`); writes stay on DATABASE_URL. Unset: every statement on one pool.
    #[arg(
        long = "read-database-url",
        env = "READ_DATABASE_URL",
        value_name = "READ_DATABASE_URL",
        hide_env_values = true,
        value_parser = parse_database_url
    )]
    pub read_database_url: Option<String>,

    /// Largest number of database connections (per pool: the reads' pool has as many).
    #[arg(
        long = "pg-pool-size",
        env = "PG_POOL_SIZE",
        value_name = "PG_POOL_SIZE",
        default_value_t = 16,
        value_parser = clap::value_parser!(u16).range(1..=1000)
    )]
    pub pool_size: u16,

    /// GIN `fastupdate` of `orders_items` (`off` also flushes the pending list); unset leaves it.
    #[arg(long = "pg-gin-fastupdate", env = "PG_GIN_FASTUPDATE", value_name = "PG_GIN_FASTUPDATE")]
    pub gin_fastupdate: Option<OnOff>,

    /// `plan_cache_mode` set on every pooled connection; unset keeps the server's (`auto`).
    #[arg(long = "pg-plan-cache-mode", env = "PG_PLAN_CACHE_MODE", value_name = "PG_PLAN_CACHE_MODE")]
    pub plan_cache_mode: Option<PlanCacheMode>,

    /// `prepared`: named statements prepared once per connection and cached (like pgx);
    /// `unprepared`: unnamed statements, planned on every execution.
    #[arg(
        long = "pg-statement-mode",
        env = "PG_STATEMENT_MODE",
        value_name = "PG_STATEMENT_MODE",
        default_value = "prepared"
    )]
    pub statement_mode: StatementMode,

    /// How the product search carries its limit: `literal` (`LIMIT 10` in the statement's text,
    /// one prepared statement per distinct limit, as study S1's service ran it) or `parameter`
    /// (`LIMIT $2`: the generic plan cannot see the limit, so finding F1 cannot happen).
    #[arg(long = "pg-limit-mode", env = "PG_LIMIT_MODE", value_name = "PG_LIMIT_MODE", default_value = "literal")]
    pub limit_mode: LimitMode,

    /// `synchronous_commit` on every pooled connection; unset keeps the server's (`on` by default).
    #[arg(long = "pg-synchronous-commit", env = "PG_SYNCHRONOUS_COMMIT", value_name = "PG_SYNCHRONOUS_COMMIT")]
    pub synchronous_commit: Option<SynchronousCommit>,

    /// `POOL_TIMEOUT_MS` and the statement timeout, from the shared settings (`Config::store`).
    #[arg(skip)]
    pub limits: DatabaseLimits,
}

impl Config {
    /// The store's settings with the shared limits (`POOL_TIMEOUT_MS`, `REQUEST_TIMEOUT_MS`).
    pub fn store(&self) -> PgConfig {
        PgConfig { limits: self.http.database_limits(), ..self.pg.clone() }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OnOff {
    On,
    Off,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PlanCacheMode {
    #[value(name = "auto")]
    Auto,
    #[value(name = "force_custom_plan")]
    ForceCustomPlan,
    #[value(name = "force_generic_plan")]
    ForceGenericPlan,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum StatementMode {
    Prepared,
    Unprepared,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LimitMode {
    Literal,
    Parameter,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SynchronousCommit {
    #[value(name = "on")]
    On,
    #[value(name = "off")]
    Off,
    #[value(name = "local")]
    Local,
    #[value(name = "remote_write")]
    RemoteWrite,
    #[value(name = "remote_apply")]
    RemoteApply,
}

/// The spelling Postgres and the environment variables use.
pub fn setting_name<T: ValueEnum>(value: T) -> String {
    value.to_possible_value().map(|v| v.get_name().to_owned()).unwrap_or_default()
}

impl PgConfig {
    /// Settings with the defaults, for tests: the given URL, everything else as a user would get it.
    pub fn with_url(database_url: impl Into<String>) -> Self {
        Self {
            database_url: database_url.into(),
            read_database_url: None,
            pool_size: 16,
            gin_fastupdate: None,
            plan_cache_mode: None,
            statement_mode: StatementMode::Prepared,
            limit_mode: LimitMode::Literal,
            synchronous_commit: None,
            limits: DatabaseLimits::default(),
        }
    }
}

/// Only the syntax is checked here (no connection, no file read): the TLS words `sslmode` and
/// `sslrootcert` (`crate::tls`), then the driver's own parser, so a malformed URL stops start-up
/// with clap's message (which shows it without its password).
fn parse_database_url(value: &str) -> Result<String, String> {
    let (rest, _) = crate::tls::split_url(value)?;
    rest.parse::<tokio_postgres::Config>()
        .map(|_| value.to_owned())
        .map_err(|error| format!("not a PostgreSQL URL: {error}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Config, clap::Error> {
        Config::try_parse_from(std::iter::once("orders-pg").chain(args.iter().copied()))
    }

    #[test]
    fn toggles_use_postgres_spellings() {
        let config = parse(&[
            "--pg-plan-cache-mode",
            "force_custom_plan",
            "--pg-gin-fastupdate",
            "off",
            "--pg-statement-mode",
            "unprepared",
            "--pg-synchronous-commit",
            "remote_write",
            "--pg-limit-mode",
            "parameter",
        ])
        .expect("valid");
        assert_eq!(config.pg.plan_cache_mode, Some(PlanCacheMode::ForceCustomPlan));
        assert_eq!(setting_name(PlanCacheMode::ForceGenericPlan), "force_generic_plan");
        assert_eq!(config.pg.gin_fastupdate, Some(OnOff::Off));
        assert_eq!(config.pg.statement_mode, StatementMode::Unprepared);
        assert_eq!(setting_name(config.pg.synchronous_commit.expect("set")), "remote_write");
        assert_eq!(config.pg.limit_mode, LimitMode::Parameter);
        assert_eq!(parse(&[]).expect("defaults").pg.limit_mode, LimitMode::Literal, "S1's form by default");
    }

    #[test]
    fn a_bad_value_names_the_variable_and_the_allowed_values() {
        let error = parse(&["--pg-plan-cache-mode", "sometimes"]).expect_err("invalid").to_string();
        assert!(error.contains("PG_PLAN_CACHE_MODE"), "{error}");
        assert!(error.contains("force_custom_plan"), "{error}");
        let error = parse(&["--pg-pool-size", "0"]).expect_err("invalid").to_string();
        assert!(error.contains("PG_POOL_SIZE"), "{error}");
    }

    /// A malformed `DATABASE_URL` stops start-up with clap's message, which repeats the value:
    /// without its password (`orders_http::config::try_parse_args_from`).
    #[test]
    fn a_malformed_database_url_is_shown_without_its_password() {
        for url in ["postgres://orders:hunter2@db:notaport/orders", "postgres://orders:hunter2@db/orders?sslmode=maybe"]
        {
            let args = ["orders-pg", "--database-url", url];
            let error = orders_http::config::try_parse_args_from::<Config, _, _>("127.0.0.1:0", args)
                .expect_err("malformed")
                .to_string();
            assert!(error.contains("DATABASE_URL") && error.contains("orders:***@db"), "{error}");
            assert!(!error.contains("hunter2"), "{error}");
        }
    }
}
