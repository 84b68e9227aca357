//! Seeding PostgreSQL: apply the service's own migrations, then in ONE transaction lock the
//! table, empty it (`--reset`), drop the secondary indexes of `orders_pg::migrate`, stream the
//! orders with binary `COPY` (int8, jsonb), build the indexes again from the same statements with
//! the storage options the dropped ones had (say `fastupdate=off` set by a running service), and
//! `VACUUM (ANALYZE)` after the commit. If the load fails, the transaction rolls back and the table is as it was.

use crate::postgres::admin;
use crate::{Loaded, Seeder, feed, refusal_message};
use anyhow::{Context, Result, bail};
use async_trait::async_trait;
use indicatif::ProgressBar;
use orders_dataset::Profile;
use orders_pg::migrate::{self, SECONDARY_INDEXES};
use orders_pg::sql::JsonbText;
use std::time::Instant;
use tokio_postgres::binary_copy::BinaryCopyInWriter;
use tokio_postgres::types::Type;
use tokio_postgres::{Client, Transaction};

/// Rows generated and sent per batch (one progress step).
const BATCH: u64 = 5_000;
/// Memory for the index builds of this transaction (the server default, 64 MB, makes the GIN
/// build spill to disk several times for a million orders).
pub const MAINTENANCE_WORK_MEM: &str = "256MB";

pub struct PgTarget {
    client: Client,
    database: String,
}

impl PgTarget {
    /// Connects and applies `migrations/postgres` exactly as the service does at start-up.
    pub async fn connect(url: &str) -> Result<Self> {
        let (mut client, database) = connect(url).await?;
        migrate::run(&mut client).await.context("applying migrations/postgres")?;
        Ok(Self { client, database })
    }
}

/// The seeder's connection to the database at `url`, and the database in words.
pub async fn connect(url: &str) -> Result<(Client, String)> {
    let database = describe(&crate::databases::pg_config(url)?);
    let (client, _connection) =
        crate::databases::pg_session(url).await.with_context(|| format!("connecting to PostgreSQL at {database}"))?;
    Ok((client, database))
}

#[async_trait]
impl Seeder for PgTarget {
    async fn refusal(&self) -> Result<Option<String>> {
        Ok(admin::holds_orders(&self.client)
            .await?
            .then(|| refusal_message("PostgreSQL table `orders`", &self.database)))
    }

    async fn load(mut self: Box<Self>, profile: Profile, reset: bool, bar: ProgressBar) -> Result<Loaded> {
        let started = Instant::now();
        let mut phases = Vec::new();
        let tx = self.client.transaction().await?;
        tx.batch_execute(&admin::lock_for_load(MAINTENANCE_WORK_MEM)).await?;
        if !reset && admin::holds_orders(&tx).await? {
            // Someone wrote orders since the check before loading.
            bail!(refusal_message("PostgreSQL table `orders`", &self.database));
        }
        // Truncated in this transaction (also when already empty), the table takes `COPY ...
        // FREEZE`: rows are written frozen and their pages all-visible, so neither the first
        // reads (setting hint bits) nor an autovacuum triggered by the inserts rewrite the table
        // during the first steps of a round, under the database's CPU budget.
        tx.batch_execute(admin::TRUNCATE).await?;
        let mut rebuild = Vec::new();
        for (name, statement) in SECONDARY_INDEXES {
            rebuild.push(with_options(statement, &admin::index_options(&tx, name).await?)?);
            tx.batch_execute(&admin::drop_index(name)).await?;
        }

        phases.push(("prepare", started.elapsed()));

        bar.set_message("COPY");
        let copying = Instant::now();
        let copied = copy_orders(&tx, admin::COPY_ORDERS, profile, &bar).await?;
        phases.push(("copy", copying.elapsed()));

        bar.set_message("building indexes");
        let indexing = Instant::now();
        for statement in &rebuild {
            tx.batch_execute(statement).await.with_context(|| format!("rebuilding: {statement}"))?;
        }
        phases.push(("indexes", indexing.elapsed()));

        bar.set_message("VACUUM ANALYZE");
        let analyzing = Instant::now();
        tx.commit().await?;
        // After the commit, once this session's counts of the inserted rows have reached the
        // statistics (PostgreSQL 15+ sends them when the session is next idle; older servers
        // refuse the call): then VACUUM ANALYZE resets both counts autovacuum acts on. Otherwise
        // it would VACUUM and ANALYZE the freshly loaded table by itself, minutes later, in the
        // middle of a round and under the database's CPU budget (a stall of a few hundred ms
        // that fails a step). VACUUM is cheap on the frozen pages of `COPY ... FREEZE`.
        let _ = self.client.batch_execute(admin::FLUSH_STATS).await;
        self.client.batch_execute(admin::VACUUM_ANALYZE).await?;
        phases.push(("commit+vacuum analyze", analyzing.elapsed()));
        let seconds = started.elapsed();

        let size = admin::total_size(&self.client).await?;
        bar.finish_with_message("done");
        Ok(Loaded {
            database: self.database,
            orders: copied,
            seconds,
            phases,
            bytes_on_disk: u64::try_from(size).unwrap_or(0),
            size_source: "pg_total_relation_size: heap, TOAST and indexes".into(),
        })
    }
}

