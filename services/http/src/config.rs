//! Settings every service shares (`BIND_ADDR`, `RUST_LOG`, `LOG_FORMAT`, `REQUEST_TIMEOUT_MS`,
//! `MAX_BODY_BYTES`), parsed by clap from flags or the environment. Each binary flattens
//! `HttpConfig` into its own settings; nothing else in the project reads `std::env`.

use clap::{Args, ValueEnum};
use std::net::SocketAddr;
use std::time::Duration;

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

    /// A request still running after this many milliseconds gets 503 `unavailable`.
    #[arg(
        long = "request-timeout-ms",
        env = "REQUEST_TIMEOUT_MS",
        value_name = "REQUEST_TIMEOUT_MS",
        default_value_t = 10_000,
        value_parser = clap::value_parser!(u64).range(1..)
    )]
    pub request_timeout_ms: u64,

    /// Request bodies larger than this get 413 `payload_too_large`.
    #[arg(
        long = "max-body-bytes",
        env = "MAX_BODY_BYTES",
        value_name = "MAX_BODY_BYTES",
        default_value_t = 1_048_576,
        value_parser = clap::value_parser!(u64).range(1..=1_073_741_824)
    )]
    pub max_body_bytes: u64,
}

impl HttpConfig {
    pub fn request_timeout(&self) -> Duration {
        Duration::from_millis(self.request_timeout_ms)
    }

    /// Settings for tests and embedding: an ephemeral port on loopback and the defaults.
    pub fn for_tests() -> Self {
        Self {
            bind_addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            rust_log: "warn".into(),
            log_format: LogFormat::Text,
            request_timeout_ms: 10_000,
            max_body_bytes: 1_048_576,
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
