//! Applies `migrations/postgres/*.sql` at start-up: each file once, in order, recorded in
//! `schema_migrations`, all inside one transaction under an advisory lock so several services
//! starting at once against the same database do not race. Then applies `PG_GIN_FASTUPDATE`.

use crate::config::OnOff;
use tokio_postgres::Client;

/// (version, SQL) in the order they apply; compiled in so the binary needs no files beside it.
const MIGRATIONS: &[(&str, &str)] = &[
    ("0001_orders", include_str!("../../../migrations/postgres/0001_orders.sql")),
    ("0002_extensions", include_str!("../../../migrations/postgres/0002_extensions.sql")),
    ("0003_idempotency_key", include_str!("../../../migrations/postgres/0003_idempotency_key.sql")),
];

/// The secondary indexes of `0001_orders.sql` as (name, statement), each statement exactly as in
/// that file, for tools that drop them before a bulk load and build them after (`orders-bench
/// seed`), so the service and the seeder cannot disagree about their definitions.
pub const SECONDARY_INDEXES: &[(&str, &str)] = &[
    (
        "orders_customer",
        "CREATE INDEX IF NOT EXISTS orders_customer ON orders (((doc->'customer'->>'id')::bigint), id)",
    ),
    ("orders_items", "CREATE INDEX IF NOT EXISTS orders_items ON orders USING gin ((doc->'items') jsonb_path_ops)"),
];

/// An arbitrary key for `pg_advisory_xact_lock`, shared by every orders-pg process.
const MIGRATION_LOCK: i64 = 0x6f72_6465_7273;

/// Applies pending migrations; returns the versions applied now.
pub async fn run(client: &mut Client) -> Result<Vec<&'static str>, tokio_postgres::Error> {
    apply(client, MIGRATIONS, MIGRATION_LOCK, "schema_migrations").await
}

/// Applies those of `migrations` not yet recorded in `table` (created only if missing: a role
/// without CREATE on the schema finds an applied database as it is), in order, in one
/// transaction under the advisory lock `lock`; returns the versions applied now. Each layout
/// (jsonb, hybrid) has its own list, table and lock, so neither can take the other's records.
/// `table` is the caller's constant, never input.
pub async fn apply(
    client: &mut Client,
    migrations: &[(&'static str, &'static str)],
    lock: i64,
    table: &str,
) -> Result<Vec<&'static str>, tokio_postgres::Error> {
    let tx = client.transaction().await?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&lock]).await?;
    // Not `CREATE TABLE IF NOT EXISTS`: PostgreSQL checks CREATE on the schema before it looks
    // whether the table exists, and a service's role that only reads the records has no CREATE.
    let exists: bool = tx.query_one("SELECT to_regclass($1) IS NOT NULL", &[&table]).await?.get(0);
    if !exists {
        tx.batch_execute(&format!(
            "CREATE TABLE {table} (
                 version    text PRIMARY KEY,
                 applied_at timestamptz NOT NULL DEFAULT now())"
        ))
        .await?;
    }
    let applied: Vec<String> =
        tx.query(&format!("SELECT version FROM {table}"), &[]).await?.iter().map(|row| row.get(0)).collect();
    let mut now_applied = Vec::new();
    for (version, sql) in migrations {
        if applied.iter().any(|done| done == version) {
            continue;
        }
        tx.batch_execute(sql).await?;
        tx.execute(&format!("INSERT INTO {table} (version) VALUES ($1)"), &[version]).await?;
        now_applied.push(*version);
    }
    tx.commit().await?;
    Ok(now_applied)
}

/// `off`: stop using the pending list and flush it into the index; `on`: use it again.
pub async fn set_gin_fastupdate(client: &Client, setting: OnOff) -> Result<(), tokio_postgres::Error> {
    match setting {
        OnOff::Off => {
            client.batch_execute("ALTER INDEX orders_items SET (fastupdate = off)").await?;
            client.execute("SELECT gin_clean_pending_list('orders_items'::regclass)", &[]).await?;
        }
        OnOff::On => client.batch_execute("ALTER INDEX orders_items SET (fastupdate = on)").await?,
    }
    Ok(())
}
