//! Settings every service shares (`BIND_ADDR`, `RUST_LOG`, `LOG_FORMAT`, `REQUEST_TIMEOUT_MS`,
//! `MAX_BODY_BYTES`, `POOL_TIMEOUT_MS`, `SHUTDOWN_TIMEOUT_MS`, `WORKER_THREADS`), parsed by clap
//! from flags or the environment before the runtime starts (`runtime::build` takes
//! `WORKER_THREADS`). Each binary flattens `HttpConfig` into its own settings; nothing else in the
//! project reads `std::env`. `DatabaseLimits` carries the two that the stores apply, so both
//! services shed load the same way from the same numbers.

use crate::runtime::WorkerThreads;
use clap::{Args, ValueEnum};
use std::net::SocketAddr;
use std::str::FromStr;
use std::time::Duration;

/// Default of `REQUEST_TIMEOUT_MS`.
pub const DEFAULT_REQUEST_TIMEOUT_MS: u64 = 10_000;
/// Default of `POOL_TIMEOUT_MS`: short enough that a database that is down, or a pool that stays
/// exhausted, answers 503 within a second.
pub const DEFAULT_POOL_TIMEOUT_MS: u64 = 500;
/// Default of `SHUTDOWN_TIMEOUT_MS`.
pub const DEFAULT_SHUTDOWN_TIMEOUT_MS: u64 = 10_000;

/// What each store enforces, identically on both backends: how long a request may wait for a
/// database connection (a free pooled one, or a new one being opened) before it gets 503, and how
/// long one statement or command may run on the database before the database itself stops it
/// (`statement_timeout`, `maxTimeMS`), so a request that timed out stops costing the database.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DatabaseLimits {
    pub pool_timeout: Duration,
    pub statement_timeout: Duration,
}

impl Default for DatabaseLimits {
    fn default() -> Self {
        Self {
            pool_timeout: Duration::from_millis(DEFAULT_POOL_TIMEOUT_MS),
            statement_timeout: Duration::from_millis(DEFAULT_REQUEST_TIMEOUT_MS),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// One JSON object per line (for log shippers).
    Json,
    /// Human-readable lines.
    Text,
}

#[derive(Debug, Clone, Args)]
pub struct HttpConfig {
    /// Address to listen on; port 0 picks a free port (logged at start-up).
    #[arg(long = "bind-addr", env = "BIND_ADDR", value_name = "BIND_ADDR", default_value = "127.0.0.1:8080")]
    pub bind_addr: SocketAddr,

    /// Log filter in tracing's env-filter syntax, e.g. `info` or `orders_http=debug,info`.
    #[arg(
        long = "rust-log",
        env = "RUST_LOG",
        value_name = "RUST_LOG",
        default_value = "info",
        value_parser = crate::telemetry::parse_filter
    )]
    pub rust_log: String,

    /// Log line format.
    #[arg(long = "log-format", env = "LOG_FORMAT", value_name = "LOG_FORMAT", default_value = "text")]
    pub log_format: LogFormat,

    /// A request still running after this many milliseconds gets 503 `unavailable`; the database
    /// stops a statement or command running this long (`statement_timeout`, `maxTimeMS`).
    #[arg(
        long = "request-timeout-ms",
        env = "REQUEST_TIMEOUT_MS",
        value_name = "REQUEST_TIMEOUT_MS",
        default_value_t = DEFAULT_REQUEST_TIMEOUT_MS,
        value_parser = clap::value_parser!(u64).range(1..=86_400_000)
    )]
    pub request_timeout_ms: u64,

    /// Longest wait for a database connection (a free pooled one, or a new one being opened);
    /// past it the request gets 503 `unavailable` with Retry-After. Same default on both services.
    #[arg(
        long = "pool-timeout-ms",
        env = "POOL_TIMEOUT_MS",
        value_name = "POOL_TIMEOUT_MS",
        default_value_t = DEFAULT_POOL_TIMEOUT_MS,
        value_parser = clap::value_parser!(u64).range(1..=86_400_000)
    )]
    pub pool_timeout_ms: u64,

    /// On SIGTERM or Ctrl-C: readiness turns 503, every accepted connection gets its answers
    /// (keep-alive ones are closed after their current response), and the process exits at the
    /// latest this many milliseconds after the signal.
    #[arg(
        long = "shutdown-timeout-ms",
        env = "SHUTDOWN_TIMEOUT_MS",
        value_name = "SHUTDOWN_TIMEOUT_MS",
        default_value_t = DEFAULT_SHUTDOWN_TIMEOUT_MS,
        value_parser = clap::value_parser!(u64).range(1..=86_400_000)
    )]
    pub shutdown_timeout_ms: u64,

    /// Request bodies larger than this get 413 `payload_too_large`.
    #[arg(
        long = "max-body-bytes",
        env = "MAX_BODY_BYTES",
        value_name = "MAX_BODY_BYTES",
        default_value_t = 1_048_576,
        value_parser = clap::value_parser!(u64).range(1..=1_073_741_824)
    )]
    pub max_body_bytes: u64,

    /// Runtime workers: `auto` (tokio's default, one per core) or 1 to 1024; `1` runs a
    /// current-thread runtime (no work stealing, no wake-ups across threads).
    #[arg(
        long = "worker-threads",
        env = "WORKER_THREADS",
        value_name = "WORKER_THREADS",
        default_value = "auto",
        value_parser = WorkerThreads::from_str
    )]
    pub worker_threads: WorkerThreads,
}

