//! Safe retries of `POST /orders`: the `Idempotency-Key` a client sends, how long a key is
//! remembered, and the rule that decides whether a second request with a known key is the same
//! request again (answer the original 201) or a different one (422). The key is stored with the
//! order itself, atomically, by each backend; nothing else is kept, because an order can only
//! change its status and `updated_at`, so the original answer can be rebuilt from the order.

use crate::order::{NewOrder, Order};
use crate::time::Timestamp;
use std::fmt;

/// How long a key is remembered: within it the same key and body get the original order again;
/// after it the key may name a new order.
pub const RETENTION_MILLIS: i64 = 24 * 60 * 60 * 1000;

/// The longest key accepted (UUIDs and the usual random tokens are far shorter).
pub const MAX_KEY_LEN: usize = 255;

/// A client's `Idempotency-Key`: 1 to 255 visible ASCII characters (no spaces, no control
/// characters), compared byte for byte.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct IdempotencyKey(String);

impl IdempotencyKey {
    pub fn parse(text: &str) -> Result<Self, String> {
        if text.is_empty() || text.len() > MAX_KEY_LEN {
            return Err(format!("must be 1 to {MAX_KEY_LEN} characters long"));
        }
        if !text.bytes().all(|b| b.is_ascii_graphic()) {
            return Err("must be visible ASCII characters without spaces".into());
        }
        Ok(Self(text.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for IdempotencyKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// Whether `existing` (found under the key) was written longer ago than `RETENTION_MILLIS`.
pub fn expired(existing: &Order, now: Timestamp) -> bool {
    now.millis().saturating_sub(existing.created_at.millis()) > RETENTION_MILLIS
}

/// The answer of the first request, if `new` is the same request as the one that created
/// `existing`: the order as it was created (its status as requested, `updated_at` equal to
/// `created_at`). `None` when the body differs in any field, including a requested id. Once the
/// order's status has been changed, its original status is no longer known, so the status of the
/// body is then taken as the original one (every other field is still compared).
pub fn original_answer(new: NewOrder, existing: &Order) -> Option<Order> {
    if new.requested_id().is_some_and(|id| id != existing.id) {
        return None;
    }
    let original = new.into_order(existing.id, existing.created_at);
    let untouched = existing.updated_at == existing.created_at;
    let original_status = if untouched { existing.status } else { original.status };
    let as_created = Order { status: original_status, updated_at: existing.created_at, ..existing.clone() };
    (original == as_created).then_some(original)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::OrderId;
    use crate::order::Status;
    use crate::sample::order_body;
    use serde_json::json;

    fn parse(body: serde_json::Value) -> NewOrder {
        NewOrder::parse(body.to_string().as_bytes()).expect("valid body")
    }

    #[test]
    fn keys_are_visible_ascii_of_bounded_length() {
        for good in ["a", "8e03978e-40d5-43e8-bc93-6894a57f9324", &"k".repeat(255), "\"quoted\""] {
            assert!(IdempotencyKey::parse(good).is_ok(), "{good}");
        }
        for bad in ["", " ", "two words", "tab\t", "ünï", &"k".repeat(256)] {
            assert!(IdempotencyKey::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn the_same_body_gets_the_order_as_it_was_created() {
        let body = order_body(7, [1, 2, 3]);
        let created = Timestamp::from_millis(1_795_946_400_123);
        let id = OrderId::new(99).expect("id");
        let mut existing = parse(body.clone()).into_order(id, created);
        existing.status = Status::Shipped;
        existing.updated_at = Timestamp::from_millis(1_795_946_500_000);
        let original = original_answer(parse(body), &existing).expect("same request");
        assert_eq!((original.status, original.updated_at, original.id), (Status::Pending, created, id));
    }

    #[test]
    fn any_difference_in_the_body_is_another_request() {
        let body = order_body(7, [1, 2, 3]);
        let existing = parse(body.clone()).into_order(OrderId::new(99).expect("id"), Timestamp::now());
        let mut other_item = body.clone();
        other_item["items"][0]["quantity"] = json!(5);
        let mut other_status = body.clone();
        other_status["status"] = json!("paid");
        let mut other_id = body.clone();
        other_id["id"] = json!(100);
        let mut same_id = body.clone();
        same_id["id"] = json!(99);
        for different in [other_item, other_status, other_id] {
            assert_eq!(original_answer(parse(different), &existing), None);
        }
        assert!(original_answer(parse(same_id), &existing).is_some(), "naming the same id is the same request");
    }

    #[test]
    fn keys_expire_after_the_retention_window() {
        let created = Timestamp::from_millis(1_000_000_000_000);
        let order = parse(order_body(7, [1, 2, 3])).into_order(OrderId::new(1).expect("id"), created);
        assert!(!expired(&order, Timestamp::from_millis(created.millis() + RETENTION_MILLIS)));
        assert!(expired(&order, Timestamp::from_millis(created.millis() + RETENTION_MILLIS + 1)));
    }
}
