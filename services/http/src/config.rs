//! Settings every service shares (`BIND_ADDR`, `RUST_LOG`, `LOG_FORMAT`, `REQUEST_TIMEOUT_MS`,
//! `MAX_BODY_BYTES`, `MAX_LIST_BYTES`, `POOL_TIMEOUT_MS`, `SHUTDOWN_TIMEOUT_MS`, `WORKER_THREADS`, and the limits on
//! what clients may hold: `HEADER_READ_TIMEOUT_MS`, `IDLE_TIMEOUT_MS`, `MAX_CONNECTIONS`,
//! `MAX_IN_FLIGHT`), parsed by clap from flags or the environment before the runtime starts
//! (`runtime::build` takes `WORKER_THREADS`). Each binary flattens `HttpConfig` into its own
//! settings; nothing else in the project reads `std::env`. `DatabaseLimits` carries the two that
//! the stores apply, so every service sheds load the same way from the same numbers;
//! `ConnectionLimits` the three that `serve` applies to connections.

use crate::connection::{
    ConnectionLimits, DEFAULT_HEADER_READ_TIMEOUT_MS, DEFAULT_IDLE_TIMEOUT_MS, DEFAULT_MAX_CONNECTIONS,
};
use crate::runtime::WorkerThreads;
use clap::{Args, ValueEnum};
use orders_core::ListBytes;
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
/// Default of `MAX_IN_FLIGHT`: at a millisecond per request on a pool of 16, 1,024 requests in
/// flight already wait 64 ms each, past the benchmark's 50 ms pass mark, so the limit only answers
/// sooner (503 at once instead of after `POOL_TIMEOUT_MS`) what was already overload.
pub const DEFAULT_MAX_IN_FLIGHT: usize = 1024;

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

    /// Log filter: a level, or a level per target, e.g. `info` or `orders_http=debug,info`.
    #[arg(
        long = "rust-log",
        env = "RUST_LOG",
        value_name = "RUST_LOG",
        default_value = "info",
        value_parser = parse_filter
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
    /// past it the request gets 503 `unavailable` with Retry-After. Same default on every service.
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

    /// A list answer (orders by customer, by product) stops before its body passes this many
    /// bytes, but always holds one order; a list cut short says so (`List-Truncated: true`).
    #[arg(
        long = "max-list-bytes",
        env = "MAX_LIST_BYTES",
        value_name = "MAX_LIST_BYTES",
        default_value_t = ListBytes::DEFAULT.get() as u64,
        value_parser = clap::value_parser!(u64).range(1..=1_073_741_824)
    )]
    pub max_list_bytes: u64,

    /// A request's header must arrive within this many milliseconds of its first byte (of the
    /// connection's opening, for its first request), or the connection is closed.
    #[arg(
        long = "header-read-timeout-ms",
        env = "HEADER_READ_TIMEOUT_MS",
        value_name = "HEADER_READ_TIMEOUT_MS",
        default_value_t = DEFAULT_HEADER_READ_TIMEOUT_MS,
        value_parser = clap::value_parser!(u64).range(1..=86_400_000)
    )]
    pub header_read_timeout_ms: u64,

    /// A connection with no request in flight that has sent nothing for this many milliseconds
    /// since its last answer is closed.
    #[arg(
        long = "idle-timeout-ms",
        env = "IDLE_TIMEOUT_MS",
        value_name = "IDLE_TIMEOUT_MS",
        default_value_t = DEFAULT_IDLE_TIMEOUT_MS,
        value_parser = clap::value_parser!(u64).range(1..=86_400_000)
    )]
    pub idle_timeout_ms: u64,

    /// Connections open at once; one more is answered 503 and closed at once. Keep it below the
    /// process's open-file limit.
    #[arg(
        long = "max-connections",
        env = "MAX_CONNECTIONS",
        value_name = "MAX_CONNECTIONS",
        default_value_t = DEFAULT_MAX_CONNECTIONS,
        value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=1_000_000)
    )]
    pub max_connections: usize,

    /// Requests handled at once (every endpoint but /healthz and /metrics); one more is answered
    /// 503 `unavailable` at once, with Retry-After.
    #[arg(
        long = "max-in-flight",
        env = "MAX_IN_FLIGHT",
        value_name = "MAX_IN_FLIGHT",
        default_value_t = DEFAULT_MAX_IN_FLIGHT,
        value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=1_000_000)
    )]
    pub max_in_flight: usize,

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

    /// The bound on a list answer's body (`MAX_LIST_BYTES`).
    pub fn max_list_bytes(&self) -> ListBytes {
        ListBytes::new(usize::try_from(self.max_list_bytes).unwrap_or(usize::MAX))
    }

    /// The limits `serve` holds every connection to.
    pub fn connection_limits(&self) -> ConnectionLimits {
        ConnectionLimits {
            header_read_timeout: Duration::from_millis(self.header_read_timeout_ms),
            idle_timeout: Duration::from_millis(self.idle_timeout_ms),
            max_connections: self.max_connections,
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
            max_list_bytes: ListBytes::DEFAULT.get() as u64,
            pool_timeout_ms: DEFAULT_POOL_TIMEOUT_MS,
            shutdown_timeout_ms: DEFAULT_SHUTDOWN_TIMEOUT_MS,
            header_read_timeout_ms: DEFAULT_HEADER_READ_TIMEOUT_MS,
            idle_timeout_ms: DEFAULT_IDLE_TIMEOUT_MS,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            max_in_flight: DEFAULT_MAX_IN_FLIGHT,
            worker_threads: WorkerThreads::Auto,
        }
    }
}

