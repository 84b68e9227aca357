//! `orders-pg-hybrid`'s integration tests, one test binary (each file a module: compiled and
//! linked once, not once per file): the API and store contracts over real PostgreSQL, the layout
//! read back from the server, the migration, the same JSON as orders-pg, and orders-pg's
//! `write_outcome` (a session ended in the middle of a write), `faults` (crash, SIGTERM, overload),
//! `hostile` (the hostile-client suite) and `tls` (TLS to a server that accepts nothing else) on
//! this layout and binary. nextest runs every test in a process of its own; `.config/nextest.toml`
//! runs `layout` and `hostile` alone.

mod api_contract;
#[path = "../../../orders-pg/tests/integration/faults.rs"]
mod faults;
#[path = "../../../orders-pg/tests/integration/hostile.rs"]
mod hostile;
mod layout;
mod migrate;
mod same_json;
mod store_contract;
#[path = "../../../orders-pg/tests/integration/tls.rs"]
mod tls;
#[path = "../../../orders-pg/tests/integration/write_outcome.rs"]
mod write_outcome;

/// The service the modules shared with orders-pg's tests run (`faults`, `hostile`), and its binary.
const SERVICE: &str = "orders-pg-hybrid";
const SERVICE_BINARY: &str = env!("CARGO_BIN_EXE_orders-pg-hybrid");

/// This crate's store, for the modules shared with orders-pg's tests (`write_outcome`).
async fn connect_store(config: &orders_pg::PgConfig) -> orders_pg_hybrid::HybridStore {
    orders_pg_hybrid::HybridStore::connect(config).await.expect("connect")
}
