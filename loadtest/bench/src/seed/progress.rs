//! Progress bars on stderr, one per target, each with its rate in docs/s and the phase it is in
//! (loading, building indexes, ...). indicatif draws nothing when stderr is not a terminal, so
//! logs and tests stay clean.

use indicatif::{MultiProgress, ProgressBar, ProgressState, ProgressStyle};
use std::fmt::Write;

pub struct Bars {
    multi: MultiProgress,
}

impl Bars {
    pub fn new() -> Self {
        Self { multi: MultiProgress::new() }
    }

    /// A bar for `target` counting to `orders`.
    pub fn add(&self, target: &str, orders: u64) -> ProgressBar {
        let style = ProgressStyle::with_template(
            "{prefix:>5} [{bar:32.cyan/blue}] {human_pos}/{human_len} {docs_per_sec} eta {eta} {wide_msg}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .with_key("docs_per_sec", |state: &ProgressState, out: &mut dyn Write| {
            let _ = write!(out, "{:.0} docs/s", state.per_sec());
        })
        .progress_chars("=> ");
        let bar = self.multi.add(ProgressBar::new(orders).with_style(style).with_prefix(target.to_owned()));
        bar.set_message("starting");
        bar
    }
}