/// Parses a binary's settings (flags, then environment) with its own default `BIND_ADDR`, so both
/// services can run side by side with no flags. Exits with clap's message on a bad value; the
/// message names the variable and lists the allowed values, and shows a rejected URL without its
/// password (`try_parse_args_from`).
pub fn parse_args<C: clap::Parser>(default_bind_addr: &'static str) -> C {
    try_parse_args_from(default_bind_addr, std::env::args_os()).unwrap_or_else(|error| error.exit())
}

/// `parse_args` on the given arguments, returning clap's error instead of exiting. clap repeats a
/// rejected value in its message (`invalid value '...' for '--mongodb-uri <MONGODB_URI>'`): a
/// connection URL's password is replaced by `***` there (`redact_passwords`).
pub fn try_parse_args_from<C, I, T>(default_bind_addr: &'static str, args: I) -> Result<C, clap::Error>
where
    C: clap::Parser,
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let matches = C::command()
        .mut_arg("bind_addr", |arg| arg.default_value(default_bind_addr))
        .try_get_matches_from(args)
        .map_err(without_passwords)?;
    C::from_arg_matches(&matches).map_err(without_passwords)
}

fn without_passwords(mut error: clap::Error) -> clap::Error {
    use clap::error::{ContextKind, ContextValue};
    if let Some(ContextValue::String(value)) = error.get(ContextKind::InvalidValue) {
        let redacted = redact_passwords(value);
        if redacted != *value {
            error.insert(ContextKind::InvalidValue, ContextValue::String(redacted));
        }
    }
    error
}

/// `text` with the password of every URL in it (`scheme://user:password@host`) replaced by
/// `***`. A malformed URL is why it is shown at all, so the user information is taken to run to
/// the last `@` before the next white space or quote: a password with an unencoded `@` or `/` is
/// hidden whole, at worst with some of what follows it.
pub fn redact_passwords(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("://") {
        let (before, after) = rest.split_at(start + 3);
        out.push_str(before);
        let end = after.find(|c: char| c.is_whitespace() || c == '\'' || c == '"').unwrap_or(after.len());
        let (authority, tail) = after.split_at(end);
        match authority.rfind('@').and_then(|at| authority[..at].find(':').map(|colon| (colon, at))) {
            Some((colon, at)) => {
                out.push_str(&authority[..=colon]);
                out.push_str("***");
                out.push_str(&authority[at..]);
            }
            None => out.push_str(authority),
        }
        rest = tail;
    }
    out.push_str(rest);
    out
}

