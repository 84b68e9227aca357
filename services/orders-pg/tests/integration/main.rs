//! `orders-pg`'s integration tests, one test binary (each file a module: the drivers' generic
//! code is compiled and linked once, not once per file): the API and store contracts over real
//! PostgreSQL, the binary itself, faults, hostile clients, the plan cache (F1), the knobs, the
//! migration runner without CREATE, TLS to a server that accepts nothing else (`tls`), and the
//! replicated stack (`replicas`, skipped without `REPLICA_DATABASE_URL`).
//! nextest runs every test in a process of its own; `.config/nextest.toml` names the ones that
//! must run alone by module (`test(/^hostile::/)`). `write_outcome` ends the service's session in
//! the middle of a write. orders-pg-hybrid's tests include `faults`, `hostile`, `tls` and
//! `write_outcome` too; `SERVICE` and `SERVICE_BINARY` name the binary they run.

mod api_contract;
mod binary;
mod diagnostics_load;
mod faults;
mod hostile;
mod migrations;
mod plan_cache;
mod replicas;
mod store_contract;
mod tls;
mod toggles;
mod write_outcome;

/// The service the shared modules (`faults`, `hostile`) run, and its binary.
const SERVICE: &str = "orders-pg";
const SERVICE_BINARY: &str = env!("CARGO_BIN_EXE_orders-pg");

/// This crate's store, for the modules orders-pg-hybrid's tests share (`write_outcome`).
async fn connect_store(config: &orders_pg::PgConfig) -> orders_pg::PgStore {
    orders_pg::PgStore::connect(config).await.expect("connect")
}
