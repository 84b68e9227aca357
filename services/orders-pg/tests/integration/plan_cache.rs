//! Finding F1 through the store on a real PostgreSQL. With the limit a literal in the product
//! search's text (study S1's form, the default `PG_LIMIT_MODE=literal`), a connection that first
//! plans the search while the GIN pending list is long caches a generic plan that is a sequential
//! scan, and uses it; with `LIMIT $2` (`parameter`) the generic plan is never the sequential scan. `/diagnostics`
//! sums the plan counters over every pooled connection (`pool_plans`).

use orders_core::{Limit, ListBytes, OrderStore, ProductId, ProductQuery};
use orders_pg::config::LimitMode;
use orders_pg::{PgConfig, PgStore};
use serde_json::Value;
use tokio_postgres::NoTls;

/// Orders in the table: the demo's size. (Whether a generic plan turns into a sequential scan
/// depends on the table's size: with 20,000 orders even `LIMIT $2` does.)
const ORDERS: u64 = 100_000;
/// Products: a search matches about 3 × 10 = 30 orders, as in study S1.
const PRODUCTS: u64 = ORDERS / 10;

/// One order's document with three items, as small as S1's.
const DOCUMENT: &str = "jsonb_build_object('id', g, 'items', jsonb_build_array(
    jsonb_build_object('product_id', 1 + g % 10000, 'sku', 'S', 'name', 'n', 'quantity', 1, 'unit_price_cents', 1),
    jsonb_build_object('product_id', 1 + (g * 7) % 10000, 'sku', 'S', 'name', 'n', 'quantity', 1, 'unit_price_cents', 1),
    jsonb_build_object('product_id', 1 + (g * 13) % 10000, 'sku', 'S', 'name', 'n', 'quantity', 1, 'unit_price_cents', 1)))";

/// `ORDERS` orders with an empty pending list and fresh statistics, then `pending` more inserted
/// with autovacuum off, so they stay in the pending list.
async fn orders_with_pending_list(url: &str, pending: u32) {
    let (mut client, connection) = tokio_postgres::connect(url, NoTls).await.expect("connect");
    tokio::spawn(connection);
    orders_pg::migrate::run(&mut client).await.expect("migrations");
    let load = format!(
        "ALTER TABLE orders SET (autovacuum_enabled = off);
         INSERT INTO orders (id, doc) SELECT g, {DOCUMENT} FROM generate_series(1, {ORDERS}) g;"
    );
    client.batch_execute(&load).await.expect("load");
    client.batch_execute("VACUUM (ANALYZE) orders").await.expect("flush the pending list, gather statistics");
    let more = format!(
        "INSERT INTO orders (id, doc) SELECT g, {DOCUMENT} FROM generate_series({}, {}) g",
        ORDERS + 1,
        ORDERS + u64::from(pending)
    );
    client.batch_execute(&more).await.expect("insert into the pending list");
}

async fn seq_scans(url: &str) -> i64 {
    let (client, connection) = tokio_postgres::connect(url, NoTls).await.expect("connect");
    tokio::spawn(connection);
    client.batch_execute("SELECT pg_stat_force_next_flush()").await.expect("flush statistics");
    client
        .query_one("SELECT seq_scan FROM pg_stat_user_tables WHERE relname = 'orders'", &[])
        .await
        .expect("query")
        .get(0)
}

/// Twenty product searches (limit 10) on a store with a pool of one, then its report.
async fn search_twenty_times(url: &str, mode: LimitMode) -> Value {
    let mut config = PgConfig::with_url(url);
    config.limit_mode = mode;
    config.pool_size = 1;
    let store = PgStore::connect(&config).await.expect("connect");
    for n in 0..20u64 {
        let product = ProductId::new(1 + (n * 97) % PRODUCTS).expect("product id");
        let found = store
            .by_product(ProductQuery { product, limit: Limit::PRODUCT_DEFAULT, max_bytes: ListBytes::DEFAULT })
            .await
            .expect("search");
        assert!(!found.is_empty(), "product {n} is in some order");
    }
    store.diagnostics().await.expect("diagnostics")
}

