//! `orders-pg`: the order service on PostgreSQL jsonb. `config` holds the Postgres settings and
//! their environment toggles, `migrate` applies `migrations/postgres` at start-up, `pool` opens
//! connections with those settings (and `tls`, from `sslmode` in `DATABASE_URL`) and hands them
//! out within `POOL_TIMEOUT_MS` (shared with `orders-pg-hybrid`), `sql` holds every statement and runs it prepared or unprepared, `store`
//! implements `OrderStore` (one round trip per request on the success path) with `writes` (the
//! keyed insert and the status change, shared with `orders-pg-hybrid`), and `diagnostics` reads
//! back what the server is really doing (settings, GIN pending list, table counters, plans of the
//! product query), with `replication` (the member the pool writes to and what a commit waits for,
//! shared with `orders-pg-hybrid`). What the bench runner asks this database besides (seeding,
//! counts, `CHECKPOINT`, WAL figures) lives in `orders-bench-engines`.

#![forbid(unsafe_code)]

pub mod config;
pub mod diagnostics;
pub mod errors;
pub mod migrate;
pub mod pool;
pub mod pools;
pub mod replication;
pub mod sql;
pub mod store;
pub mod testing;
pub mod tls;
pub mod writes;

pub use config::{Config, PgConfig};
pub use store::PgStore;
