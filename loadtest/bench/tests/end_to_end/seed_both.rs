//! `orders-bench seed` end to end: a small data set seeded into fresh PostgreSQL and MongoDB
//! databases reads back identically through both services, a second seed without `--reset` is
//! refused, and a reset keeps the storage options a running service had set on the GIN index.

use crate::support;

use futures_util::future::join_all;
use mongodb::bson::{Document, doc};
use serde_json::Value;
use support::{MongoDatabase, describe, fresh_pg_database, pg_client, read_json, seed, spawn_services};

const ORDERS: u64 = 2_000;

/// `{"orders":[...]}` sorted by id, for listings whose order the API leaves open.
fn sorted_orders(reply: &Value) -> Vec<Value> {
    let mut orders = reply["orders"].as_array().cloned().unwrap_or_default();
    orders.sort_by_key(|order| order["id"].as_u64());
    orders
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seeding_both_databases_gives_the_same_orders_through_both_services() {
    let pg_url = fresh_pg_database().await;
    let mongo = MongoDatabase::fresh();
    let manifest_path = support::scratch_dir("seed_both").join("dataset.json");
    let output = seed(&["--orders", "2000", "--seed", "7", "--target", "both"], &pg_url, &mongo, &manifest_path);
    assert!(output.status.success(), "{}", describe(&output));

    let manifest = read_json(&manifest_path);
    assert_eq!(manifest["seed"], 7);
    assert_eq!(manifest["order_ids"], serde_json::json!({"min": 1, "max": ORDERS}));
    assert_eq!(manifest["customer_ids"]["max"], 200, "default: 10 orders per customer");
    assert_eq!(manifest["product_ids"]["max"], 200, "default: a product in about 30 orders");
    assert_eq!(manifest["items_per_order"], 3);
    assert!(manifest["targets"]["pg"]["bytes_on_disk"].as_u64() > Some(0), "{manifest}");
    assert!(manifest["targets"]["mongo"]["bytes_on_disk"].as_u64() > Some(0), "{manifest}");

    let pg_count: i64 =
        pg_client(&pg_url).await.query_one("SELECT count(*) FROM orders", &[]).await.expect("count").get(0);
    let mongo_orders = mongo.client().await.database(&mongo.name).collection::<Document>("orders");
    let mongo_count = mongo_orders.count_documents(doc! {}).await.expect("count");
    assert_eq!((pg_count as u64, mongo_count), (ORDERS, ORDERS));

    let (pg, mongo_app) = spawn_services(&pg_url, &mongo).await;
    let ids: Vec<u64> = (1..=ORDERS).collect();
    for chunk in ids.chunks(50) {
        let (pg, mongo_app) = (&pg, &mongo_app);
        let replies = join_all(chunk.iter().map(|&id| async move {
            let path = format!("/orders/{id}");
            (id, pg.get(&path).await, mongo_app.get(&path).await)
        }))
        .await;
        for (id, from_pg, from_mongo) in replies {
            assert_eq!(
                (from_pg.status, from_mongo.status),
                (200, 200),
                "order {id}: {} / {}",
                from_pg.text,
                from_mongo.text
            );
            assert_eq!(from_pg.json["id"], id);
            assert_eq!(from_pg.json, from_mongo.json, "order {id} differs");
        }
    }
    for customer in [1, 77, 200] {
        let path = format!("/customers/{customer}/orders?limit=100");
        let (from_pg, from_mongo) = (pg.get(&path).await, mongo_app.get(&path).await);
        assert_eq!(from_pg.json, from_mongo.json, "{path}");
        assert!(!from_pg.json["orders"].as_array().is_none_or(Vec::is_empty), "{path} finds orders");
    }
    for product in [1, 99, 200] {
        let path = format!("/products/{product}/orders?limit=100");
        let (from_pg, from_mongo) = (pg.get(&path).await, mongo_app.get(&path).await);
        assert_eq!(sorted_orders(&from_pg.json), sorted_orders(&from_mongo.json), "{path}");
        assert!(!sorted_orders(&from_pg.json).is_empty(), "{path} finds orders");
    }

    // Seeding again without --reset would pile other data on top: both targets refuse, and
    // neither database nor the manifest changes.
    let again = seed(&["--orders", "2000", "--seed", "8", "--target", "both"], &pg_url, &mongo, &manifest_path);
    assert!(!again.status.success(), "{}", describe(&again));
    let stderr = String::from_utf8_lossy(&again.stderr);
    for needle in ["--reset", "PostgreSQL table `orders`", "MongoDB collection `orders`", "already holds orders"] {
        assert!(stderr.contains(needle), "refusal mentions {needle}: {stderr}");
    }
    assert_eq!(read_json(&manifest_path)["seed"], 7);
    assert_eq!(pg.get("/orders/1").await.json, mongo_app.get("/orders/1").await.json);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reset_reseeds_postgres_and_keeps_the_gin_storage_options() {
    let pg_url = fresh_pg_database().await;
    let mongo = MongoDatabase::fresh();
    let manifest_path = support::scratch_dir("reset").join("dataset.json");
    let first = seed(&["--orders", "500", "--target", "pg"], &pg_url, &mongo, &manifest_path);
    assert!(first.status.success(), "{}", describe(&first));

    // What a service started with PG_GIN_FASTUPDATE=off leaves behind.
    let client = pg_client(&pg_url).await;
    client.batch_execute("ALTER INDEX orders_items SET (fastupdate = off)").await.expect("alter index");
    let again = seed(&["--orders", "300", "--target", "pg", "--reset", "--seed", "9"], &pg_url, &mongo, &manifest_path);
    assert!(again.status.success(), "{}", describe(&again));

    let count: i64 = client.query_one("SELECT count(*) FROM orders", &[]).await.expect("count").get(0);
    assert_eq!(count, 300);
    let options: Option<Vec<String>> = client
        .query_one("SELECT reloptions FROM pg_class WHERE oid = 'orders_items'::regclass", &[])
        .await
        .expect("reloptions")
        .get(0);
    assert_eq!(options, Some(vec!["fastupdate=off".to_owned()]));
    let indexes: i64 = client
        .query_one("SELECT count(*) FROM pg_indexes WHERE tablename = 'orders' AND indexname IN ('orders_customer', 'orders_items')", &[])
        .await
        .expect("indexes")
        .get(0);
    assert_eq!(indexes, 2, "both secondary indexes are back");
    let manifest = read_json(&manifest_path);
    assert_eq!((manifest["seed"].as_u64(), manifest["orders"].as_u64()), (Some(9), Some(300)));
    assert_eq!(
        manifest["targets"].as_object().map(|t| t.keys().cloned().collect::<Vec<_>>()),
        Some(vec!["pg".to_owned()])
    );
}