#[tokio::test]
async fn with_the_limit_in_the_text_a_long_pending_list_makes_the_cached_generic_plan_a_seq_scan() {
    let url = orders_pg::testing::fresh_database().await;
    orders_with_pending_list(&url, 2000).await;
    let scans_before = seq_scans(&url).await;
    let report = search_twenty_times(&url, LimitMode::Literal).await;
    assert_eq!(report["settings"]["limit_mode"], "literal");
    assert_eq!(report["product_query"]["statement"], "SELECT doc FROM orders WHERE doc->'items' @> $1 LIMIT 10");
    assert!(report["gin_index"]["pending_pages"].as_i64() > Some(20), "a long pending list: {}", report["gin_index"]);
    let generic = report["product_query"]["generic_plan"]["nodes"].to_string();
    assert!(generic.contains("Seq Scan"), "the generic plan is the sequential scan: {generic}");
    let plans = &report["pool_plans"];
    assert_eq!(plans["connections_read"], 1);
    assert_eq!(plans["product_generic_plans"], 15, "after five custom plans the cache took the generic one: {plans}");
    assert_eq!(plans["product_custom_plans"], 5);
    assert_eq!(plans["connections_using_generic"], 1);
    let scans = seq_scans(&url).await - scans_before;
    assert!(scans >= 15, "every generic execution scanned the table: {scans}");
}

#[tokio::test]
async fn with_the_limit_a_parameter_the_generic_plan_is_never_a_seq_scan() {
    let url = orders_pg::testing::fresh_database().await;
    orders_with_pending_list(&url, 2000).await;
    let report = search_twenty_times(&url, LimitMode::Parameter).await;
    assert_eq!(report["settings"]["limit_mode"], "parameter");
    assert!(report["gin_index"]["pending_pages"].as_i64() > Some(20), "a long pending list: {}", report["gin_index"]);
    assert_eq!(report["product_query"]["statement"], "SELECT doc FROM orders WHERE doc->'items' @> $1 LIMIT $2");
    // The generic plan may still win (its Limit is costed at a tenth of the rows it expects), but
    // it stays the index plan.
    let generic = report["product_query"]["generic_plan"]["nodes"].to_string();
    assert!(!generic.contains("Seq Scan"), "{generic}");
    assert_eq!(
        report["pool_plans"]["product_generic_plans"].as_i64().unwrap_or(0)
            + report["pool_plans"]["product_custom_plans"].as_i64().unwrap_or(0),
        20
    );
    // (A custom plan may still scan the table for a product whose statistics promise a thousand
    // matches, pending list or not: that is not F1.)
}

#[tokio::test]
async fn each_distinct_limit_is_its_own_prepared_statement_and_every_idle_connection_is_counted() {
    let url = orders_pg::testing::fresh_database().await;
    orders_with_pending_list(&url, 0).await;
    let mut config = PgConfig::with_url(&url);
    config.pool_size = 3;
    let store = PgStore::connect(&config).await.expect("connect");
    let search = |limit| {
        let product = ProductId::new(7).expect("product id");
        store.by_product(ProductQuery {
            product,
            limit: Limit::new(limit).expect("limit"),
            max_bytes: ListBytes::DEFAULT,
        })
    };
    // Three at once open three connections; each prepares the limits it runs.
    let (a, b, c) = tokio::join!(search(5), search(10), search(10));
    for found in [a, b, c] {
        found.expect("search");
    }
    let report = store.diagnostics().await.expect("diagnostics");
    let plans = &report["pool_plans"];
    assert_eq!(plans["connections_open"], 3);
    assert_eq!(plans["connections_read"], 3, "every idle connection: {plans}");
    assert_eq!(plans["product_custom_plans"], 3, "{plans}");
    let statements: Vec<String> = report["prepared_statements"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| s["statement"].as_str().map(str::to_owned))
        .filter(|s| s.contains("@>"))
        .collect();
    assert!(statements.iter().all(|s| s.ends_with("LIMIT 5") || s.ends_with("LIMIT 10")), "{statements:?}");
}
