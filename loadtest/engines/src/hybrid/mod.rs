//! PostgreSQL's hybrid layout as a backend of the runner (`pgh`, orders-pg-hybrid over
//! `postgres`): the hot fields in typed columns beside the jsonb document. A run includes it when
//! `--database pgh=URL` names its database (a database of its own; for a CPU budget of its own,
//! on a PostgreSQL server of its own: the local stack's second one, `HYBRID_DATABASE_URL`, where
//! `demo --targets pg,mongo,pgh` puts it). What its engine does as orders-pg's does (counts,
//! `CHECKPOINT`, what else runs, snapshots as template databases on its own server, the
//! explaining figures, the fairness facts) is the `Postgres` backend's over this URL; what the
//! layout changes (seeding, the prewarm, the fingerprint, the per-step sample) is
//! `crate::hybrid::admin`'s.

pub mod admin;
pub mod seed;

use super::postgres::{Layout, Postgres};
use super::{Backend, Facts, Local, Sampler, Seeder, WalStats};
use crate::databases::pg_session;
use anyhow::{Context, Result};
use async_trait::async_trait;
use orders_bench_model::explain::EngineExplain;
use orders_bench_model::start::DatabaseStart;
use orders_bench_model::target::TargetInfo;
use orders_dataset::manifest::Manifest;
use serde_json::Value;

/// Its target's name: the key of its figures and of `--database` / `--target`.
pub const NAME: &str = "pgh";
/// Its name in prose and legends.
pub const LABEL: &str = "PostgreSQL hybrid";
/// Its service's package and binary.
pub const SERVICE: &str = "orders-pg-hybrid";
/// The variable of `infra/local/stack.sh env` naming its database on the stack's server for it.
pub const STACK_URL: &str = "HYBRID_DATABASE_URL";
/// Its database server as the CPU figures and budgets name it: its process is `postgres` like
/// orders-pg's, but the name keys its figures in `result.json`, so two servers named alike would
/// overwrite each other's.
pub const SERVER: &str = "postgres (hybrid)";
/// All of the above, as the runner passes it around.
pub const IDENTITY: super::Identity = super::Identity { name: NAME, label: LABEL, service: SERVICE, server: SERVER };

#[derive(Debug, Clone)]
pub struct Hybrid {
    pg: Postgres,
}

impl Hybrid {
    pub fn new(url: &str) -> Self {
        Self { pg: Postgres::at(url) }
    }

    /// Migrates its database exactly as orders-pg-hybrid does at start-up.
    pub async fn migrate(&self) -> Result<()> {
        let (mut client, _connection) = pg_session(self.database_url()).await?;
        orders_pg_hybrid::migrate::run(&mut client).await.context("applying migrations/postgres-hybrid")?;
        Ok(())
    }
}

#[async_trait]
impl Backend for Hybrid {
    fn info(&self) -> TargetInfo {
        IDENTITY.info()
    }

    fn database_url(&self) -> &str {
        self.pg.database_url()
    }

