//! The statements the bench runner (`orders-bench`) sends to PostgreSQL besides the service's
//! own: seeding (`COPY`, `TRUNCATE`, index rebuilds, `ANALYZE`), exact counts, `CHECKPOINT`, the
//! WAL statistics, the one-query sample of the figures `/diagnostics` reports while a run is
//! measured, and creating a database. The service runs none of them, so they live with the
//! runner's engines, not in orders-pg (whose schema and `/diagnostics` types they use).

use orders_pg::diagnostics::{Diagnostics, GinIndex, TableCounters, Wal};
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

/// The hybrid layout's `sample`: the counters of `orders`
/// (no GIN pending list: this layout has none) and the WAL position.
pub async fn sample_hybrid(client: &Client) -> Result<Diagnostics, Error> {
    let row = client
        .query_one(
            "SELECT t.seq_scan, t.seq_tup_read, coalesce(t.idx_scan, 0), t.n_tup_ins, t.n_tup_upd, t.n_tup_hot_upd,
                t.n_live_tup, t.n_dead_tup,
                pg_current_wal_lsn()::text, pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint
            FROM pg_stat_user_tables t WHERE t.relid = 'orders'::regclass",
            &[],
        )
        .await?;
    Ok(Diagnostics {
        layout: Some("hybrid".into()),
        table: Some(TableCounters::from_row(&row, 0)),
        wal: Some(Wal { lsn: Some(row.get(8)), bytes: Some(row.get(9)) }),
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

/// `name` quoted as an SQL identifier.
fn identifier(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// Ends every other session on database `name` (a service's pooled connections reconnect).
pub async fn end_sessions(client: &Client, name: &str) -> Result<u64, Error> {
    let rows = client
        .query(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()",
            &[&name],
        )
        .await?;
    Ok(rows.len() as u64)
}

/// Makes `snapshot` an exact copy of database `name` (files copied at a checkpoint, so the copy
/// writes no WAL), replacing an older `snapshot`. Ends the sessions on `name` first: a database
/// with sessions cannot be a template. Run on a connection to another database.
pub async fn snapshot_database(client: &Client, name: &str, snapshot: &str) -> Result<(), Error> {
    client.batch_execute(&format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", identifier(snapshot))).await?;
    end_sessions(client, name).await?;
    client
        .batch_execute(&format!(
            "CREATE DATABASE {} TEMPLATE {} STRATEGY FILE_COPY",
            identifier(snapshot),
            identifier(name)
        ))
        .await
}

/// Replaces database `name` by a copy of `snapshot` (its sessions are ended). Run on a
/// connection to another database.
pub async fn restore_database(client: &Client, name: &str, snapshot: &str) -> Result<(), Error> {
    client.batch_execute(&format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", identifier(name))).await?;
    client
        .batch_execute(&format!(
            "CREATE DATABASE {} TEMPLATE {} STRATEGY FILE_COPY",
            identifier(name),
            identifier(snapshot)
        ))
        .await
}

pub async fn database_exists(client: &Client, name: &str) -> Result<bool, Error> {
    Ok(client.query_opt("SELECT 1 FROM pg_database WHERE datname = $1", &[&name]).await?.is_some())
}

/// `ALTER INDEX name SET (option = value, ...)` for `reloptions` as `pg_class` lists them
/// (`["fastupdate=off"]`); nothing for none.
pub async fn set_index_options(client: &Client, index: &str, reloptions: &[String]) -> Result<(), Error> {
    let options: Vec<String> = reloptions
        .iter()
        .filter_map(|option| option.split_once('='))
        .map(|(name, value)| format!("{} = '{}'", identifier(name), value.replace('\'', "''")))
        .collect();
    if options.is_empty() {
        return Ok(());
    }
    client.batch_execute(&format!("ALTER INDEX {} SET ({})", identifier(index), options.join(", "))).await
}

/// Loads every page of `orders` and its indexes into shared buffers (`pg_prewarm`, created here
/// when missing); returns the pages read.
pub async fn prewarm_orders(client: &Client) -> Result<i64, Error> {
    client.batch_execute("CREATE EXTENSION IF NOT EXISTS pg_prewarm").await?;
    let row = client
        .query_one(
            "SELECT coalesce(sum(pg_prewarm(c.oid)), 0)::bigint FROM pg_class c
             WHERE c.oid = 'orders'::regclass
                OR c.oid IN (SELECT indexrelid FROM pg_index WHERE indrelid = 'orders'::regclass)",
            &[],
        )
        .await?;
    Ok(row.get(0))
}

/// What else runs on database `name`: autovacuum workers, index builds and other client sessions
/// that are not idle, as `backend_type: query` lines.
pub async fn busy_sessions(client: &Client, name: &str) -> Result<Vec<String>, Error> {
    let rows = client
        .query(
            "SELECT backend_type || ': ' || left(coalesce(query, ''), 80) FROM pg_stat_activity
             WHERE datname = $1 AND pid <> pg_backend_pid()
               AND (backend_type = 'autovacuum worker' OR state NOT IN ('idle'))",
            &[&name],
        )
        .await?;
    Ok(rows.iter().map(|row| row.get(0)).collect())
}

/// `pg_database_size` of the current database, bytes.
pub async fn database_size(client: &Client) -> Result<i64, Error> {
    Ok(client.query_one("SELECT pg_database_size(current_database())", &[]).await?.get(0))
}

/// Logs the plan of every statement on database `name` that runs at least `threshold_ms`, as
/// JSON with its parameters (`auto_explain`, loaded into each new session of that database).
/// Applies to sessions opened afterwards, so the existing ones are ended. Needs a superuser.
pub async fn log_slow_plans(client: &Client, name: &str, threshold_ms: f64) -> Result<(), Error> {
    let database = identifier(name);
    client
        .batch_execute(&format!(
            "ALTER DATABASE {database} SET session_preload_libraries = 'auto_explain';
             ALTER DATABASE {database} SET auto_explain.log_min_duration = '{threshold_ms:.3}ms';
             ALTER DATABASE {database} SET auto_explain.log_format = 'json';"
        ))
        .await?;
    end_sessions(client, name).await.map(drop)
}

/// The threshold of a plan log the server keeps for every session already (`auto_explain` in
/// `shared_preload_libraries` with `auto_explain.log_min_duration` set in its configuration, as on
/// the droplets), in milliseconds; `None` when it keeps none. A threshold set for one database
/// (what `log_slow_plans` does) is not the server's and does not count.
pub async fn server_plan_threshold_ms(client: &Client) -> Result<Option<f64>, Error> {
    let row = client
        .query_opt(
            "SELECT setting::float8 FROM pg_settings WHERE name = 'auto_explain.log_min_duration' \
             AND source IN ('configuration file', 'command line', 'environment variable')",
            &[],
        )
        .await?;
    Ok(row.map(|row| row.get::<_, f64>(0)).filter(|ms| *ms >= 0.0))
}

/// How this session can read the server's JSON log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogAccess {
    /// Any server file, through `pg_read_binary_file`: a superuser or `pg_read_server_files`.
    ServerFiles,
    /// The current JSON log only, through the deployment's SECURITY DEFINER functions
    /// (`orders_bench_log_position()`, `orders_bench_read_log(bigint, bigint)`), for a role that
    /// may not read server files (the droplets').
    CurrentLogOnly,
}

/// Which `LogAccess` this database offers: the deployment's functions when it has them.
pub async fn log_access(client: &Client) -> Result<LogAccess, Error> {
    let row = client.query_one("SELECT to_regprocedure('orders_bench_log_position()') IS NOT NULL", &[]).await?;
    Ok(if row.get(0) { LogAccess::CurrentLogOnly } else { LogAccess::ServerFiles })
}

/// The server's current JSON log file (`log_destination` with `jsonlog`, `logging_collector`
/// on) and its size, or `None` when the server writes none.
pub async fn json_log_position(client: &Client, access: LogAccess) -> Result<Option<(String, i64)>, Error> {
    let sql = match access {
        LogAccess::CurrentLogOnly => "SELECT file, size FROM orders_bench_log_position()",
        LogAccess::ServerFiles => {
            "SELECT f, (pg_stat_file(f, true)).size FROM (SELECT pg_current_logfile('jsonlog') AS f) AS current"
        }
    };
    let row = client.query_one(sql, &[]).await?;
    Ok(row.get::<_, Option<String>>(0).zip(row.get::<_, Option<i64>>(1)))
}

/// Up to `length` bytes of the server file `path` from `offset` (relative paths are the data
/// directory's); empty past its end or when it is gone. With `CurrentLogOnly` the file read is
/// always the current JSON log: the caller passes that one (`json_log_position`) or nothing.
pub async fn read_server_file(
    client: &Client,
    access: LogAccess,
    path: &str,
    offset: i64,
    length: i64,
) -> Result<Vec<u8>, Error> {
    let row = match access {
        LogAccess::CurrentLogOnly => {
            client.query_one("SELECT orders_bench_read_log($1, $2)", &[&offset, &length]).await?
        }
        LogAccess::ServerFiles => {
            client.query_one("SELECT pg_read_binary_file($1, $2, $3, true)", &[&path, &offset, &length]).await?
        }
    };
    Ok(row.get::<_, Option<Vec<u8>>>(0).unwrap_or_default())
}

/// A digest of every order in id order (of each row's id and JSON text) and their number: the
/// same for two databases holding the same orders.
pub async fn fingerprint(client: &Client) -> Result<(String, i64), Error> {
    let row = client
        .query_one(
            "SELECT coalesce(md5(string_agg(md5(id::text || ':' || doc::text), '' ORDER BY id)), ''), count(*)
             FROM orders",
            &[],
        )
        .await?;
    Ok((row.get(0), row.get(1)))
}

/// One index of the current schema as the catalog describes it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct IndexEntry {
    pub table: String,
    pub index: String,
    /// `pg_am.amname`: `btree`, `gin`, ...
    pub access_method: String,
    pub definition: String,
}

/// Every index on the tables of the current schema with its access method, from the catalogs
/// (`pg_index`, `pg_class`, `pg_am`): what a layout can suffer from, read from the engine rather
/// than assumed (a GIN pending list exists only on a `gin` index).
pub async fn indexes(client: &Client) -> Result<Vec<IndexEntry>, Error> {
    let rows = client
        .query(
            "SELECT t.relname::text, c.relname::text, am.amname::text, pg_get_indexdef(i.indexrelid)
             FROM pg_index i
             JOIN pg_class c ON c.oid = i.indexrelid
             JOIN pg_class t ON t.oid = i.indrelid
             JOIN pg_am am ON am.oid = c.relam
             WHERE t.relnamespace = current_schema()::regnamespace
             ORDER BY t.relname, c.relname",
            &[],
        )
        .await?;
    Ok(rows
        .iter()
        .map(|row| IndexEntry {
            table: row.get(0),
            index: row.get(1),
            access_method: row.get(2),
            definition: row.get(3),
        })
        .collect())
}
