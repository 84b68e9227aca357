//! Every repeat starts from the same state, and its record proves it. Before a repeat's load both
//! databases are reset to the data set (`Reset::Restore`: from the snapshots taken once after the
//! first load, see `snapshot`; `Reset::Reload`: the seeder, where the runner cannot restore, e.g.
//! databases on other machines), every page of the orders and their indexes is read once (the
//! caches start warm, not in whatever state the reset left them), a fingerprint of the data is
//! taken, and the runner waits until both are quiet (`quiet`). What it found is the repeat's
//! `start` in `result.json`: a repeat that began before the databases were quiet, or on other
//! data, is visible there and in the report.

mod quiet;
pub mod snapshot;

use crate::databases::{Databases, mongo_client, pg_session};
use crate::seed::{self, SeedArgs};
use anyhow::{Context, Result};
use md5::{Digest, Md5};
use mongodb::bson::Document;
use orders_bench_model::start::{DatabaseStart, StartState};
use orders_bench_model::target::Target;
use orders_mongo::indexes::COLLECTION;
pub use snapshot::Snapshots;
use std::time::{Duration, Instant};

/// How long the runner waits for quiet databases before a repeat by default.
pub const QUIET_WAIT: Duration = Duration::from_secs(30);

/// How a repeat's data are reset.
#[derive(Debug, Clone)]
pub enum Reset {
    /// The data stay as the previous repeat left them.
    Keep,
    /// The seeder loads the data set again (`round --reseed`).
    Reload(SeedArgs),
    /// Both databases are restored from snapshots (the demo and the experiments on the local
    /// stack).
    Restore(Snapshots),
}

impl Reset {
    fn word(&self) -> &'static str {
        match self {
            Reset::Keep => "kept",
            Reset::Reload(_) => "reloaded",
            Reset::Restore(_) => "restored",
        }
    }

    pub fn resets(&self) -> bool {
        !matches!(self, Reset::Keep)
    }
}

/// Resets the data, warms both caches and fingerprints the data; returns what the repeat starts
/// from (`wait_quiet` completes it).
pub async fn reset(reset: &Reset, databases: &Databases, label: &str) -> Result<StartState> {
    let mut start = StartState { reset: reset.word().into(), ..StartState::default() };
    if reset.resets() {
        let began = Instant::now();
        match reset {
            Reset::Keep => {}
            Reset::Reload(args) => {
                eprintln!("{label} reloading {} orders into both databases", args.orders);
                seed::run(args.clone()).await.context("reloading the data set")?;
            }
            Reset::Restore(snapshots) => {
                eprintln!("{label} restoring both databases from their snapshots");
                snapshots.restore(databases).await.context("restoring the snapshots")?;
            }
        }
        start.reset_seconds = Some(began.elapsed().as_secs_f64());
    }
    let began = Instant::now();
    for target in Target::ALL {
        let entry = start.databases.entry(target.name().to_owned()).or_default();
        if let Err(error) = warm_and_fingerprint(target, databases, entry).await {
            entry.notes.push(format!("warm-up or fingerprint failed: {error:#}"));
        }
    }
    start.warm_seconds = Some(began.elapsed().as_secs_f64());
    Ok(start)
}

/// Checkpoints both databases and waits (at most `limit`) until they are quiet, recording it in
/// `start`.
pub async fn wait_quiet(databases: &Databases, limit: Duration, start: &mut StartState, label: &str) {
    quiet::wait(databases, limit, start).await;
    if !start.quiet {
        eprintln!(
            "{label} note: the databases were not quiet after {:.0} s: {}",
            start.waited_seconds,
            start.not_quiet.join("; ")
        );
    }
}

/// `reset`, then `wait_quiet`: a start without load in between.
pub async fn prepare(how: &Reset, databases: &Databases, limit: Duration, label: &str) -> Result<StartState> {
    let mut start = reset(how, databases, label).await?;
    wait_quiet(databases, limit, &mut start, label).await;
    Ok(start)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Reads every page of the orders and their indexes once, and records the data's fingerprint,
/// count and size on disk.
async fn warm_and_fingerprint(target: Target, databases: &Databases, entry: &mut DatabaseStart) -> Result<()> {
    match target {
        Target::Pg => {
            let (client, _connection) = pg_session(&databases.database_url).await?;
            if let Err(error) = orders_pg::admin::prewarm_orders(&client).await {
                entry.notes.push(format!("pg_prewarm: {error}"));
            }
            let (fingerprint, count) = orders_pg::admin::fingerprint(&client).await?;
            entry.data_fingerprint = Some(fingerprint);
            entry.orders = u64::try_from(count).ok();
            entry.bytes_on_disk = Some(orders_pg::admin::database_size(&client).await? as f64);
        }
        Target::Mongo => {
            let client = mongo_client(&databases.mongodb_uri).await?;
            let orders = client.database(&databases.mongodb_db).collection::<Document>(COLLECTION);
            orders_mongo::admin::warm(&orders).await?;
            let mut digest = Md5::new();
            let count = orders_mongo::admin::fingerprint(&orders, |bytes| digest.update(bytes)).await?;
            entry.data_fingerprint = Some(hex(&digest.finalize()));
            entry.orders = Some(count);
            let stats = orders_mongo::admin::coll_stats(&orders).await?.unwrap_or_default();
            let size = |name: &str| match stats.get(name)? {
                mongodb::bson::Bson::Double(v) => Some(*v),
                mongodb::bson::Bson::Int32(v) => Some(f64::from(*v)),
                mongodb::bson::Bson::Int64(v) => Some(*v as f64),
                _ => None,
            };
            entry.bytes_on_disk = size("storageSize").zip(size("totalIndexSize")).map(|(a, b)| a + b);
        }
    }
    Ok(())
}
