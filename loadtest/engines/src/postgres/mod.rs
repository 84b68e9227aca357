//! PostgreSQL as a backend of the runner (`pg`, orders-pg over `postgres`). Its statements live in
//! `crate::postgres::admin`; here is what the runner does with them: seeding (`seed`: binary `COPY`),
//! counts, the warm-up and fingerprint of a repeat's start, checkpoints and what else runs, the
//! snapshot of the data set as a template database, the per-step sample (one query), the
//! explaining figures of a run (`explain`, from `/diagnostics` read by `snapshot`), and the facts
//! the fairness gate compares.

pub mod admin;
pub mod explain;
pub mod plan_log;
pub mod plan_probe;
pub mod seed;
pub mod snapshot;

use super::{Backend, Facts, Local, PlanLog, Sampler, Seeder};
use crate::databases::{Databases, pg_session, with_database};
use anyhow::{Context, Result};
use async_trait::async_trait;
use orders_bench_model::explain::EngineExplain;
use orders_bench_model::plans::PlanProbe;
use orders_bench_model::start::DatabaseStart;
use orders_bench_model::target::TargetInfo;
use orders_dataset::manifest::Manifest;
use serde_json::Value;
use snapshot::PgSnapshot;
use std::time::Duration;

/// Its target's name (the key of its figures), label, service and database server, as
/// `TargetInfo` carries them and the experiments' tables name them.
pub const NAME: &str = "pg";
pub const LABEL: &str = "PostgreSQL";
pub const SERVICE: &str = "orders-pg";
pub const SERVER: &str = "postgres";
/// All of the above, as the runner passes it around.
pub const IDENTITY: super::Identity = super::Identity { name: NAME, label: LABEL, service: SERVICE, server: SERVER };

const COUNT_LIMIT: Duration = Duration::from_secs(15);
const CONNECT_LIMIT: Duration = Duration::from_secs(5);

#[derive(Debug, Clone)]
pub struct Postgres {
    url: String,
}

impl Postgres {
    pub fn new(databases: &Databases) -> Self {
        Self::at(&databases.database_url)
    }

    /// Over the database at `url` (another layout's backend builds on this one).
    pub fn at(url: &str) -> Self {
        Self { url: url.to_owned() }
    }

    /// Its server's `postgres` database, with its URL's credentials: where databases of that
    /// server are created, copied and dropped. Each backend's own, so that a database on a second
    /// server (the hybrid's on the local stack) is snapshotted there, not on the first one's.
    pub fn admin_url(&self) -> String {
        with_database(&self.url, "postgres")
    }

    /// The runner's own connection for the per-step samples of `layout`'s tables.
    pub async fn sampler_of(&self, layout: Layout) -> Result<Box<dyn Sampler>, String> {
        match tokio::time::timeout(CONNECT_LIMIT, crate::databases::pg_session(&self.url)).await {
            Ok(Ok((client, connection))) => Ok(Box::new(PgSampler { client, connection, layout })),
            Ok(Err(error)) => Err(error.to_string()),
            Err(_) => Err("no answer within 5 s".into()),
        }
    }
}

/// How the orders are stored, for what a sample reads: orders-pg's jsonb table with its GIN
/// index, or the hybrid layout's columns (`orders_pg_hybrid`), which has no GIN index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    Jsonb,
    Hybrid,
}

/// The PostgreSQL database named in `url`.
pub fn database_of(url: &str) -> Result<String> {
    let config = crate::databases::pg_config(url).context("the PostgreSQL URL")?;
    config.get_dbname().map(str::to_owned).context("the PostgreSQL URL names no database")
}

/// Whether Postgres makes a commit wait for the WAL flush: `fsync` on and `synchronous_commit`
/// anything but `off` (`local`, `remote_write`, `remote_apply` all flush locally first).
pub fn waits_for_disk(pg: &PgSnapshot) -> Option<bool> {
    let fsync = pg.settings.fsync.as_ref()?;
    let commit = pg.settings.synchronous_commit.as_ref()?;
    Some(fsync == "on" && commit != "off")
}

/// The servers that hold a commit when it is acknowledged, from orders-pg's `replication`: this
/// one, and each synchronous standby when the commit waits for its flush or replay
/// (`synchronous_commit` `on` or `remote_apply`; `remote_write` waits for a write the standby
/// has not flushed, `local` and `off` for none). `ANY n (...)`: n of the quorum standbys.
pub fn copies(replication: &Value) -> Option<u32> {
    let commit = replication["synchronous_commit"].as_str()?;
    let names = replication["synchronous_standby_names"].as_str()?;
    if replication["in_recovery"].as_bool() == Some(true) {
        return None;
    }
    if names.trim().is_empty() || !matches!(commit, "on" | "remote_apply") {
        return Some(1);
    }
    let standbys = replication["standbys"].as_array()?;
    let state = |s: &Value| s["sync_state"].as_str().map(str::to_owned);
    let states: Option<Vec<String>> = standbys.iter().map(state).collect();
    let states = states?;
    let sync = states.iter().filter(|s| *s == "sync").count() as u32;
    let quorum = states.iter().filter(|s| *s == "quorum").count() as u32;
    let any = names.trim().strip_prefix("ANY ").and_then(|rest| rest.split_whitespace().next()?.parse::<u32>().ok());
    Some(1 + sync + any.map_or(quorum, |n| n.min(quorum)))
}

