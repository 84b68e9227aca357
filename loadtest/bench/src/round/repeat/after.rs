//! A repeat's phase right after the load: the databases' closing figures (the run's last second
//! let in, PostgreSQL's table counters flushed), the snapshots written, and the repeat's files.

use super::write_json;
use crate::diagnostics::{self, Snapshot};
use crate::round::{RoundSpec, Setup};
use anyhow::{Context, Result};
use orders_bench_engines::WalStats;
use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::Path;
use std::time::{Duration, Instant};

/// Pause before the closing snapshot, so the databases' statistics include the run's last second
/// (PostgreSQL backends report their counters at most once a second).
const STATS_LAG: Duration = Duration::from_millis(2500);

/// Where the databases stand after the load.
pub struct After {
    pub after: Snapshot,
    pub wal_after: BTreeMap<String, WalStats>,
    /// What the closing figures miss, if anything.
    pub notes: Vec<String>,
}

/// The closing snapshot (or, when the services do not answer, the last poll, with a note) with
/// every PostgreSQL target's flushed table counters, written beside the polled ones.
pub async fn collect(
    spec: &RoundSpec,
    setup: &Setup,
    client: &diagnostics::Client,
    origin: Instant,
    polled: &[Snapshot],
    dir: &Path,
    label: &str,
) -> Result<After> {
    let mut notes = Vec::new();
    tokio::time::sleep(STATS_LAG).await;
    let wal_after = super::evidence::wal_by_target(&setup.targets).await;
    let mut after = match client.settled(origin.elapsed().as_secs_f64(), spec.settle).await {
        Ok(after) => after,
        Err(error) => {
            let last = polled.last().cloned().with_context(|| format!("no diagnostics after the run: {error:#}"))?;
            let note = format!(
                "the services did not answer /diagnostics within {} s after the run ({error:#}); the figures end at \
                 the last poll, {:.0} s into the run",
                spec.settle.as_secs(),
                last.at_s
            );
            eprintln!("{label} note: {note}");
            notes.push(note);
            last
        }
    };
    // Where the engine's counters come late (PostgreSQL's, either layout), read once they came.
    for target in setup.targets.iter() {
        match target.backend.flushed_table_counters().await.transpose() {
            Ok(None) => {}
            Ok(Some(table)) => {
                if let Some(diagnostics) = after.services.get_mut(&target.name()) {
                    diagnostics["table"] = table;
                }
            }
            Err(error) => notes.push(format!(
                "{}: the table counters after the run may miss its last seconds (backends send them up to 10 s late, \
                 and their sessions could not be ended: {error:#})",
                target.name()
            )),
        }
    }
    write_json(&dir.join("diagnostics-after.json"), &after)?;
    let mut lines = std::fs::File::create(dir.join("diagnostics-polled.jsonl")).context("diagnostics-polled.jsonl")?;
    for snapshot in polled {
        writeln!(lines, "{}", serde_json::to_string(snapshot).context("JSON")?).context("diagnostics-polled.jsonl")?;
    }
    Ok(After { after, wal_after, notes })
}

/// The repeat's raw files by key, relative to the round folder (`rel` is the repeat's folder).
pub fn files(spec: &RoundSpec, rel: &str, summary_file: &str, log_file: &str) -> BTreeMap<String, String> {
    let mut files = BTreeMap::new();
    for (key, file) in [
        ("load_summary", summary_file),
        ("load_log", log_file),
        ("diagnostics_before", "diagnostics-before.json"),
        ("diagnostics_after", "diagnostics-after.json"),
        ("diagnostics_polled", "diagnostics-polled.jsonl"),
    ] {
        files.insert(key.to_owned(), format!("{rel}/{file}"));
    }
    if spec.lead_in.is_some() {
        files.insert("lead_in_summary".into(), format!("{rel}/lead-in-summary.json"));
    }
    files
}
