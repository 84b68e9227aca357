//! `orders-bench-engines`: a database engine as the bench runner sees it. One trait, `Backend`,
//! for everything the runner asks of an engine besides its service's own HTTP requests, and one
//! implementation per layout (`postgres`: orders-pg's jsonb, `hybrid`: orders-pg-hybrid's columns
//! beside jsonb, `mongo`: orders-mongo's), each with its `admin` statements and commands. Steps
//! only one engine has (the WAL, the plan probe, the plan log) are hooks with a default, so the
//! round above names no engine. `Targets` holds the systems under test, keyed by name (`pg`,
//! `mongo`, `pgh`); `databases` says where they are and `stack` runs the local servers.
//!
//! Adding an engine is a module here with one `impl Backend` and an `IDENTITY`, a line in `all` and
//! in `IDENTITIES`, and its service's crate and infra folder (loadtest/README.md, "Adding a backend").

pub mod databases;
mod feed;
mod figures;
pub mod hybrid;
pub mod mongo;
pub mod postgres;
pub mod stack;

pub use postgres::WalStats;

use crate::databases::Databases;
use crate::stack::Stack;
use anyhow::{Result, bail};
use async_trait::async_trait;
use indicatif::ProgressBar;
use orders_bench_model::explain::EngineExplain;
use orders_bench_model::plans::PlanProbe;
use orders_bench_model::start::DatabaseStart;
use orders_bench_model::target::TargetInfo;
use orders_dataset::Profile;
use orders_dataset::manifest::Manifest;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

/// What a sample the runner read itself says of its source (a service's own say `/diagnostics`).
pub const SAMPLE_SOURCE: &str = "orders-bench";

/// A sample as JSON, marked as the runner's own; or what kept it from being read.
fn sample_json(sample: Result<impl serde::Serialize, impl std::fmt::Display>) -> Value {
    let mut value = match sample.map(serde_json::to_value) {
        Ok(Ok(value)) => value,
        Ok(Err(error)) => json!({"error": error.to_string()}),
        Err(error) => json!({"error": error.to_string()}),
    };
    if let Some(object) = value.as_object_mut() {
        object.insert("source".into(), SAMPLE_SOURCE.into());
    }
    value
}

/// Everything the runner asks of one engine. Methods that reach the database are async and say
/// why they failed in words (the runner records it and goes on where it can).
#[async_trait]
pub trait Backend: Send + Sync {
    /// The key of its figures (`pg`), its name in prose (`PostgreSQL`), its service's and its
    /// server's process names.
    fn info(&self) -> TargetInfo;
    /// Where its database listens (seeding, counts, the CPU sampler: the URL's port).
    fn database_url(&self) -> &str;
    /// Its service's default base URL (what `round` drives without `--target`).
    fn default_service_url(&self) -> &'static str;
    /// The environment variable that sets its service's pool size (for the fairness gate's words).
    fn pool_setting(&self) -> &'static str;

    /// Its service's environment for reaching its database (what `demo` starts it with).
    fn service_env(&self) -> Vec<(String, String)>;
    /// Creates its database on the local stack when the engine does not create one on first use.
    /// A PostgreSQL backend does it through its own server's `postgres` database (its URL's server
    /// and credentials), so a database on a server of its own (the hybrid's) is made there.
    async fn create_database(&self) -> Result<()>;

