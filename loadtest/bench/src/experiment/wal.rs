//! PostgreSQL's count of WAL flushes (fsyncs of the WAL), server-wide, for the durability
//! experiment: with `synchronous_commit = on` a commit waits for one (several commits may share
//! it: group commit), with `off` the WAL writer flushes in the background. PostgreSQL 18 counts
//! them in `pg_stat_io` (object `wal`), 14 to 17 in `pg_stat_wal.wal_sync`. With a
//! `wal_sync_method` that writes synchronously (`open_datasync`, `open_sync`) there is no separate
//! flush and the count stays 0. Out of reach or unreadable: `None`.

use std::time::Duration;
use tokio_postgres::NoTls;

pub async fn flushes(database_url: &str) -> Option<f64> {
    let query = async {
        let (client, connection) = tokio_postgres::connect(database_url, NoTls).await.ok()?;
        let connection = tokio::spawn(connection);
        let value = orders_pg::admin::wal_flushes(&client).await;
        drop(client);
        let _ = connection.await;
        value
    };
    tokio::time::timeout(Duration::from_secs(15), query).await.ok().flatten()
}