/// `shared_buffers` as PostgreSQL prints it (`512MB`, `1GB`, `128kB`, `8192` pages of 8 kB).
pub fn size_setting(text: &str) -> Option<u64> {
    let text = text.trim();
    let digits = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
    let (number, unit) = (text[..digits].parse::<u64>().ok()?, &text[digits..]);
    let factor = match unit {
        "" => 8192,
        "kB" => 1 << 10,
        "MB" => 1 << 20,
        "GB" => 1 << 30,
        "TB" => 1 << 40,
        _ => return None,
    };
    Some(number * factor)
}

/// The name of the template database that holds the snapshot of data set `label`.
fn snapshot_name(url: &str, label: &str) -> Result<String> {
    Ok(format!("{}_snap_{label}", database_of(url)?))
}

/// The template database holding the snapshot of data set `label` of the database at `url`.
pub fn template(url: &str, label: &str) -> String {
    snapshot_name(url, label).unwrap_or_default()
}

/// `pg_stat_wal`: server-wide WAL records and full-page images since the last reset, and the WAL
/// flushes (fsyncs of the WAL: with `synchronous_commit = on` a commit waits for one, and several
/// commits may share it; PostgreSQL 18 counts them in `pg_stat_io`, 14 to 17 in
/// `pg_stat_wal.wal_sync`; a synchronous `wal_sync_method` makes none).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WalStats {
    pub records: f64,
    pub fpi: f64,
    pub flushes: Option<f64>,
}

/// The WAL a PostgreSQL layout's server wrote between `before` and `after`, in its figures.
pub fn add_wal(figures: &mut EngineExplain, before: &WalStats, after: &WalStats) {
    if let EngineExplain::Pg(pg) = figures {
        let flushes = after.flushes.zip(before.flushes).map(|(a, b)| a - b);
        pg.add_wal_stats(after.records - before.records, after.fpi - before.fpi, flushes);
    }
}

/// The table counters of `orders` once every session on its database has sent its own: the
/// round's sessions are ended (the services' pools reconnect on their next request; their plan
/// counts were read before), then the counters read by a new sampler of `backend`'s layout
/// (one opened before would have been ended too).
pub async fn flushed_table_counters(backend: &dyn Backend) -> Result<Value> {
    let (client, _connection) = crate::databases::pg_session(backend.database_url()).await?;
    let name: String = client.query_one("SELECT current_database()", &[]).await?.get(0);
    admin::end_sessions(&client, &name).await.context("ending the round's sessions")?;
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let sample = backend.sampler().await.map_err(|error| anyhow::anyhow!(error))?.sample().await;
    sample.get("table").cloned().with_context(|| format!("no table counters in the sample: {sample}"))
}

pub async fn wal_stats(database_url: &str) -> Option<WalStats> {
    let query = async {
        let (client, connection) = crate::databases::pg_session(database_url).await.ok()?;
        let figures = admin::wal_records_and_fpi(&client).await.ok();
        let flushes = admin::wal_flushes(&client).await;
        drop(client);
        let _ = connection.await;
        figures.map(|(records, fpi)| WalStats { records, fpi, flushes })
    };
    tokio::time::timeout(COUNT_LIMIT, query).await.ok().flatten()
}

struct PgSampler {
    client: tokio_postgres::Client,
    connection: tokio::task::JoinHandle<()>,
    layout: Layout,
}

impl Drop for PgSampler {
    fn drop(&mut self) {
        self.connection.abort();
    }
}

#[async_trait]
impl Sampler for PgSampler {
    async fn sample(&self) -> Value {
        match self.layout {
            Layout::Jsonb => super::sample_json(admin::sample(&self.client).await),
            Layout::Hybrid => super::sample_json(admin::sample_hybrid(&self.client).await),
        }
    }

    fn cost(&self) -> (u64, &'static str) {
        (1, "queries")
    }
}

#[async_trait]
impl Backend for Postgres {
    fn info(&self) -> TargetInfo {
        IDENTITY.info()
    }

    fn database_url(&self) -> &str {
        &self.url
    }

