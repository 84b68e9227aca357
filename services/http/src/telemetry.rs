//! Logging: tracing to stdout as text or JSON lines (`LOG_FORMAT`), filtered by `RUST_LOG`.
//! The filter is checked when the configuration is parsed (`parse_filter`), so start-up fails
//! with a message naming `RUST_LOG` instead of silently logging nothing.

use crate::config::{HttpConfig, LogFormat};
use std::io::IsTerminal;
use tracing_subscriber::EnvFilter;

/// A clap value parser: accepts only filters tracing can use.
pub fn parse_filter(value: &str) -> Result<String, String> {
    EnvFilter::try_new(value).map(|_| value.to_owned()).map_err(|e| format!("not a valid log filter: {e}"))
}

/// Installs the global subscriber; a second call (as in tests) is a no-op.
pub fn init(config: &HttpConfig) {
    let filter = EnvFilter::try_new(&config.rust_log).unwrap_or_else(|_| EnvFilter::new("info"));
    let colours = std::io::stdout().is_terminal();
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_target(false).with_ansi(colours);
    let _ = match config.log_format {
        LogFormat::Json => builder.json().flatten_event(true).try_init(),
        LogFormat::Text => builder.try_init(),
    };
}
