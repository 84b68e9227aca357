//! Seeding the hybrid layout: apply its migrations (`migrations/postgres-hybrid`), then in ONE
//! transaction lock both tables, empty them (`--reset`), stream the orders' JSON into a staging
//! table with PostgreSQL's binary `COPY` (the same rows orders-pg's seeder copies), split them
//! into the columns, the document and `order_items` by the service's own expressions
//! (`crate::hybrid::admin::SPLIT_STAGING`), and `VACUUM (FREEZE, ANALYZE)` after the commit.
//! If the load fails, the transaction rolls back and the tables are as they were.

use crate::hybrid::admin;
use crate::postgres::admin::{FLUSH_STATS, holds_orders};
use crate::postgres::seed::{MAINTENANCE_WORK_MEM, connect, copy_orders};
use crate::{Loaded, Seeder, refusal_message};
use anyhow::{Context, Result, bail};
use async_trait::async_trait;
use indicatif::ProgressBar;
use orders_dataset::Profile;
use std::time::Instant;
use tokio_postgres::Client;

const WHAT: &str = "PostgreSQL table `orders` (hybrid layout)";

pub struct HybridTarget {
    client: Client,
    database: String,
}

impl HybridTarget {
    /// Connects and applies `migrations/postgres-hybrid` exactly as the service does at start-up.
    pub async fn connect(url: &str) -> Result<Self> {
        let (mut client, database) = connect(url).await?;
        orders_pg_hybrid::migrate::run(&mut client).await.context("applying migrations/postgres-hybrid")?;
        Ok(Self { client, database })
    }
}

#[async_trait]
impl Seeder for HybridTarget {
    async fn refusal(&self) -> Result<Option<String>> {
        Ok(holds_orders(&self.client).await?.then(|| refusal_message(WHAT, &self.database)))
    }

    async fn load(mut self: Box<Self>, profile: Profile, reset: bool, bar: ProgressBar) -> Result<Loaded> {
        let started = Instant::now();
        let mut phases = Vec::new();
        let tx = self.client.transaction().await?;
        tx.batch_execute(&admin::lock_for_load(MAINTENANCE_WORK_MEM)).await?;
        if !reset && holds_orders(&tx).await? {
            bail!(refusal_message(WHAT, &self.database));
        }
        tx.batch_execute(admin::TRUNCATE).await?;
        phases.push(("prepare", started.elapsed()));

        bar.set_message("COPY");
        let copying = Instant::now();
        let copied = copy_orders(&tx, admin::COPY_STAGING, profile, &bar).await?;
        phases.push(("copy", copying.elapsed()));

        bar.set_message("into columns and order_items");
        let splitting = Instant::now();
        tx.batch_execute(admin::SPLIT_STAGING).await.context("splitting the staged orders")?;
        phases.push(("split", splitting.elapsed()));

        bar.set_message("VACUUM FREEZE ANALYZE");
        let analyzing = Instant::now();
        tx.commit().await?;
        // As for orders-pg: the insert counts reach the statistics first, so this VACUUM resets
        // what autovacuum would act on minutes later, in the middle of a round.
        let _ = self.client.batch_execute(FLUSH_STATS).await;
        self.client.batch_execute(admin::VACUUM_ANALYZE).await?;
        phases.push(("commit+vacuum analyze", analyzing.elapsed()));

        let size = admin::total_size(&self.client).await?;
        bar.finish_with_message("done");
        Ok(Loaded {
            database: self.database,
            orders: copied,
            seconds: started.elapsed(),
            phases,
            bytes_on_disk: u64::try_from(size).unwrap_or(0),
            size_source: "pg_total_relation_size of orders and order_items: heap, TOAST and indexes".into(),
        })
    }
}
