//! What the hybrid layout is for, read back from a real PostgreSQL: a status change is a
//! heap-only (HOT) update (`pg_stat_user_tables.n_tup_hot_upd` grows with `n_tup_upd`), and the
//! product search walks the B-tree of `order_items` in both its generic and its custom plan,
//! with no sequential scan, on a table large enough for the planner to choose.

use orders_core::sample::order_body;
use orders_core::{IdGenerator, NewOrder, OrderStore, Returning, Status, StatusChange, Timestamp, place_order};
use orders_pg::PgConfig;
use orders_pg_hybrid::HybridStore;
use serde_json::Value;
use std::time::{Duration, Instant};
use tokio_postgres::NoTls;

async fn client(url: &str) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(url, NoTls).await.expect("connect");
    tokio::spawn(connection);
    client
}

/// `(n_tup_upd, n_tup_hot_upd)` of `orders` once the server's statistics show at least `updates`
/// updates: the pooled connections report theirs when they go idle, within about a second.
async fn update_counts(url: &str, updates: i64) -> (i64, i64) {
    let client = client(url).await;
    let started = Instant::now();
    loop {
        let row = client
            .query_one("SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables WHERE relname = 'orders'", &[])
            .await
            .expect("counters");
        let counts: (i64, i64) = (row.get(0), row.get(1));
        if counts.0 >= updates || started.elapsed() > Duration::from_secs(30) {
            return counts;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test]
async fn a_status_change_is_a_heap_only_update() {
    let url = orders_pg::testing::fresh_database().await;
    let store = HybridStore::connect(&PgConfig::with_url(&url)).await.expect("connect");
    let ids = IdGenerator::new();
    let mut orders = Vec::new();
    for n in 0..50 {
        let new = NewOrder::parse(order_body(n % 7 + 1, [n + 1, n + 2, n + 3]).to_string().as_bytes()).expect("valid");
        orders.push(place_order(&store, &ids, new, None).await.expect("insert").order().id);
    }
    let statuses = [Status::Paid, Status::Shipped, Status::Delivered, Status::Cancelled];
    for status in statuses {
        for &id in &orders {
            let change = StatusChange { status, from: None };
            store.update_status(id, change, Timestamp::now(), Returning::Nothing).await.expect("update");
        }
    }
    let updates = (orders.len() * statuses.len()) as i64;
    let (updated, hot) = update_counts(&url, updates).await;
    eprintln!("status changes: n_tup_upd {updated}, n_tup_hot_upd {hot}");
    assert_eq!(updated, updates, "every status change counted");
    assert!(hot * 10 >= updated * 9, "at least 90% of the status changes are HOT: {hot} of {updated}");
}

/// Orders in the table, and products: a product is in about 3 × 10 = 30 orders, as in study S1.
const ORDERS: i64 = 50_000;
const PRODUCTS: i64 = ORDERS / 10;

async fn load_orders(url: &str) {
    let client = client(url).await;
    let load = format!(
        "INSERT INTO orders (id, customer_id, status, updated_at, doc)
             SELECT g, 1 + g % 1000, 'pending', now(), '{{}}'::jsonb FROM generate_series(1, {ORDERS}) g;
         INSERT INTO order_items (order_id, product_id)
             SELECT DISTINCT g, 1 + (g * k) % {PRODUCTS} FROM generate_series(1, {ORDERS}) g, unnest(ARRAY[1, 7, 13]) k;"
    );
    client.batch_execute(&load).await.expect("load");
    // On its own: several statements in one simple query run as one transaction, which VACUUM refuses.
    client.batch_execute("VACUUM (ANALYZE) orders, order_items").await.expect("vacuum");
}

fn nodes(plan: &Value) -> Vec<String> {
    plan["nodes"].as_array().into_iter().flatten().filter_map(|node| node.as_str().map(str::to_owned)).collect()
}

#[tokio::test]
async fn the_product_search_walks_the_b_tree_of_order_items() {
    let url = orders_pg::testing::fresh_database().await;
    let store = HybridStore::connect(&PgConfig::with_url(&url)).await.expect("connect");
    load_orders(&url).await;
    let report = store.diagnostics().await.expect("diagnostics");
    assert_eq!(report["layout"], "hybrid");
    for which in ["generic_plan", "custom_plan"] {
        let nodes = nodes(&report["product_query"][which]);
        eprintln!("{which}: {nodes:?}");
        assert!(
            nodes.iter().any(|node| node.ends_with("Scan on order_items_product")),
            "{which} uses the B-tree on (product_id, order_id): {nodes:?}"
        );
        assert!(!nodes.iter().any(|node| node.starts_with("Seq Scan")), "{which} scans no table: {nodes:?}");
    }
    let live = report["items_table"]["n_live_tup"].as_i64().unwrap_or_default();
    eprintln!("order_items rows (statistics): {live}");
}
