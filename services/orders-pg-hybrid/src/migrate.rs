//! Applies `migrations/postgres-hybrid/*.sql` at start-up with orders-pg's runner (each file once,
//! in order, in one transaction under an advisory lock), recorded in a table and under a lock key
//! of this layout's own, so it can never mistake orders-pg's records for its own or wait on them.

use tokio_postgres::Client;

/// (version, SQL) in the order they apply; compiled in so the binary needs no files beside it.
const MIGRATIONS: &[(&str, &str)] = &[
    ("0001_orders", include_str!("../../../migrations/postgres-hybrid/0001_orders.sql")),
    ("0002_extensions", include_str!("../../../migrations/postgres-hybrid/0002_extensions.sql")),
    ("0003_pgstattuple", include_str!("../../../migrations/postgres-hybrid/0003_pgstattuple.sql")),
];

/// The table that records applied versions (orders-pg's is `schema_migrations`).
const MIGRATIONS_TABLE: &str = "schema_migrations_hybrid";

/// An arbitrary key for `pg_advisory_xact_lock`, shared by every orders-pg-hybrid process
/// ("hybrid" in ASCII; orders-pg's is "orders").
const MIGRATION_LOCK: i64 = 0x6879_6272_6964;

/// Applies pending migrations; returns the versions applied now.
pub async fn run(client: &mut Client) -> Result<Vec<&'static str>, tokio_postgres::Error> {
    orders_pg::migrate::apply(client, MIGRATIONS, MIGRATION_LOCK, MIGRATIONS_TABLE).await
}
