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

/// A stable fingerprint of a create request: the first 64 bits of the SHA-256 of every field of
/// the validated body, including a requested id, in a fixed order (their JSON). Equal for the same
/// request whatever its whitespace or key order; stored with the key to tell a retry from a
/// different request. Keys are global, so a client that knows (or guesses) another's key and body
/// must not be able to write a different body with the same fingerprint and be answered as the
/// retry: with FNV-1a that took a few lines of algebra, with SHA-256 it takes about 2^64
/// attempts (a second preimage). Sixty-four bits fit the `bigint` column and the BSON `long`
/// the fingerprint was stored in; a collision of two bodies that one client wrote itself (2^32
/// attempts) only confuses that client's own requests.
pub fn fingerprint(new: &NewOrder) -> i64 {
    use sha2::{Digest, Sha256};
    let fields = (new.id, &new.customer, new.status, &new.items, &new.currency, &new.shipping, &new.note);
    let bytes = serde_json::to_vec(&fields).unwrap_or_default();
    let digest = Sha256::digest(&bytes);
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    i64::from_be_bytes(first)
}

/// Whether `existing` (found under the key) was written longer ago than `RETENTION_MILLIS`.
pub fn expired(existing: &Order, now: Timestamp) -> bool {
    now.millis().saturating_sub(existing.created_at.millis()) > RETENTION_MILLIS
}

/// The answer of the first request, if `new` (with `new_fingerprint`) is the same request as the
/// one that created `existing` (stored with `existing_fingerprint`): the order as it was created,
/// with its status as requested and `updated_at` equal to `created_at`.
pub fn original_answer(
    new: NewOrder,
    new_fingerprint: i64,
    existing: &Order,
    existing_fingerprint: i64,
) -> Option<Order> {
    (new_fingerprint == existing_fingerprint).then(|| new.into_order(existing.id, existing.created_at))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::OrderId;
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
        let stored_fingerprint = fingerprint(&parse(body.clone()));
        let mut existing = parse(body.clone()).into_order(id, created);
        existing.status = Status::Shipped;
        existing.updated_at = Timestamp::from_millis(1_795_946_500_000);
        let reordered: serde_json::Value = serde_json::from_str(&body.to_string()).expect("same body");
        let again = parse(reordered);
        let original = original_answer(again.clone(), fingerprint(&again), &existing, stored_fingerprint);
        let original = original.expect("same request");
        assert_eq!((original.status, original.updated_at, original.id), (Status::Pending, created, id));
    }

    #[test]
    fn any_difference_in_the_body_changes_the_fingerprint() {
        let body = order_body(7, [1, 2, 3]);
        let base = fingerprint(&parse(body.clone()));
        let mut other_item = body.clone();
        other_item["items"][0]["quantity"] = json!(5);
        let mut other_status = body.clone();
        other_status["status"] = json!("paid");
        let mut pending = body.clone();
        pending["status"] = json!("pending");
        let mut with_id = body.clone();
        with_id["id"] = json!(1);
        let mut note = body.clone();
        note["note"] = json!("");
        for different in [other_item, other_status, with_id, note] {
            assert_ne!(fingerprint(&parse(different.clone())), base, "{different}");
        }
        assert_eq!(fingerprint(&parse(pending)), base, "the default status is the same request");
        assert_eq!(fingerprint(&parse(body)), base);
    }

    /// The sample body's fields as JSON (`[null,{"id":7,"name":"Ada Lovelace",...},null]`) have
    /// the SHA-256 `9fa923768241343e...` (computed with `sha256sum`); the fingerprint is its first
    /// 64 bits, big-endian. FNV-1a gave -7141393278555254020.
    #[test]
    fn the_fingerprint_is_the_first_64_bits_of_sha_256() {
        let new = parse(order_body(7, [1, 2, 3]));
        assert_eq!(fingerprint(&new), i64::from_be_bytes(0x9fa9_2376_8241_343e_u64.to_be_bytes()));
        assert_eq!(fingerprint(&new), -6_941_978_358_716_484_546);
    }

    #[test]
    fn keys_expire_after_the_retention_window() {
        let created = Timestamp::from_millis(1_000_000_000_000);
        let order = parse(order_body(7, [1, 2, 3])).into_order(OrderId::new(1).expect("id"), created);
        assert!(!expired(&order, Timestamp::from_millis(created.millis() + RETENTION_MILLIS)));
        assert!(expired(&order, Timestamp::from_millis(created.millis() + RETENTION_MILLIS + 1)));
    }
}
