//! The shared suites run against the in-memory store: the HTTP layer's behaviour tests, and a
//! check that the store contract itself is consistent (it must hold for the reference store).

use orders_core::memory::MemoryStore;
use orders_http::HttpConfig;
use orders_testkit::TestApp;

async fn fresh_store() -> MemoryStore {
    MemoryStore::new()
}

async fn spawn_app() -> TestApp {
    TestApp::spawn(MemoryStore::new(), HttpConfig::for_tests()).await
}

orders_testkit::store_contract_tests!(fresh_store);

mod api {
    use super::spawn_app;
    orders_testkit::api_contract_tests!(spawn_app);
}