    /// Connects for seeding (creating the schema as the service does) and checks the database.
    async fn seeder(&self) -> Result<Box<dyn Seeder>>;
    /// The exact number of orders it holds, when it can be asked.
    async fn count_orders(&self) -> Option<u64>;
    /// Reads every page of the orders and their indexes once, and records the data's fingerprint,
    /// count and size on disk.
    async fn warm_and_fingerprint(&self, entry: &mut DatabaseStart) -> Result<()>;
    /// Flushes what is dirty (PostgreSQL `CHECKPOINT`, MongoDB `fsync`).
    async fn checkpoint(&self) -> Result<(), String>;
    /// What else runs on its database now (background work, other clients), one line each.
    async fn busy(&self) -> Result<Vec<String>, String>;
    /// Takes a snapshot of the data set on the local stack, to restore before every repeat (on its
    /// own server: a PostgreSQL backend reaches that server's `postgres` database through its URL).
    async fn snapshot(&self, local: &Local<'_>) -> Result<()>;
    async fn restore(&self, local: &Local<'_>) -> Result<()>;
    /// Drops what `snapshot` kept, where that is worth it.
    async fn drop_snapshot(&self, local: &Local<'_>);
    /// A connection of the runner's own for the per-step samples; why not, when it cannot reach the
    /// database (it is then read through its service's `/diagnostics`).
    async fn sampler(&self) -> Result<Box<dyn Sampler>, String>;
    /// Its server's write-ahead log so far (PostgreSQL's `pg_stat_wal`), read before and after a
    /// run; `None` where the engine has none to read or it cannot be reached.
    async fn wal_stats(&self) -> Option<WalStats> {
        None
    }
    /// Adds what its write-ahead log did between `before` and `after` (`wal_stats`) to its figures.
    fn add_wal(&self, _figures: &mut EngineExplain, _before: &WalStats, _after: &WalStats) {}
    /// Its table counters once every session of the run has sent its own (PostgreSQL backends
    /// send theirs up to 10 s late, always when their session ends); `None` where they are
    /// current anyway.
    async fn flushed_table_counters(&self) -> Option<Result<Value>> {
        None
    }

    /// The planner probe on a copy of the data set's snapshot `label` (PostgreSQL's: when the
    /// prepared product search turns to a sequential scan as inserts grow), before a round loads
    /// anything; `None` where the engine has none.
    async fn plan_probe(&self, _label: &str, _orders: u64, _products: u64) -> Option<PlanProbe> {
        None
    }
    /// Turns on its log of the plans of slow statements at `threshold_ms` (PostgreSQL's
    /// `auto_explain`), before a repeat's load; `None` where the engine has none.
    async fn plan_log(&self, _threshold_ms: f64) -> Option<Result<Box<dyn PlanLog>>> {
        None
    }

    /// What its database did during a run, from its `/diagnostics` (or samples) before, during
    /// (each at its seconds after the load began) and after it, and the write requests its service
    /// was sent.
    fn explain(&self, before: &Value, polled: &[(f64, &Value)], after: &Value, write_requests: u64) -> EngineExplain;
    /// The facts the fairness gate compares, from its service's `/diagnostics`.
    fn facts(&self, diagnostics: &Value, manifest: Option<&Manifest>) -> Facts;
    /// Its engine's cache (PostgreSQL `shared_buffers`, the WiredTiger cache), from `/diagnostics`.
    fn cache_bytes(&self, diagnostics: &Value) -> Option<u64>;
}

/// A log of the plans a run's slow statements took, turned on by `Backend::plan_log`.
#[async_trait]
pub trait PlanLog: Send + Sync {
    /// The threshold in effect: the one asked for, or the server's own where it logs plans already.
    fn threshold_ms(&self) -> f64;
    /// Notes where the log stands now; `add_scans` reads what was written after.
    async fn mark(&mut self) -> Result<()>;
    /// The sequential scans logged since `mark`, attributed to the plans that ran them, added to
    /// its engine's figures (or why they could not be read).
    async fn add_scans(&self, figures: &mut EngineExplain);
}

/// Where the local stack keeps the snapshots of one data set.
pub struct Local<'a> {
    pub stack: &'a Stack,
    /// The data set's name among the snapshots (letters, digits, `_`).
    pub label: &'a str,
}

/// Loads the data set into one database.
#[async_trait]
pub trait Seeder: Send {
    /// Why it must not be seeded without `--reset`, if it must not.
    async fn refusal(&self) -> Result<Option<String>>;
    async fn load(self: Box<Self>, profile: Profile, reset: bool, bar: ProgressBar) -> Result<Loaded>;
}

/// What one database's load did, for the seeder's last line and the manifest.
pub struct Loaded {
    /// Where it went (`postgres://host/orders`), for people.
    pub database: String,
    pub orders: u64,
    pub seconds: Duration,
    /// (phase, how long it took), in the order they ran.
    pub phases: Vec<(&'static str, Duration)>,
    pub bytes_on_disk: u64,
    /// How `bytes_on_disk` was measured.
    pub size_source: String,
}

/// The runner's own connection to one database during a run.
#[async_trait]
pub trait Sampler: Send + Sync {
    /// One sample, as the service's `/diagnostics` with only the sampled sections filled.
    async fn sample(&self) -> Value;
    /// What one sample sends (`1`, `queries`), for the cost the report gives.
    fn cost(&self) -> (u64, &'static str);
}

/// What the fairness gate compares of one database.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Facts {
    /// Whether its service's writes are acknowledged only once on disk.
    pub waits_for_disk: Option<bool>,
    /// The settings that decide it, in words (`synchronous_commit=on, fsync=on`).
    pub durability: String,
    /// The orders it holds by its own statistics (for when they cannot be counted), and what
    /// that figure is (`n_live_tup`).
    pub estimated_orders: Option<f64>,
    pub estimate_source: &'static str,
    /// `rows`, `documents`.
    pub unit: &'static str,
    pub pool_size: Option<String>,
    /// Its service's runtime, in words.
    pub runtime: Option<String>,
    /// How many servers hold a write before it is acknowledged (1: a single server; a primary
    /// and its synchronous standbys; a majority of a replica set), read back from the service's
    /// `/diagnostics` (`replication`); `None`: not reported.
    pub copies: Option<u32>,
    /// Its `replication` in words (what a write waits for).
    pub copies_words: String,
    /// Checks of its own: (name, value, ok, note).
    pub own_checks: Vec<(String, String, bool, String)>,
}

/// Who an engine is wherever the runner names it: the key of its figures (`pg`), its name in
/// prose (`PostgreSQL`), its service's and its server's process names. Each backend module has
/// one (`postgres::IDENTITY`); nothing else spells them out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Identity {
    pub name: &'static str,
    pub label: &'static str,
    pub service: &'static str,
    pub server: &'static str,
}

impl Identity {
    pub fn info(&self) -> TargetInfo {
        TargetInfo::new(self.name, self.label, self.service, self.server)
    }
}

/// Every engine `all` knows, in its order.
pub const IDENTITIES: [Identity; 3] = [postgres::IDENTITY, mongo::IDENTITY, hybrid::IDENTITY];

/// The target name of every engine `all` knows, in its order (what `demo --targets` accepts).
pub const NAMES: [&str; 3] = [IDENTITIES[0].name, IDENTITIES[1].name, IDENTITIES[2].name];

/// Every engine the runner knows, over the databases `databases` names, in report order: the
/// hybrid layout only when `--database pgh=URL` names its database (the demo names it with
/// `--targets pg,mongo,pgh`).
pub fn all(databases: &Databases) -> Vec<Arc<dyn Backend>> {
    let mut all: Vec<Arc<dyn Backend>> =
        vec![Arc::new(postgres::Postgres::new(databases)), Arc::new(mongo::Mongo::new(databases))];
    if let Some(url) = databases.other(hybrid::NAME) {
        all.push(Arc::new(hybrid::Hybrid::new(url)));
    }
    all
}

/// One system under test: an engine and its service.
#[derive(Clone)]
pub struct Target {
    pub backend: Arc<dyn Backend>,
    /// Its service's base URL, without a trailing `/`.
    pub url: String,
}

impl Target {
    pub fn name(&self) -> String {
        self.backend.info().name
    }
}

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Target").field("name", &self.name()).field("url", &self.url).finish()
    }
}

