//! Logging: tracing to stdout as text or JSON lines (`LOG_FORMAT`), filtered by `RUST_LOG`
//! (`info`, `orders_http=debug,info`: a level per target, tracing-subscriber's `Targets`; its
//! `EnvFilter`'s span and field filters would bring a regex engine into every build, for filters
//! nobody here writes). The filter is checked when the configuration is parsed (`parse_filter`),
//! so start-up fails with a message naming `RUST_LOG` instead of silently logging nothing.
//!
//! Lines go through a background writer thread (`tracing-appender`'s non-blocking writer in its
//! lossy mode): a request's task only queues its line, so a slow or blocked stdout (a full pipe,
//! a stalled terminal) can never block a runtime thread. When the queue is full, lines are dropped
//! rather than waited for; the count of dropped lines is logged once the queue drains.

use crate::config::{HttpConfig, LogFormat};
use std::io::IsTerminal;
use tracing::Level;
use tracing::level_filters::LevelFilter;
use tracing_appender::non_blocking::{NonBlockingBuilder, WorkerGuard};
use tracing_subscriber::filter::Targets;
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;

/// Lines queued for the writer thread before new ones are dropped.
const QUEUED_LINES: usize = 64 * 1024;

/// Keeps the writer thread alive; dropping it flushes the queued lines. Hold it until exit.
#[must_use = "dropping the guard stops logging; keep it until the process exits"]
pub struct LogGuard {
    _writer: Option<WorkerGuard>,
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
    let is_level = |d: &str| !d.is_empty() && d.parse::<LevelFilter>().is_ok();
    let target_of = |d: &str| d.split_once('=').map_or(d, |(target, _)| target).to_owned();
    let mut targets = value.split(',').filter(|d| d.contains('=') || !is_level(d)).map(target_of);
    if let Some(bad) = targets.find(|t| !is_path(t)) {
        return Err(format!("not a valid log filter: `{bad}` is no module path"));
    }
    value.parse::<Targets>().map(|_| value.to_owned()).map_err(|e| format!("not a valid log filter: {e}"))
}

/// Installs the global subscriber; a second call (as in tests) is a no-op.
pub fn init(config: &HttpConfig) -> LogGuard {
    let filter = config.rust_log.parse::<Targets>().unwrap_or_else(|_| Targets::new().with_default(Level::INFO));
    let colours = std::io::stdout().is_terminal();
    let (writer, guard) = NonBlockingBuilder::default()
        .lossy(true)
        .buffered_lines_limit(QUEUED_LINES)
        .thread_name("log-writer")
        .finish(std::io::stdout());
    // The builder's own maximum level (info by default) would hide what `filter` lets through.
    let builder = tracing_subscriber::fmt()
        .with_max_level(LevelFilter::TRACE)
        .with_target(false)
        .with_ansi(colours)
        .with_writer(writer);
    let installed = match config.log_format {
        LogFormat::Json => builder.json().flatten_event(true).finish().with(filter).try_init(),
        LogFormat::Text => builder.finish().with(filter).try_init(),
    };
    LogGuard { _writer: installed.is_ok().then_some(guard) }
}

#[cfg(test)]
mod tests {
    use super::parse_filter;

    #[test]
    fn a_level_per_target_is_a_filter_and_anything_else_is_refused() {
        for good in ["info", "debug", "orders_http=debug,info", "warn,orders_pg=trace", "off"] {
            assert_eq!(parse_filter(good).as_deref(), Ok(good));
        }
        for bad in ["info,[=", "info,[", "orders_http=chatty", "=debug", "orders http=info"] {
            assert!(parse_filter(bad).is_err_and(|e| e.starts_with("not a valid log filter")), "{bad}");
        }
    }
}
