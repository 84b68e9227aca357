//! Orders already written as the API's JSON: `OrderJson` (one order, the body of
//! `GET /orders/{id}`) and `OrderListJson` (the body of the list endpoints, `{"orders":[...]}`).
//! The stores build them straight from what their database sends (PostgreSQL's jsonb text,
//! MongoDB's raw BSON), so a read is never parsed into an `Order` and serialised again. That is
//! sound because every stored document was an `Order` that passed validation when it was written;
//! `to_order` parses one back (tests use it to compare with what they wrote).

use crate::ids::OrderId;
use crate::json_write::write_order;
use crate::order::Order;
use std::sync::OnceLock;

/// One order as a JSON object. Key order and insignificant whitespace depend on the store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrderJson(Vec<u8>);

impl OrderJson {
    /// The order written here (`json_write::write_order`: the bytes `serde_json::to_vec` gives),
    /// for orders not read from a database: a created order's answer, PostgreSQL's insert
    /// parameter, the in-memory store.
    pub fn from_order(order: &Order) -> Self {
        let mut out = Vec::with_capacity(1024);
        write_order(&mut out, order);
        Self(out)
    }

    /// The JSON object a store holds for an order it wrote itself, passed through unchecked.
    pub fn from_stored(json: Vec<u8>) -> Self {
        Self(json)
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    pub fn into_bytes(self) -> Vec<u8> {
        self.0
    }

    /// Parses and validates the order (every field through its checked type).
    pub fn to_order(&self) -> Result<Order, serde_json::Error> {
        serde_json::from_slice(&self.0)
    }
}

/// An order on its way into a store, with its JSON written at most once: by the store if it sends
/// JSON to its database (orders-pg's jsonb parameter), else for the answer when one is wanted
/// (not with `Prefer: return=minimal`). Changing the id drops the JSON written for the old one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrderToStore {
    order: Order,
    json: OnceLock<OrderJson>,
}

impl OrderToStore {
    pub fn order(&self) -> &Order {
        &self.order
    }

    /// The order's JSON, written on the first call.
    pub fn json(&self) -> &OrderJson {
        self.json.get_or_init(|| OrderJson::from_order(&self.order))
    }

    pub fn into_json(self) -> OrderJson {
        self.json.into_inner().unwrap_or_else(|| OrderJson::from_order(&self.order))
    }

    pub fn set_id(&mut self, id: OrderId) {
        self.order.id = id;
        self.json = OnceLock::new();
    }
}

impl From<Order> for OrderToStore {
    fn from(order: Order) -> Self {
        Self { order, json: OnceLock::new() }
    }
}

/// The body of a list endpoint, `{"orders":[...]}`, built one order at a time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrderListJson {
    /// `{"orders":[` and the orders so far, comma-separated; `into_body` closes it.
    open: Vec<u8>,
    len: usize,
}

const LIST_OPENING: &[u8] = br#"{"orders":["#;
const LIST_CLOSING: &[u8] = b"]}";

impl Default for OrderListJson {
    fn default() -> Self {
        Self::with_capacity(0)
    }
}

impl OrderListJson {
    /// An empty list with room for about `bytes` bytes of orders.
    pub fn with_capacity(bytes: usize) -> Self {
        let mut open = Vec::with_capacity(LIST_OPENING.len() + bytes + LIST_CLOSING.len());
        open.extend_from_slice(LIST_OPENING);
        Self { open, len: 0 }
    }

    /// Appends the JSON object a store holds for an order it wrote itself (see `OrderJson::from_stored`).
    pub fn push_stored(&mut self, order: &[u8]) {
        self.separate();
        self.open.extend_from_slice(order);
    }

    pub fn push(&mut self, order: &OrderJson) {
        self.push_stored(order.as_bytes());
    }

    /// Appends one order that `write` writes straight into the body; on an error the list is
    /// left with a partial entry, so callers drop it.
    pub fn push_with<E>(&mut self, write: impl FnOnce(&mut Vec<u8>) -> Result<(), E>) -> Result<(), E> {
        self.separate();
        write(&mut self.open)
    }

    fn separate(&mut self) {
        if self.len > 0 {
            self.open.push(b',');
        }
        self.len += 1;
    }

    /// Number of orders in the list.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The finished body.
    pub fn into_body(mut self) -> Vec<u8> {
        self.open.extend_from_slice(LIST_CLOSING);
        self.open
    }

    /// Parses and validates every order of the list, in list order.
    pub fn to_orders(&self) -> Result<Vec<Order>, serde_json::Error> {
        #[derive(serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Body {
            orders: Vec<Order>,
        }
        let body: Body = serde_json::from_slice(&self.clone().into_body())?;
        Ok(body.orders)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::NewOrder;
    use crate::sample::order_body;
    use crate::time::Timestamp;
    use serde_json::{Value, json};

    fn order(id: u64) -> Order {
        let new = NewOrder::parse(order_body(7, [1, 2, 3]).to_string().as_bytes()).expect("valid");
        new.into_order(OrderId::new(id).expect("id"), Timestamp::from_millis(1_795_946_400_123))
    }

    #[test]
    fn an_order_round_trips_through_its_json() {
        let written = order(42);
        let json = OrderJson::from_order(&written);
        assert_eq!(json.to_order().expect("parse"), written);
        let value: Value = serde_json::from_slice(json.as_bytes()).expect("json");
        assert_eq!(value["created_at"], json!("2026-11-29T10:00:00.123Z"));
    }

    #[test]
    fn lists_are_an_object_with_the_orders_in_order() {
        assert_eq!(OrderListJson::default().into_body(), br#"{"orders":[]}"#);
        let mut list = OrderListJson::with_capacity(100);
        list.push(&OrderJson::from_order(&order(1)));
        list.push_stored(&serde_json::to_vec(&order(2)).expect("serialise"));
        list.push_with(|out| serde_json::to_writer(out, &order(3))).expect("write");
        assert_eq!(list.len(), 3);
        let ids: Vec<u64> = list.to_orders().expect("parse").iter().map(|o| o.id.get()).collect();
        assert_eq!(ids, [1, 2, 3]);
        let body: Value = serde_json::from_slice(&list.into_body()).expect("json");
        assert_eq!(body["orders"].as_array().map(Vec::len), Some(3));
    }

    #[test]
    fn an_order_to_store_writes_its_json_once_and_again_after_a_new_id() {
        let mut to_store = OrderToStore::from(order(1));
        let first: *const OrderJson = to_store.json();
        assert!(std::ptr::eq(first, to_store.json()), "the second call returns the JSON written by the first");
        to_store.set_id(OrderId::new(2).expect("id"));
        assert_eq!(to_store.json().to_order().expect("parse").id.get(), 2);
        assert_eq!(to_store.clone().into_json(), OrderJson::from_order(to_store.order()));
        assert_eq!(OrderToStore::from(order(3)).into_json(), OrderJson::from_order(&order(3)), "written when asked");
    }

    #[test]
    fn a_stored_document_that_is_not_a_valid_order_fails_to_parse_back() {
        let broken = OrderJson::from_stored(br#"{"id": 0}"#.to_vec());
        assert!(broken.to_order().is_err());
    }
}
