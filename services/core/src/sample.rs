//! Sample request bodies shared by the test suites of every crate (HTTP, store contract,
//! end-to-end), so they all exercise the same, valid order shape of docs/api.md.

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
