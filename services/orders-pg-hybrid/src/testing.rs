//! Test support: a `HybridStore` over a new, empty database on the test server (orders-pg's
//! `fresh_database`, which also drops the databases of test processes that have exited). Only
//! tests call it; the service never does.

use crate::HybridStore;
use orders_pg::PgConfig;

/// A store with default settings over a new, empty database.
pub async fn fresh_store() -> HybridStore {
    let url = orders_pg::testing::fresh_database().await;
    HybridStore::connect(&PgConfig::with_url(url)).await.expect("connect and migrate")
}
