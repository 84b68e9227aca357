//! Logging: tracing to stdout as text or JSON lines (`LOG_FORMAT`), filtered by `RUST_LOG`.
//! The filter is checked when the configuration is parsed (`parse_filter`), so start-up fails
//! with a message naming `RUST_LOG` instead of silently logging nothing.
//!
//! Lines go through a background writer thread (`tracing-appender`'s non-blocking writer in its
//! lossy mode): a request's task only queues its line, so a slow or blocked stdout (a full pipe,
//! a stalled terminal) can never block a runtime thread. When the queue is full, lines are dropped
//! rather than waited for; the count of dropped lines is logged once the queue drains.

use crate::config::{HttpConfig, LogFormat};
use std::io::IsTerminal;
use tracing_appender::non_blocking::{NonBlockingBuilder, WorkerGuard};
use tracing_subscriber::EnvFilter;

/// Lines queued for the writer thread before new ones are dropped.
const QUEUED_LINES: usize = 64 * 1024;

/// Keeps the writer thread alive; dropping it flushes the queued lines. Hold it until exit.
#[must_use = "dropping the guard stops logging; keep it until the process exits"]
pub struct LogGuard {
    _writer: Option<WorkerGuard>,
}

/// A clap value parser: accepts only filters tracing can use.
pub fn parse_filter(value: &str) -> Result<String, String> {
    EnvFilter::try_new(value).map(|_| value.to_owned()).map_err(|e| format!("not a valid log filter: {e}"))
}

/// Installs the global subscriber; a second call (as in tests) is a no-op.
pub fn init(config: &HttpConfig) -> LogGuard {
    let filter = EnvFilter::try_new(&config.rust_log).unwrap_or_else(|_| EnvFilter::new("info"));
    let colours = std::io::stdout().is_terminal();
    let (writer, guard) = NonBlockingBuilder::default()
        .lossy(true)
        .buffered_lines_limit(QUEUED_LINES)
        .thread_name("log-writer")
        .finish(std::io::stdout());
    let builder =
        tracing_subscriber::fmt().with_env_filter(filter).with_target(false).with_ansi(colours).with_writer(writer);
    let installed = match config.log_format {
        LogFormat::Json => builder.json().flatten_event(true).try_init(),
        LogFormat::Text => builder.try_init(),
    };
    LogGuard { _writer: installed.is_ok().then_some(guard) }
}
