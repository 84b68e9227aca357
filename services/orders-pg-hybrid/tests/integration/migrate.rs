//! The hybrid layout's migration on a real PostgreSQL: it refuses a database that holds orders-pg's
//! jsonb table (same name, no `customer_id` column) with a message that says what to do, the
//! service does not start there, and the refused database is left exactly as it was; on a
//! database of its own it applies, once.

use orders_pg::{PgConfig, PgStore};
use orders_pg_hybrid::HybridStore;
use tokio_postgres::NoTls;

async fn client(url: &str) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(url, NoTls).await.expect("connect");
    tokio::spawn(connection);
    client
}

/// The tables of the public schema, sorted.
async fn tables(client: &tokio_postgres::Client) -> Vec<String> {
    let rows = client
        .query("SELECT tablename::text FROM pg_tables WHERE schemaname = 'public' ORDER BY 1", &[])
        .await
        .expect("tables");
    rows.iter().map(|r| r.get(0)).collect()
}

#[tokio::test]
async fn orders_pg_s_database_is_refused_and_left_as_it_was() {
    let url = orders_pg::testing::fresh_database().await;
    PgStore::connect(&PgConfig::with_url(&url)).await.expect("orders-pg migrates its database");
    let mut client = client(&url).await;
    let before = tables(&client).await;
    assert!(before.contains(&"orders".to_owned()), "{before:?}");

    let error = orders_pg_hybrid::migrate::run(&mut client).await.expect_err("the jsonb layout's database is refused");
    let message = error.as_db_error().map(|e| e.message().to_owned()).unwrap_or_else(|| error.to_string());
    assert!(message.contains("give orders-pg-hybrid a database of its own"), "{message}");
    assert!(HybridStore::connect(&PgConfig::with_url(&url)).await.is_err(), "the service does not start on it");
    assert_eq!(tables(&client).await, before, "nothing of the hybrid layout was left behind");
}

#[tokio::test]
async fn a_database_of_its_own_is_migrated_once() {
    let url = orders_pg::testing::fresh_database().await;
    let mut client = client(&url).await;
    let applied = orders_pg_hybrid::migrate::run(&mut client).await.expect("migrate");
    assert_eq!(applied, ["0001_orders", "0002_extensions", "0003_pgstattuple"]);
    assert!(orders_pg_hybrid::migrate::run(&mut client).await.expect("again").is_empty(), "each file once");
    let tables = tables(&client).await;
    for table in ["order_items", "orders", "schema_migrations_hybrid"] {
        assert!(tables.contains(&table.to_owned()), "{table}: {tables:?}");
    }
}
