//! The shared API contract through HTTP, end to end: `orders-pg-hybrid`'s store behind the shared
//! router on a loopback port over real PostgreSQL, in both statement modes (the checks use random
//! ids, so one database serves all of them).

use orders_http::HttpConfig;
use orders_pg::PgConfig;
use orders_pg::config::StatementMode;
use orders_pg_hybrid::HybridStore;
use orders_testkit::TestApp;
use tokio::sync::OnceCell;

async fn shared_database() -> String {
    static URL: OnceCell<String> = OnceCell::const_new();
    URL.get_or_init(orders_pg::testing::fresh_database).await.clone()
}

async fn spawn_with(mode: StatementMode) -> TestApp {
    let mut config = PgConfig::with_url(shared_database().await);
    config.statement_mode = mode;
    config.pool_size = 4;
    let store = HybridStore::connect(&config).await.expect("connect");
    TestApp::spawn(store, HttpConfig::for_tests()).await
}

mod prepared {
    async fn spawn_app() -> orders_testkit::TestApp {
        super::spawn_with(super::StatementMode::Prepared).await
    }
    orders_testkit::api_contract_tests!(spawn_app);
}

mod unprepared {
    async fn spawn_app() -> orders_testkit::TestApp {
        super::spawn_with(super::StatementMode::Unprepared).await
    }
    orders_testkit::api_contract_tests!(spawn_app);
}
