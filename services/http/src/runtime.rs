//! The tokio runtime a service runs on, chosen by `WORKER_THREADS` (`config`): `auto`, tokio's
//! own default (a multi-thread runtime with one worker per core, as `#[tokio::main]` builds), or a
//! number of workers, where `1` builds a current-thread runtime (no work stealing, no wake-ups
//! across threads) and 2 or more a multi-thread runtime with that many workers. The reason it is a
//! setting: on a 2-core machine (wrk -t2 -c64, GET /orders/{id}) about a third of a service's CPU
//! went to context switches and cross-CPU wake-ups, which a multi-thread runtime multiplies, since
//! a request's handler task and the database connection's task wake each other on different
//! threads; there `orders-pg` cost 24.3 µs of CPU per GET on the default runtime and 18.3–19.3 µs
//! on a current-thread one (docs/configuration.md, "WORKER_THREADS and what it costs"). `build`
//! makes the runtime before anything else runs; `current` reads back what the running one is, for
//! `/diagnostics`.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::io;
use std::str::FromStr;
use tokio::runtime::{Builder, Handle, Runtime, RuntimeFlavor};

/// The largest `WORKER_THREADS` accepted.
pub const MAX_WORKER_THREADS: u16 = 1024;

/// `WORKER_THREADS`: tokio's default, or exactly this many workers (1..=`MAX_WORKER_THREADS`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WorkerThreads {
    /// tokio's default: multi-thread, one worker per core (or `TOKIO_WORKER_THREADS`, which tokio
    /// itself reads).
    #[default]
    Auto,
    /// Exactly this many workers; 1 is a current-thread runtime.
    Exactly(u16),
}

impl FromStr for WorkerThreads {
    type Err = String;

    fn from_str(value: &str) -> Result<Self, String> {
        if value == "auto" {
            return Ok(Self::Auto);
        }
        let digits = !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit());
        match value.parse::<u16>() {
            Ok(workers @ 1..=MAX_WORKER_THREADS) if digits => Ok(Self::Exactly(workers)),
            _ => Err(format!("must be `auto` or a number of worker threads from 1 to {MAX_WORKER_THREADS}")),
        }
    }
}

impl fmt::Display for WorkerThreads {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Auto => f.write_str("auto"),
            Self::Exactly(workers) => write!(f, "{workers}"),
        }
    }
}

/// A runtime with every driver (I/O, time, signals): current-thread for one worker, else
/// multi-thread.
pub fn build(threads: WorkerThreads) -> io::Result<Runtime> {
    let mut builder = match threads {
        WorkerThreads::Exactly(1) => Builder::new_current_thread(),
        WorkerThreads::Exactly(workers) => {
            let mut builder = Builder::new_multi_thread();
            builder.worker_threads(usize::from(workers));
            builder
        }
        WorkerThreads::Auto => Builder::new_multi_thread(),
    };
    builder.enable_all().build()
}

/// The kind of runtime, as `/diagnostics` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Flavor {
    CurrentThread,
    MultiThread,
    /// A flavor this build does not know (tokio may add some).
    Other,
}

/// `"runtime"` of `/diagnostics`: the running runtime, read back from tokio.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RuntimeReport {
    pub flavor: Flavor,
    pub worker_threads: usize,
}

/// The runtime the caller runs on; `None` outside one.
pub fn current() -> Option<RuntimeReport> {
    let handle = Handle::try_current().ok()?;
    let flavor = match handle.runtime_flavor() {
        RuntimeFlavor::CurrentThread => Flavor::CurrentThread,
        RuntimeFlavor::MultiThread => Flavor::MultiThread,
        _ => Flavor::Other,
    };
    Some(RuntimeReport { flavor, worker_threads: handle.metrics().num_workers() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worker_threads_is_auto_or_a_count_from_1_to_1024() {
        assert_eq!("auto".parse(), Ok(WorkerThreads::Auto));
        assert_eq!("1".parse(), Ok(WorkerThreads::Exactly(1)));
        assert_eq!("1024".parse(), Ok(WorkerThreads::Exactly(1024)));
        for bad in ["", "0", "1025", "65536", "-1", "+2", " 2", "2.0", "two", "Auto"] {
            assert!(bad.parse::<WorkerThreads>().is_err(), "{bad:?}");
        }
        assert_eq!(WorkerThreads::Exactly(7).to_string(), "7");
        assert_eq!(WorkerThreads::default().to_string(), "auto");
    }

    fn built(threads: WorkerThreads) -> Option<RuntimeReport> {
        build(threads).expect("runtime").block_on(async { current() })
    }

    #[test]
    fn one_worker_is_a_current_thread_runtime_and_more_are_that_many_workers() {
        let one = RuntimeReport { flavor: Flavor::CurrentThread, worker_threads: 1 };
        assert_eq!(built(WorkerThreads::Exactly(1)), Some(one));
        let three = RuntimeReport { flavor: Flavor::MultiThread, worker_threads: 3 };
        assert_eq!(built(WorkerThreads::Exactly(3)), Some(three));
        let auto = built(WorkerThreads::Auto).expect("inside a runtime");
        assert_eq!(auto.flavor, Flavor::MultiThread);
        // tokio's default, unless the environment chose another one for tokio.
        if std::env::var_os("TOKIO_WORKER_THREADS").is_none() {
            let cores = std::thread::available_parallelism().map_or(1, usize::from);
            assert_eq!(auto.worker_threads, cores);
        }
        assert_eq!(current(), None, "outside a runtime");
    }

    #[test]
    fn the_report_has_the_names_diagnostics_documents() {
        let report = RuntimeReport { flavor: Flavor::CurrentThread, worker_threads: 1 };
        let json = serde_json::to_value(report).expect("serialize");
        assert_eq!(json, serde_json::json!({"flavor": "current_thread", "worker_threads": 1}));
    }
}