/// A clap value parser: accepts only filters tracing can use, whose targets are module paths
/// (`Targets` alone would take `[` for a target and log nothing of it).
pub fn parse_filter(value: &str) -> Result<String, String> {
    let is_path = |t: &str| {
        t.split("::").all(|part| {
            part.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && part.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        })
    };
    // A directive is a level, a target (every level of it) or `target=level`.
    let is_level = |d: &str| !d.is_empty() && d.parse::<tracing::level_filters::LevelFilter>().is_ok();
    let target_of = |d: &str| d.split_once('=').map_or(d, |(target, _)| target).to_owned();
    let mut targets = value.split(',').filter(|d| d.contains('=') || !is_level(d)).map(target_of);
    if let Some(bad) = targets.find(|t| !is_path(t)) {
        return Err(format!("not a valid log filter: `{bad}` is no module path"));
    }
    value
        .parse::<tracing_subscriber::filter::Targets>()
        .map(|_| value.to_owned())
        .map_err(|e| format!("not a valid log filter: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_level_per_target_is_a_filter_and_anything_else_is_refused() {
        for good in ["info", "debug", "orders_http=debug,info", "warn,orders_pg=trace", "off"] {
            assert_eq!(parse_filter(good).as_deref(), Ok(good));
        }
        for bad in ["info,[=", "info,[", "orders_http=chatty", "=debug", "orders http=info"] {
            assert!(parse_filter(bad).is_err_and(|e| e.starts_with("not a valid log filter")), "{bad}");
        }
    }
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
    fn connection_and_request_limits_have_defaults_and_ranges() {
        let defaults = parse(&[]).expect("defaults");
        assert_eq!(defaults.connection_limits(), ConnectionLimits::default());
        assert_eq!(
            (
                defaults.header_read_timeout_ms,
                defaults.idle_timeout_ms,
                defaults.max_connections,
                defaults.max_in_flight
            ),
            (10_000, 60_000, 10_000, 1024)
        );
        let set = parse(&["--header-read-timeout-ms", "250", "--idle-timeout-ms", "750", "--max-connections", "3"])
            .expect("set")
            .connection_limits();
        assert_eq!(
            set,
            ConnectionLimits {
                header_read_timeout: Duration::from_millis(250),
                idle_timeout: Duration::from_millis(750),
                max_connections: 3
            }
        );
        for (flag, variable) in [
            ("--header-read-timeout-ms", "HEADER_READ_TIMEOUT_MS"),
            ("--idle-timeout-ms", "IDLE_TIMEOUT_MS"),
            ("--max-connections", "MAX_CONNECTIONS"),
            ("--max-in-flight", "MAX_IN_FLIGHT"),
        ] {
            for bad in ["0", "-1", "many", "1000001"] {
                let limit = bad == "1000001" && flag.contains("timeout");
                let outcome = parse(&[&format!("{flag}={bad}")]);
                if limit {
                    assert!(outcome.is_ok(), "{flag} {bad}: 1000001 ms is a valid timeout");
                    continue;
                }
                let error = outcome.expect_err(bad).to_string();
                assert!(error.contains(variable), "{flag} {bad}: {error}");
            }
        }
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

    #[test]
    fn passwords_in_urls_are_redacted() {
        for (text, expected) in [
            ("mongodb://user:hunter2@db:27017/x", "mongodb://user:***@db:27017/x"),
            ("'postgres://u:p@ss/w@rd@h:5432/db' for x", "'postgres://u:***@h:5432/db' for x"),
            ("a mongodb://u@h b postgres://h/db", "a mongodb://u@h b postgres://h/db"),
            ("x://a:b@c and y://d:e@f", "x://a:***@c and y://d:***@f"),
            ("no url here", "no url here"),
        ] {
            assert_eq!(redact_passwords(text), expected, "{text}");
        }
    }

    /// clap repeats a rejected value: a URL's password must not be in the message.
    #[test]
    fn a_rejected_url_is_shown_without_its_password() {
        #[derive(Debug, Parser)]
        struct WithUrl {
            #[command(flatten)]
            http: HttpConfig,
            #[arg(long, value_parser = |v: &str| if v.contains("27017") { Ok(v.to_owned()) } else { Err("bad port") })]
            url: String,
        }
        let args = ["service", "--url", "mongodb://user:hunter2@db:notaport", "--worker-threads", "1"];
        let error = try_parse_args_from::<WithUrl, _, _>("127.0.0.1:0", args).expect_err("rejected").to_string();
        assert!(!error.contains("hunter2") && error.contains("mongodb://user:***@db:notaport"), "{error}");
    }
}