    fn default_service_url(&self) -> &'static str {
        "http://127.0.0.1:8082"
    }

    fn pool_setting(&self) -> &'static str {
        self.pg.pool_setting()
    }

    fn service_env(&self) -> Vec<(String, String)> {
        self.pg.service_env()
    }

    async fn create_database(&self) -> Result<()> {
        self.pg.create_database().await
    }

    async fn seeder(&self) -> Result<Box<dyn Seeder>> {
        Ok(Box::new(seed::HybridTarget::connect(self.database_url()).await?))
    }

    async fn count_orders(&self) -> Option<u64> {
        self.pg.count_orders().await
    }

    async fn warm_and_fingerprint(&self, entry: &mut DatabaseStart) -> Result<()> {
        let (client, _connection) = pg_session(self.database_url()).await?;
        if let Err(error) = admin::prewarm(&client).await {
            entry.notes.push(format!("pg_prewarm: {error}"));
        }
        let (fingerprint, count) = admin::fingerprint(&client).await?;
        entry.data_fingerprint = Some(fingerprint);
        entry.orders = u64::try_from(count).ok();
        entry.bytes_on_disk = Some(crate::postgres::admin::database_size(&client).await? as f64);
        Ok(())
    }

    async fn checkpoint(&self) -> Result<(), String> {
        self.pg.checkpoint().await
    }

    async fn busy(&self) -> Result<Vec<String>, String> {
        self.pg.busy().await
    }

    async fn snapshot(&self, local: &Local<'_>) -> Result<()> {
        self.pg.snapshot(local).await
    }

    async fn restore(&self, local: &Local<'_>) -> Result<()> {
        self.pg.restore(local).await
    }

    async fn drop_snapshot(&self, local: &Local<'_>) {
        self.pg.drop_snapshot(local).await
    }

    async fn sampler(&self) -> Result<Box<dyn Sampler>, String> {
        self.pg.sampler_of(Layout::Hybrid).await
    }

    async fn wal_stats(&self) -> Option<WalStats> {
        self.pg.wal_stats().await
    }

    fn add_wal(&self, figures: &mut EngineExplain, before: &WalStats, after: &WalStats) {
        super::postgres::add_wal(figures, before, after);
    }

    async fn flushed_table_counters(&self) -> Option<Result<Value>> {
        Some(super::postgres::flushed_table_counters(self).await)
    }

    fn explain(&self, before: &Value, polled: &[(f64, &Value)], after: &Value, write_requests: u64) -> EngineExplain {
        self.pg.explain(before, polled, after, write_requests)
    }

    fn facts(&self, diagnostics: &Value, manifest: Option<&Manifest>) -> Facts {
        self.pg.facts(diagnostics, manifest)
    }

    fn cache_bytes(&self, diagnostics: &Value) -> Option<u64> {
        self.pg.cache_bytes(diagnostics)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::databases::Databases;
    use indicatif::ProgressBar;
    use orders_dataset::Profile;

    /// Seeded with one data set, the hybrid layout holds exactly the orders orders-pg's table holds:
    /// the fingerprints (of the API's JSON of every order, the hybrid's columns joined back in) are
    /// equal, every product search row is there, and a second seed without `--reset` is refused.
    #[tokio::test]
    async fn seeded_with_the_same_data_set_it_answers_with_orders_pgs_json() {
        let profile = Profile { seed: 7, orders: 400, customers: 30, products: 12, items: 3, note_bytes: 40 };
        let pg = Postgres::new(&Databases {
            database_url: orders_pg::testing::fresh_database().await,
            ..Databases::default()
        });
        let hybrid = Hybrid::new(&orders_pg::testing::fresh_database().await);
        for backend in [&pg as &dyn Backend, &hybrid] {
            let loaded = backend.seeder().await.expect("seeder").load(profile, false, ProgressBar::hidden()).await;
            assert_eq!(loaded.expect("load").orders, 400);
        }
        let (mut jsonb, mut columns) = (DatabaseStart::default(), DatabaseStart::default());
        pg.warm_and_fingerprint(&mut jsonb).await.expect("pg fingerprint");
        hybrid.warm_and_fingerprint(&mut columns).await.expect("hybrid fingerprint");
        assert_eq!(columns.orders, Some(400));
        assert!(columns.notes.is_empty(), "{:?}", columns.notes);
        assert_eq!(columns.data_fingerprint, jsonb.data_fingerprint, "the same orders, the same JSON");

        let (client, _connection) = pg_session(hybrid.database_url()).await.expect("connect");
        let items: i64 = client.query_one("SELECT count(*) FROM order_items", &[]).await.expect("count").get(0);
        let (pg_client, _pg_connection) = pg_session(pg.database_url()).await.expect("connect");
        let expected: i64 = pg_client
            .query_one(
                "SELECT count(*) FROM (SELECT DISTINCT id, item->>'product_id' FROM orders, jsonb_array_elements(doc->'items') item) d",
                &[],
            )
            .await
            .expect("count")
            .get(0);
        assert_eq!(items, expected, "one order_items row per distinct product of each order");
        let refusal = hybrid.seeder().await.expect("seeder").refusal().await.expect("refusal");
        assert!(refusal.is_some_and(|r| r.contains("--reset")));
    }
}
