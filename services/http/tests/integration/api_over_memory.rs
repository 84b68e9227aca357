//! The HTTP layer's behaviour tests: the shared API contract (every endpoint, status code and
//! the error shape) through real HTTP over the in-memory store, no database needed.

use orders_core::memory::MemoryStore;
use orders_http::HttpConfig;
use orders_testkit::TestApp;

async fn spawn_app() -> TestApp {
    TestApp::spawn(MemoryStore::new(), HttpConfig::for_tests()).await
}

orders_testkit::api_contract_tests!(spawn_app);
