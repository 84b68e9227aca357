//! Logging: tracing to stdout as text or JSON lines (`LOG_FORMAT`), filtered by `RUST_LOG`
//! (`info`, `orders_http=debug,info`: a level per target, tracing-subscriber's `Targets`; its
//! `EnvFilter`'s span and field filters would bring a regex engine into every build, for filters
//! nobody here writes). The filter is checked when the configuration is parsed (`config::parse_filter`),
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
