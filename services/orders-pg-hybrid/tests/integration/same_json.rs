//! The hybrid layout answers with the very bytes orders-pg sends: the same orders (same ids and
//! timestamps) stored in both layouts, then every read and a status change, compared as bytes,
//! not only as equal JSON values.

use orders_core::sample::order_body;
use orders_core::{
    CustomerId, CustomerQuery, Limit, ListBytes, NewOrder, OrderId, OrderStore, OrderToStore, ProductId, ProductQuery,
    Returning, Status, StatusChange, Timestamp,
};
use orders_pg::{PgConfig, PgStore};
use serde_json::json;

fn order(id: u64, customer: u64, products: [u64; 3], note: bool) -> OrderToStore {
    let mut body = order_body(customer, products);
    if note {
        body["note"] = json!("a note with \"quotes\", ü and \\ backslashes");
    }
    let new = NewOrder::parse(body.to_string().as_bytes()).expect("valid");
    let at = Timestamp::parse("2026-11-30T10:00:00.007Z").expect("timestamp");
    new.into_order(OrderId::new(id).expect("id"), at).into()
}

#[tokio::test]
async fn every_answer_is_byte_for_byte_orders_pgs() {
    let jsonb = PgStore::connect(&PgConfig::with_url(orders_pg::testing::fresh_database().await)).await.expect("pg");
    let hybrid = orders_pg_hybrid::testing::fresh_store().await;
    let orders = [order(1, 7, [1, 2, 3], false), order(2, 7, [3, 4, 3], true), order(3, 8, [5, 1, 6], false)];
    for order in &orders {
        jsonb.insert(order).await.expect("insert jsonb");
        hybrid.insert(order).await.expect("insert hybrid");
    }
    let id = |n: u64| OrderId::new(n).expect("id");
    for n in 1..=3 {
        let (a, b) = (jsonb.get(id(n)).await.expect("get"), hybrid.get(id(n)).await.expect("get"));
        assert_eq!(String::from_utf8_lossy(a.as_bytes()), String::from_utf8_lossy(b.as_bytes()), "order {n}");
    }
    let customer = CustomerQuery {
        customer: CustomerId::new(7).expect("id"),
        limit: Limit::new(10).expect("limit"),
        before: None,
        max_bytes: ListBytes::DEFAULT,
    };
    let (a, b) = (jsonb.by_customer(customer).await.expect("list"), hybrid.by_customer(customer).await.expect("list"));
    assert_eq!(String::from_utf8_lossy(&a.into_body()), String::from_utf8_lossy(&b.into_body()), "customer list");
    let product = ProductQuery {
        product: ProductId::new(6).expect("id"),
        limit: Limit::new(10).expect("limit"),
        max_bytes: ListBytes::DEFAULT,
    };
    let (a, b) = (jsonb.by_product(product).await.expect("search"), hybrid.by_product(product).await.expect("search"));
    assert_eq!(String::from_utf8_lossy(&a.into_body()), String::from_utf8_lossy(&b.into_body()), "product search");
    let later = Timestamp::parse("2026-12-01T08:30:00.250Z").expect("timestamp");
    let change = StatusChange { status: Status::Shipped, from: Some(Status::Pending) };
    let a = jsonb.update_status(id(2), change, later, Returning::Document).await.expect("update").expect("document");
    let b = hybrid.update_status(id(2), change, later, Returning::Document).await.expect("update").expect("document");
    assert_eq!(String::from_utf8_lossy(a.as_bytes()), String::from_utf8_lossy(b.as_bytes()), "updated order");
    let (a, b) = (jsonb.get(id(2)).await.expect("get"), hybrid.get(id(2)).await.expect("get"));
    assert_eq!(String::from_utf8_lossy(a.as_bytes()), String::from_utf8_lossy(b.as_bytes()), "order 2 read again");
}
