//! The step in progress, rewritten in place at the bottom of a terminal (which step of how many,
//! how far into it, each target's figures so far, and where the whole run is): a person watching
//! sees the run move between the finished steps' lines. Not on a terminal (CI, a log file) it
//! draws nothing, and the finished steps' lines are the plain record they were.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

pub struct LiveLine {
    bar: ProgressBar,
}

impl LiveLine {
    /// A line on stderr when it is a terminal, else hidden.
    pub fn stderr() -> Self {
        Self::to(ProgressDrawTarget::stderr())
    }

    fn to(target: ProgressDrawTarget) -> Self {
        let style = ProgressStyle::with_template("{wide_msg}").unwrap_or_else(|_| ProgressStyle::default_spinner());
        Self { bar: ProgressBar::with_draw_target(None, target).with_style(style) }
    }

    /// Whether it draws (stderr is a terminal).
    pub fn drawn(&self) -> bool {
        !self.bar.is_hidden()
    }

    /// Replaces the line in progress.
    pub fn show(&self, text: String) {
        self.bar.set_message(text);
    }

    /// A finished line, above the one in progress (or alone, not on a terminal).
    pub fn say(&self, line: &str) {
        if self.drawn() {
            self.bar.println(line);
        } else {
            eprintln!("{line}");
        }
    }

    /// Removes the line in progress.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

/// "step 4 of 12 @ 900 req/s, 2 of 3 s: pg 1,834 req p95 3.2 ms | mongo 1,790 req p95 4.1 ms",
/// then `run` (where the whole run is, from the command that started the round).
pub fn text(step: usize, steps: usize, rate: u32, into: f64, of: f64, figures: &[String], run: Option<&str>) -> String {
    let run = run.map_or_else(String::new, |r| format!(" · {r}"));
    format!(
        "step {} of {steps} @ {rate} req/s, {:.0} of {:.0} s: {}{run}",
        step + 1,
        into.clamp(0.0, of),
        of,
        figures.join(" | ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_says_the_step_how_far_into_it_and_where_the_run_is() {
        let figures = vec!["pg 1834 req p95 3.2 ms".to_owned(), "mongo 1790 req p95 4.1 ms".to_owned()];
        assert_eq!(
            text(3, 12, 900, 2.2, 3.0, &figures, Some("round 2 of 4, about 9 min left")),
            "step 4 of 12 @ 900 req/s, 2 of 3 s: pg 1834 req p95 3.2 ms | mongo 1790 req p95 4.1 ms · round 2 of 4, \
             about 9 min left"
        );
        assert!(text(0, 1, 10, 7.0, 3.0, &[], None).starts_with("step 1 of 1 @ 10 req/s, 3 of 3 s: "), "clamped");
    }

    #[test]
    fn off_a_terminal_nothing_is_drawn() {
        let line = LiveLine::to(ProgressDrawTarget::hidden());
        assert!(!line.drawn());
        line.show("in progress".into());
        line.finish();
    }
}