impl HttpConfig {
    pub fn request_timeout(&self) -> Duration {
        Duration::from_millis(self.request_timeout_ms)
    }

    pub fn shutdown_timeout(&self) -> Duration {
        Duration::from_millis(self.shutdown_timeout_ms)
    }

    /// The limits each store applies: `POOL_TIMEOUT_MS`, and `REQUEST_TIMEOUT_MS` as the
    /// database-side deadline.
    pub fn database_limits(&self) -> DatabaseLimits {
        DatabaseLimits {
            pool_timeout: Duration::from_millis(self.pool_timeout_ms),
            statement_timeout: self.request_timeout(),
        }
    }

    /// Settings for tests and embedding: an ephemeral port on loopback and the defaults.
    pub fn for_tests() -> Self {
        Self {
            bind_addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            rust_log: "warn".into(),
            log_format: LogFormat::Text,
            request_timeout_ms: DEFAULT_REQUEST_TIMEOUT_MS,
            max_body_bytes: 1_048_576,
            pool_timeout_ms: DEFAULT_POOL_TIMEOUT_MS,
            shutdown_timeout_ms: DEFAULT_SHUTDOWN_TIMEOUT_MS,
            worker_threads: WorkerThreads::Auto,
        }
    }
}

/// Parses a binary's settings (flags, then environment) with its own default `BIND_ADDR`, so both
/// services can run side by side with no flags. Exits with clap's message on a bad value; the
/// message names the variable and lists the allowed values.
pub fn parse_args<C: clap::Parser>(default_bind_addr: &'static str) -> C {
    let matches = C::command().mut_arg("bind_addr", |arg| arg.default_value(default_bind_addr)).get_matches();
    C::from_arg_matches(&matches).unwrap_or_else(|error| error.exit())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Settings {
        #[command(flatten)]
        http: HttpConfig,
    }

    /// Parses flags only for `WORKER_THREADS` (its environment variable is ignored here, so that
    /// `WORKER_THREADS=1 cargo nextest run` does not change the default seen; the binaries' tests
    /// check the variable).
    fn parse(args: &[&str]) -> Result<HttpConfig, clap::Error> {
        use clap::{CommandFactory, FromArgMatches};
        let command = Settings::command().mut_arg("worker_threads", |arg| arg.env(None::<&str>));
        let matches = command.try_get_matches_from(std::iter::once("service").chain(args.iter().copied()))?;
        Settings::from_arg_matches(&matches).map(|s| s.http)
    }

    #[test]
    fn worker_threads_default_to_auto_and_take_a_count() {
        assert_eq!(parse(&[]).expect("defaults").worker_threads, WorkerThreads::Auto);
        assert_eq!(parse(&["--worker-threads", "1"]).expect("one").worker_threads, WorkerThreads::Exactly(1));
        assert_eq!(parse(&["--worker-threads", "auto"]).expect("auto").worker_threads, WorkerThreads::Auto);
        for bad in ["0", "1025", "many", ""] {
            let error = parse(&["--worker-threads", bad]).expect_err(bad).to_string();
            assert!(error.contains("WORKER_THREADS") && error.contains("1 to 1024"), "{bad:?}: {error}");
        }
    }
}