    fn default_service_url(&self) -> &'static str {
        "http://127.0.0.1:8080"
    }

    fn pool_setting(&self) -> &'static str {
        "PG_POOL_SIZE"
    }

    fn service_env(&self) -> Vec<(String, String)> {
        vec![("DATABASE_URL".into(), self.url.clone())]
    }

    async fn create_database(&self) -> Result<()> {
        let name = database_of(&self.url)?;
        let (client, _connection) = pg_session(&self.admin_url()).await?;
        admin::create_database(&client, &name).await.with_context(|| format!("creating database {name}"))
    }

    async fn seeder(&self) -> Result<Box<dyn Seeder>> {
        Ok(Box::new(seed::PgTarget::connect(&self.url).await?))
    }

    async fn count_orders(&self) -> Option<u64> {
        let count = async {
            let (client, _connection) = pg_session(&self.url).await.ok()?;
            admin::count_orders(&client).await.ok().and_then(|c| u64::try_from(c).ok())
        };
        tokio::time::timeout(COUNT_LIMIT, count).await.ok().flatten()
    }

    async fn warm_and_fingerprint(&self, entry: &mut DatabaseStart) -> Result<()> {
        let (client, _connection) = pg_session(&self.url).await?;
        if let Err(error) = admin::prewarm_orders(&client).await {
            entry.notes.push(format!("pg_prewarm: {error}"));
        }
        let (fingerprint, count) = admin::fingerprint(&client).await?;
        entry.data_fingerprint = Some(fingerprint);
        entry.orders = u64::try_from(count).ok();
        entry.bytes_on_disk = Some(admin::database_size(&client).await? as f64);
        Ok(())
    }

    async fn checkpoint(&self) -> Result<(), String> {
        let (client, _connection) = pg_session(&self.url).await.map_err(|e| format!("{e:#}"))?;
        admin::checkpoint(&client).await.map_err(|e| e.to_string())
    }

    async fn busy(&self) -> Result<Vec<String>, String> {
        let (client, _connection) = pg_session(&self.url).await.map_err(|e| format!("{e:#}"))?;
        let name = database_of(&self.url).map_err(|e| format!("{e:#}"))?;
        admin::busy_sessions(&client, &name).await.map_err(|e| e.to_string())
    }

    /// The orders database copied as a template database (`CREATE DATABASE ... TEMPLATE ...
    /// STRATEGY FILE_COPY`: its files at a checkpoint, no WAL).
    async fn snapshot(&self, local: &Local<'_>) -> Result<()> {
        let (database, snapshot) = (database_of(&self.url)?, snapshot_name(&self.url, local.label)?);
        let (client, _connection) = pg_session(&self.admin_url()).await?;
        admin::snapshot_database(&client, &database, &snapshot)
            .await
            .with_context(|| format!("copying database {database} as {snapshot}"))
    }

    /// Keeps what a running service set on the index since the snapshot (`fastupdate`), and ends
    /// every session on the database: the services' pools reconnect on their next request.
    async fn restore(&self, local: &Local<'_>) -> Result<()> {
        let (database, snapshot) = (database_of(&self.url)?, snapshot_name(&self.url, local.label)?);
        let options = {
            let (client, _connection) = pg_session(&self.url).await?;
            admin::index_options(&client, "orders_items").await?
        };
        let (client, _connection) = pg_session(&self.admin_url()).await?;
        admin::restore_database(&client, &database, &snapshot)
            .await
            .with_context(|| format!("restoring database {database} from {snapshot}"))?;
        let (orders, _connection) = pg_session(&self.url).await?;
        admin::set_index_options(&orders, "orders_items", &options).await?;
        Ok(())
    }

    async fn drop_snapshot(&self, local: &Local<'_>) {
        let Ok(snapshot) = snapshot_name(&self.url, local.label) else { return };
        if let Ok((client, _connection)) = pg_session(&self.admin_url()).await {
            let _ = client.batch_execute(&format!("DROP DATABASE IF EXISTS \"{snapshot}\" WITH (FORCE)")).await;
        }
    }

    /// One query per sample: the GIN pending list (`pgstatginindex`), the `pg_stat_user_tables`
    /// counters of `orders` and the WAL position (`crate::postgres::admin::sample`).
    async fn sampler(&self) -> Result<Box<dyn Sampler>, String> {
        self.sampler_of(Layout::Jsonb).await
    }

    async fn wal_stats(&self) -> Option<WalStats> {
        wal_stats(&self.url).await
    }

    fn add_wal(&self, figures: &mut EngineExplain, before: &WalStats, after: &WalStats) {
        add_wal(figures, before, after);
    }

    async fn plan_probe(&self, label: &str, orders: u64, products: u64) -> Option<PlanProbe> {
        Some(plan_probe::on_snapshot(&self.url, label, orders, products).await)
    }

    async fn plan_log(&self, threshold_ms: f64) -> Option<Result<Box<dyn PlanLog>>> {
        Some(
            plan_log::DatabasePlanLog::enable(&self.url, threshold_ms)
                .await
                .map(|log| Box::new(log) as Box<dyn PlanLog>),
        )
    }

    async fn flushed_table_counters(&self) -> Option<Result<Value>> {
        Some(flushed_table_counters(self).await)
    }

    fn explain(&self, before: &Value, polled: &[(f64, &Value)], after: &Value, write_requests: u64) -> EngineExplain {
        let polled: Vec<(f64, PgSnapshot)> = polled.iter().map(|(at, p)| (*at, PgSnapshot::from_json(p))).collect();
        let explain =
            explain::pg(&PgSnapshot::from_json(before), &polled, &PgSnapshot::from_json(after), write_requests);
        EngineExplain::Pg(Box::new(explain))
    }

    fn facts(&self, diagnostics: &Value, _manifest: Option<&Manifest>) -> Facts {
        let pg = PgSnapshot::from_json(diagnostics);
        Facts {
            waits_for_disk: waits_for_disk(&pg),
            durability: format!(
                "synchronous_commit={}, fsync={}",
                pg.settings.synchronous_commit.as_deref().unwrap_or("?"),
                pg.settings.fsync.as_deref().unwrap_or("?")
            ),
            estimated_orders: pg.counter(|t| t.n_live_tup),
            estimate_source: "n_live_tup",
            unit: "rows",
            pool_size: pg.settings.pool_size.map(|p| p.to_string()),
            runtime: pg.runtime.clone(),
            copies: copies(&diagnostics["replication"]),
            copies_words: diagnostics["replication"]["commit_waits_for"].as_str().unwrap_or("not reported").to_owned(),
            own_checks: Vec::new(),
        }
    }

    fn cache_bytes(&self, diagnostics: &Value) -> Option<u64> {
        match diagnostics.pointer("/settings/shared_buffers")? {
            Value::String(text) => size_setting(text),
            Value::Number(pages) => size_setting(&pages.to_string()),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_commit_is_held_by_this_server_and_the_standbys_it_waits_to_flush() {
        let replication = |commit: &str, names: &str, states: &[&str]| {
            let standbys: Vec<Value> = states.iter().map(|s| serde_json::json!({"sync_state": s})).collect();
            serde_json::json!({"in_recovery": false, "synchronous_commit": commit,
                               "synchronous_standby_names": names, "standbys": standbys})
        };
        assert_eq!(copies(&replication("on", "", &[])), Some(1), "a single server");
        assert_eq!(copies(&replication("on", "", &["async", "async"])), Some(1), "asynchronous standbys");
        assert_eq!(copies(&replication("on", "pg2", &["sync", "async"])), Some(2), "Patroni's synchronous_mode");
        assert_eq!(copies(&replication("remote_apply", "pg2", &["sync", "async"])), Some(2));
        assert_eq!(copies(&replication("remote_write", "pg2", &["sync", "async"])), Some(1), "written, not flushed");
        assert_eq!(copies(&replication("local", "pg2", &["sync"])), Some(1));
        assert_eq!(copies(&replication("on", "ANY 1 (pg2, pg3)", &["quorum", "quorum"])), Some(2));
        let hidden = serde_json::json!({"in_recovery": false, "synchronous_commit": "on",
                                        "synchronous_standby_names": "pg2", "standbys": [{"name": "pg2"}]});
        assert_eq!(copies(&hidden), None, "pg_stat_replication hides sync_state from this role");
    }

    #[test]
    fn the_database_comes_from_the_url() {
        assert_eq!(database_of("postgres://postgres@127.0.0.1:55432/orders_demo").expect("name"), "orders_demo");
        assert!(database_of("postgres://postgres@127.0.0.1:55432").is_err());
        assert_eq!(template("postgres://h/orders_demo", "demo"), "orders_demo_snap_demo");
    }

    #[test]
    fn each_backend_reaches_its_own_servers_postgres_database() {
        let jsonb = Postgres::at("postgres://postgres@127.0.0.1:56432/orders_demo");
        let hybrid = Postgres::at("postgres://postgres@127.0.0.1:56433/orders_demo");
        assert_eq!(jsonb.admin_url(), "postgres://postgres@127.0.0.1:56432/postgres");
        assert_eq!(hybrid.admin_url(), "postgres://postgres@127.0.0.1:56433/postgres");
    }

    #[test]
    fn shared_buffers_read_in_postgres_units() {
        assert_eq!(size_setting("512MB"), Some(512 << 20));
        assert_eq!(size_setting("1GB"), Some(1 << 30));
        assert_eq!(size_setting("16384"), Some(16384 * 8192));
        assert_eq!(size_setting("lots"), None);
    }
}
