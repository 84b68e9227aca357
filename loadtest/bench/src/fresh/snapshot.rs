//! Snapshots of both databases, taken once after the first load and restored before every repeat
//! instead of reloading: PostgreSQL's orders database copied as a template database
//! (`CREATE DATABASE ... TEMPLATE ... STRATEGY FILE_COPY`: its files at a checkpoint, no WAL), and
//! mongod's whole data directory copied with the server stopped (`infra/local/stack.sh
//! mongo-snapshot` / `mongo-restore`). On the local stack under the demo's budgets, 100,000 orders
//! restore in about 0.5 s (PostgreSQL) and 3.5 s (mongod, most of it its stop and start), where a
//! reload takes 6.5 s; and a restore leaves both servers exactly as the snapshot was, where every
//! reload lays the files out anew (mongod's on-disk size differed by 3% between two reloads).
//!
//! A restore keeps what a running service set on the index since the snapshot (`fastupdate`), and
//! ends every session on the database: the services' pools reconnect on their next request.

use crate::databases::{Databases, pg_session};
use crate::stack::Stack;
use anyhow::{Context, Result};
use orders_pg::admin;

/// The snapshots of one data set.
#[derive(Debug, Clone)]
pub struct Snapshots {
    stack: Stack,
    admin_url: String,
    /// The PostgreSQL database the services use, and its template copy.
    pg_database: String,
    pg_snapshot: String,
    /// The name of mongod's data directory copy.
    mongo_snapshot: String,
}

/// The PostgreSQL database named in `url`.
fn database_of(url: &str) -> Result<String> {
    let config: tokio_postgres::Config = url.parse().context("the PostgreSQL URL")?;
    config.get_dbname().map(str::to_owned).context("the PostgreSQL URL names no database")
}

impl Snapshots {
    /// Snapshots of what both databases hold now, named after the data set (`label`: letters,
    /// digits, `_`).
    pub async fn take(stack: &Stack, databases: &Databases, admin_url: &str, label: &str) -> Result<Self> {
        let pg_database = database_of(&databases.database_url)?;
        let snapshots = Self {
            stack: stack.clone(),
            admin_url: admin_url.to_owned(),
            pg_snapshot: format!("{pg_database}_snap_{label}"),
            pg_database,
            mongo_snapshot: format!("{}_{label}", databases.mongodb_db),
        };
        let (client, _connection) = pg_session(&snapshots.admin_url).await?;
        admin::snapshot_database(&client, &snapshots.pg_database, &snapshots.pg_snapshot)
            .await
            .with_context(|| format!("copying database {} as {}", snapshots.pg_database, snapshots.pg_snapshot))?;
        stack.mongo_snapshot(&snapshots.mongo_snapshot).await?;
        Ok(snapshots)
    }

    /// A connection URL to the PostgreSQL server's `postgres` database.
    pub fn admin_url(&self) -> &str {
        &self.admin_url
    }

    /// The PostgreSQL copy (a template database nobody connects to).
    pub fn pg_template(&self) -> &str {
        &self.pg_snapshot
    }

    /// Both databases as they were when the snapshots were taken.
    pub async fn restore(&self, databases: &Databases) -> Result<()> {
        let options = {
            let (client, _connection) = pg_session(&databases.database_url).await?;
            admin::index_options(&client, "orders_items").await?
        };
        let (client, _connection) = pg_session(&self.admin_url).await?;
        admin::restore_database(&client, &self.pg_database, &self.pg_snapshot)
            .await
            .with_context(|| format!("restoring database {} from {}", self.pg_database, self.pg_snapshot))?;
        {
            let (orders, _connection) = pg_session(&databases.database_url).await?;
            admin::set_index_options(&orders, "orders_items", &options).await?;
        }
        self.stack.mongo_restore(&self.mongo_snapshot).await
    }

    /// Drops the PostgreSQL copy (mongod's stays under `.local/mongo/snapshots`, replaced by the
    /// next snapshot of the same name).
    pub async fn drop_copies(&self) {
        if let Ok((client, _connection)) = pg_session(&self.admin_url).await {
            let _ =
                client.batch_execute(&format!("DROP DATABASE IF EXISTS \"{}\" WITH (FORCE)", self.pg_snapshot)).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_database_comes_from_the_url() {
        assert_eq!(database_of("postgres://postgres@127.0.0.1:55432/orders_demo").expect("name"), "orders_demo");
        assert!(database_of("postgres://postgres@127.0.0.1:55432").is_err());
    }
}