/// `statement` with a `WITH (name = 'value', ...)` clause for `options` (as `reloptions` lists
/// them); the statements of `SECONDARY_INDEXES` end with their column list, where it belongs.
fn with_options(statement: &str, options: &[String]) -> Result<String> {
    if options.is_empty() {
        return Ok(statement.to_owned());
    }
    let clauses = options
        .iter()
        .map(|option| {
            let (name, value) = option.split_once('=').with_context(|| format!("unexpected reloption {option:?}"))?;
            if name.is_empty()
                || !name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'.')
            {
                bail!("unexpected reloption name {name:?}");
            }
            Ok(format!("{name} = '{}'", value.replace('\'', "''")))
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(format!("{statement} WITH ({})", clauses.join(", ")))
}

/// Streams every order as `(id, doc)` rows with `copy`, a binary `COPY ... FROM STDIN`
/// (`crate::postgres::admin::COPY_ORDERS`); returns the rows.
pub async fn copy_orders(tx: &Transaction<'_>, copy: &str, profile: Profile, bar: &ProgressBar) -> Result<u64> {
    let mut batches = feed::batches(profile, BATCH, |order| Ok((order.id.as_i64(), serde_json::to_vec(&order)?)));
    let sink = tx.copy_in(copy).await?;
    let writer = BinaryCopyInWriter::new(sink, &[Type::INT8, Type::JSONB]);
    let mut writer = std::pin::pin!(writer);
    while let Some(batch) = batches.recv().await {
        let batch = batch?;
        for (id, json) in &batch {
            writer.as_mut().write(&[id, &JsonbText(json)]).await?;
        }
        bar.inc(batch.len() as u64);
    }
    let copied = writer.finish().await?;
    if copied != profile.orders {
        bail!("COPY wrote {copied} rows, expected {}", profile.orders);
    }
    Ok(copied)
}

/// `postgres://host:port/database`, without user or password, for messages and the manifest.
fn describe(config: &tokio_postgres::Config) -> String {
    use tokio_postgres::config::Host;
    let host = match config.get_hosts().first() {
        Some(Host::Tcp(host)) => host.clone(),
        Some(Host::Unix(path)) => path.display().to_string(),
        None => "localhost".into(),
    };
    let port = config.get_ports().first().copied().unwrap_or(5432);
    format!("postgres://{host}:{port}/{}", config.get_dbname().unwrap_or("postgres"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_index_statements_are_those_of_the_migration() {
        let migration = include_str!("../../../../migrations/postgres/0001_orders.sql");
        let names: Vec<&str> = SECONDARY_INDEXES.iter().map(|(name, _)| *name).collect();
        assert_eq!(names, ["orders_customer", "orders_items"]);
        for (name, statement) in SECONDARY_INDEXES {
            assert!(migration.contains(statement), "{name} differs from 0001_orders.sql");
        }
    }

    #[test]
    fn storage_options_become_a_with_clause() {
        let statement = "CREATE INDEX IF NOT EXISTS i ON t USING gin ((doc->'items') jsonb_path_ops)";
        assert_eq!(with_options(statement, &[]).expect("none"), statement);
        let options = ["fastupdate=off".to_owned(), "gin_pending_list_limit=64".to_owned()];
        assert_eq!(
            with_options(statement, &options).expect("two"),
            format!("{statement} WITH (fastupdate = 'off', gin_pending_list_limit = '64')")
        );
        assert!(with_options(statement, &["x); DROP TABLE t; --=1".to_owned()]).is_err());
        assert_eq!(
            with_options("S", &["a=it's".to_owned()]).expect("quoted"),
            "S WITH (a = 'it''s')",
            "values are string literals"
        );
    }

    #[test]
    fn descriptions_leave_out_credentials() {
        let config: tokio_postgres::Config = "postgres://user:secret@db.example:6543/orders".parse().expect("url");
        assert_eq!(describe(&config), "postgres://db.example:6543/orders");
    }
}
