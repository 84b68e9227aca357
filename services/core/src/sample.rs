//! Sample request bodies (and one stored order) shared by the test suites of every crate (HTTP,
//! store contract, end-to-end, the writers), so they all exercise the same, valid order shape of
//! docs/api.md.

use crate::ids::OrderId;
use crate::order::{NewOrder, Order};
use crate::time::Timestamp;
use serde_json::{Value, json};

/// A valid create body with three items, about 600 bytes once stored, like study S1's orders.
pub fn order_body(customer_id: u64, product_ids: [u64; 3]) -> Value {
    let items: Vec<Value> = product_ids
        .iter()
        .enumerate()
        .map(|(i, product_id)| {
            json!({
                "product_id": product_id,
                "sku": format!("SKU-{product_id:06}"),
                "name": format!("Product number {product_id}"),
                "quantity": i as u64 + 1,
                "unit_price_cents": 1999 + 100 * i as u64,
            })
        })
        .collect();
    json!({
        "customer": {"id": customer_id, "name": "Ada Lovelace", "email": "ada@example.com"},
        "items": items,
        "currency": "EUR",
        "shipping": {"street": "Example Street 1", "city": "Berlin", "postal_code": "10115", "country": "DE"},
    })
}

/// Order 4242 as stored: `order_body` for customer 1234 (one product id at 2^53-1), `shipped`,
/// with `note` if given and fixed timestamps. What the tests of the JSON and BSON writers write
/// and read back.
pub fn stored_order(note: Option<&str>) -> Order {
    let mut body = order_body(1234, [17, 18, 9_007_199_254_740_991]);
    body["status"] = json!("shipped");
    if let Some(note) = note {
        body["note"] = json!(note);
    }
    let new = NewOrder::parse(body.to_string().as_bytes()).expect("a valid sample");
    let mut order = new.into_order(OrderId::new(4242).expect("a valid id"), Timestamp::from_millis(1_795_946_400_123));
    order.updated_at = Timestamp::from_millis(1_795_946_500_456);
    order
}

/// The total of `order_body`'s items in cents.
pub fn order_body_total(body: &Value) -> u64 {
    body["items"]
        .as_array()
        .map(|items| {
            items
                .iter()
                .map(|item| item["quantity"].as_u64().unwrap_or(0) * item["unit_price_cents"].as_u64().unwrap_or(0))
                .sum()
        })
        .unwrap_or(0)
}
