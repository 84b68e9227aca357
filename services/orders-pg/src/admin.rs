//! The statements the bench runner (`orders-bench`) sends to PostgreSQL besides the service's
//! own: seeding (`COPY`, `TRUNCATE`, index rebuilds, `ANALYZE`), exact counts, `CHECKPOINT`, the
//! WAL statistics, the one-query sample of the figures `/diagnostics` reports while a run is
//! measured, and creating a database. They live beside the service's SQL so that everything this
//! engine is asked is in one crate, and a third backend gets a module of the same shape. The
//! service itself runs none of them.

use crate::diagnostics::{Diagnostics, GinIndex, TableCounters, Wal};
use tokio_postgres::{Client, Error, GenericClient};

/// Holds the table for the whole load; the sort memory of the index builds.
pub fn lock_for_load(maintenance_work_mem: &str) -> String {
    format!("LOCK TABLE orders IN ACCESS EXCLUSIVE MODE; SET LOCAL maintenance_work_mem = '{maintenance_work_mem}'")
}

pub const TRUNCATE: &str = "TRUNCATE orders";
/// After the load's commit: the session's insert counts sent to the statistics now (PostgreSQL
/// 15+), then VACUUM ANALYZE (cheap on frozen pages), which resets the counts autovacuum acts on.
pub const FLUSH_STATS: &str = "SELECT pg_stat_force_next_flush()";
pub const VACUUM_ANALYZE: &str = "VACUUM (ANALYZE) orders";
/// Streams `(id, doc)` rows in the binary format, frozen (the table was truncated in the same
/// transaction).
pub const COPY_ORDERS: &str = "COPY orders (id, doc) FROM STDIN (FORMAT binary, FREEZE)";

pub fn drop_index(name: &str) -> String {
    format!("DROP INDEX IF EXISTS {name}")
}

pub async fn holds_orders(client: &impl GenericClient) -> Result<bool, Error> {
    Ok(client.query_one("SELECT EXISTS (SELECT 1 FROM orders)", &[]).await?.get(0))
}

/// The `reloptions` of an index (`["fastupdate=off"]`), empty when it has none or is missing.
pub async fn index_options(client: &impl GenericClient, index: &str) -> Result<Vec<String>, Error> {
    let row = client.query_opt("SELECT reloptions FROM pg_class WHERE oid = to_regclass($1)", &[&index]).await?;
    Ok(row.and_then(|row| row.get::<_, Option<Vec<String>>>(0)).unwrap_or_default())
}

/// Heap, TOAST and indexes of `orders`, bytes.
pub async fn total_size(client: &Client) -> Result<i64, Error> {
    Ok(client.query_one("SELECT pg_total_relation_size('orders')", &[]).await?.get(0))
}

pub async fn count_orders(client: &Client) -> Result<i64, Error> {
    Ok(client.query_one("SELECT count(*) FROM orders", &[]).await?.get(0))
}

/// Needs a superuser or `pg_checkpoint`.
pub async fn checkpoint(client: &Client) -> Result<(), Error> {
    client.batch_execute("CHECKPOINT").await
}

/// `pg_stat_wal`: server-wide WAL records and full-page images since the last reset.
pub async fn wal_records_and_fpi(client: &Client) -> Result<(f64, f64), Error> {
    let row = client.query_one("SELECT wal_records::float8, wal_fpi::float8 FROM pg_stat_wal", &[]).await?;
    Ok((row.get(0), row.get(1)))
}

/// WAL flushes, server-wide: PostgreSQL 18 counts them in `pg_stat_io` (object `wal`), 14 to 17
/// in `pg_stat_wal.wal_sync`. `None` when neither answers.
pub async fn wal_flushes(client: &Client) -> Option<f64> {
    const PG18: &str = "SELECT sum(fsyncs)::float8 FROM pg_stat_io WHERE object = 'wal'";
    const PG14: &str = "SELECT wal_sync::float8 FROM pg_stat_wal";
    for sql in [PG18, PG14] {
        if let Ok(row) = client.query_one(sql, &[]).await {
            return row.get::<_, Option<f64>>(0);
        }
    }
    None
}

/// The figures of `/diagnostics` a run is explained by, in one query: the GIN pending list, the
/// table counters of `orders` and the WAL position (`source` is left for the caller to name).
pub async fn sample(client: &Client) -> Result<Diagnostics, Error> {
    let row = client
        .query_one(
            "SELECT g.pending_pages::bigint, g.pending_tuples::bigint,
                t.seq_scan, t.seq_tup_read, coalesce(t.idx_scan, 0), t.n_tup_ins, t.n_tup_upd, t.n_tup_hot_upd,
                t.n_live_tup, t.n_dead_tup,
                pg_current_wal_lsn()::text, pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint
            FROM pgstatginindex('orders_items') g, pg_stat_user_tables t
            WHERE t.relid = 'orders'::regclass",
            &[],
        )
        .await?;
    Ok(Diagnostics {
        gin_index: Some(GinIndex {
            pending_pages: Some(row.get(0)),
            pending_tuples: Some(row.get(1)),
            ..GinIndex::default()
        }),
        table: Some(TableCounters::from_row(&row, 2)),
        wal: Some(Wal { lsn: Some(row.get(10)), bytes: Some(row.get(11)) }),
        ..Diagnostics::default()
    })
}

/// Creates database `name` unless it exists (on a connection to another database).
pub async fn create_database(client: &Client, name: &str) -> Result<(), Error> {
    let exists = client.query_opt("SELECT 1 FROM pg_database WHERE datname = $1", &[&name]).await?.is_some();
    if !exists {
        client.batch_execute(&format!("CREATE DATABASE \"{name}\"")).await?;
    }
    Ok(())
}
