//! The shared API contract through HTTP, end to end: `orders-mongo`'s router on a loopback port
//! over real MongoDB (a database of its own, dropped when the service stops).

use crate::common;

use orders_http::HttpConfig;
use orders_testkit::TestApp;

async fn spawn_app() -> TestApp {
    TestApp::spawn(common::fresh_store().await, HttpConfig::for_tests()).await
}

orders_testkit::api_contract_tests!(spawn_app);
