//! What a running generator can be told, by the runner on its stdin (one line each) or by a signal:
//! `stop` (or SIGINT / SIGTERM) ends the run early, and the summary is still written; `retire NAME`
//! stops sending to target NAME while the others go on. The runner retires a target once it has
//! failed three steps in a row: its limit is known, and overloading it further would only spend the
//! shared machine (the generator's CPU on timeouts and new connections, the service's on queued
//! requests) while the other target is still being measured.

use std::io::BufRead as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

pub struct Control {
    stop: AtomicBool,
    names: Vec<String>,
    retired: Vec<AtomicBool>,
}

impl Control {
    /// `names`: the targets, in the generator's order.
    pub fn new(names: Vec<String>) -> Self {
        let retired = names.iter().map(|_| AtomicBool::new(false)).collect();
        Self { stop: AtomicBool::new(false), names, retired }
    }

    pub fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed) || SIGNALLED.load(Ordering::Relaxed)
    }

    pub fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }

    /// Whether target `index` gets no more requests.
    pub fn retired(&self, index: usize) -> bool {
        self.retired.get(index).is_some_and(|r| r.load(Ordering::Relaxed))
    }

    /// Carries out one line; an unknown one is an error (the runner and the generator disagree).
    pub fn apply(&self, line: &str) -> Result<(), String> {
        let line = line.trim();
        if line == "stop" {
            self.stop();
            return Ok(());
        }
        let Some(name) = line.strip_prefix("retire ").map(str::trim) else {
            return Err(format!("unknown command \"{line}\" (expected `stop` or `retire NAME`)"));
        };
        let index = self.names.iter().position(|n| n == name).ok_or_else(|| format!("no target named \"{name}\""))?;
        self.retired[index].store(true, Ordering::Relaxed);
        Ok(())
    }

    /// Listens on stdin (a thread of its own) and for SIGINT / SIGTERM (a handler that only sets
    /// a flag) until the process ends; needs no runtime, so both loops use it.
    pub fn listen(self: &Arc<Self>) {
        let from_stdin = self.clone();
        std::thread::spawn(move || {
            for line in std::io::stdin().lock().lines() {
                let Ok(line) = line else { return };
                if let Err(error) = from_stdin.apply(&line) {
                    eprintln!("load: stdin: {error}");
                }
            }
        });
        let handler = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
        // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
        unsafe {
            libc::signal(libc::SIGINT, handler);
            libc::signal(libc::SIGTERM, handler);
        }
    }
}

/// Set by SIGINT or SIGTERM.
static SIGNALLED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    SIGNALLED.store(true, Ordering::Relaxed);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_stop_the_run_or_retire_one_target() {
        let control = Control::new(vec!["pg".into(), "mongo".into()]);
        assert!(!control.stopped() && !control.retired(0) && !control.retired(1));
        control.apply("retire mongo\n").expect("retire");
        assert!(!control.retired(0) && control.retired(1) && !control.stopped());
        control.apply(" stop ").expect("stop");
        assert!(control.stopped());
        assert!(!control.retired(7), "an index out of range is not retired");
    }

    #[test]
    fn unknown_lines_and_names_are_refused_and_change_nothing() {
        let control = Control::new(vec!["pg".into()]);
        for bad in ["retire", "retire mongo", "pause pg", ""] {
            assert!(control.apply(bad).is_err(), "{bad:?}");
        }
        assert!(!control.stopped() && !control.retired(0));
    }
}