/// The systems under test of a run, in report order.
#[derive(Clone, Debug)]
pub struct Targets(pub Vec<Target>);

impl Targets {
    /// Every engine of `all`, each at its service's default URL unless `urls` names another
    /// (`name=URL`, from `--target` and its aliases).
    pub fn new(databases: &Databases, urls: &[(String, String)]) -> Result<Self> {
        let backends = all(databases);
        for (name, _) in urls {
            if !backends.iter().any(|b| &b.info().name == name) {
                let known: Vec<String> = backends.iter().map(|b| b.info().name).collect();
                bail!("--target {name}=...: no such target (known: {})", known.join(", "));
            }
        }
        Ok(Self(
            backends
                .into_iter()
                .map(|backend| {
                    let name = backend.info().name;
                    let url = urls
                        .iter()
                        .rev()
                        .find(|(n, _)| *n == name)
                        .map_or(backend.default_service_url(), |(_, url)| url.as_str());
                    Target { url: url.trim_end_matches('/').to_owned(), backend }
                })
                .collect(),
        ))
    }

    pub fn iter(&self) -> impl Iterator<Item = &Target> {
        self.0.iter()
    }

    /// The targets as result.json records them.
    pub fn info(&self) -> Vec<TargetInfo> {
        self.0.iter().map(|t| t.backend.info()).collect()
    }

    pub fn names(&self) -> Vec<String> {
        self.0.iter().map(Target::name).collect()
    }

    /// `pg=http://...,mongo=http://...`: the targets as both load generators take them.
    pub fn generator_arg(&self) -> String {
        self.0.iter().map(|t| format!("{}={}", t.name(), t.url)).collect::<Vec<_>>().join(",")
    }
}

/// `NAME=URL`, as `--target` takes it.
pub fn parse_target(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((name, url)) if !name.is_empty() && url.starts_with("http") => Ok((name.to_owned(), url.to_owned())),
        _ => Err(format!("\"{text}\" is not NAME=URL, like pg=http://127.0.0.1:8080")),
    }
}

/// The refusal of one database, in the words the user needs.
pub fn refusal_message(what: &str, database: &str) -> String {
    format!(
        "{what} in {database} already holds orders; seeding on top of them would leave data the manifest does not \
         describe, so pass --reset to empty it first"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A server's name keys its CPU figures and budget in `result.json`: two PostgreSQL targets
    /// named alike would overwrite each other's (the hybrid's server would pass for orders-pg's).
    #[test]
    fn every_target_names_its_database_server_its_own_way() {
        let databases = Databases {
            others: vec![(hybrid::NAME.into(), "postgres://127.0.0.1:55433/orders".into())],
            ..Databases::default()
        };
        let servers: Vec<String> = all(&databases).iter().map(|b| b.info().database).collect();
        assert_eq!(servers, ["postgres", "mongod", "postgres (hybrid)"]);
        let names: Vec<String> = all(&databases).iter().map(|b| b.info().name).collect();
        assert_eq!(names, NAMES, "NAMES lists every engine `all` knows, in its order");
    }
}
