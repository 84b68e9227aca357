//! Orders already written as the API's JSON: `OrderJson` (one order, the body of
//! `GET /orders/{id}`) and `OrderListJson` (the body of the list endpoints, `{"orders":[...]}`).
//! The stores build them straight from what their database sends (PostgreSQL's jsonb text,
//! MongoDB's raw BSON), so a read is never parsed into an `Order` and serialised again. That is
//! sound because every stored document was an `Order` that passed validation when it was written;
//! `to_order` parses one back (tests use it to compare with what they wrote).
//!
//! A list answer is bounded in bytes (`ListBytes`, the setting `MAX_LIST_BYTES`): a store stops
//! adding orders before the body would pass the bound (a list always has its first order), and
//! the list says it was cut, so the HTTP layer can tell the client to continue.

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

/// The most bytes a list answer's body may hold (`MAX_LIST_BYTES`), unless its first order alone
/// is larger: a list always carries at least one order, so every order can be listed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListBytes(usize);

impl ListBytes {
    /// Default of `MAX_LIST_BYTES`: 4 MiB, a page of 100 orders of 40 kB, or of 6,000 default
    /// orders (600 bytes); only lists of large orders (`note` up to 256 KiB) are cut.
    pub const DEFAULT: ListBytes = ListBytes(4 * 1024 * 1024);
    /// No bound (tests and tools that list what they wrote).
    pub const UNBOUNDED: ListBytes = ListBytes(usize::MAX);

    pub const fn new(bytes: usize) -> Self {
        Self(bytes)
    }

    pub const fn get(self) -> usize {
        self.0
    }
}

/// The body of a list endpoint, `{"orders":[...]}`, built one order at a time within its
/// `ListBytes`: the first order that would pass the bound is refused, and so is every one after it
/// (so a list cut short ends where the next page begins), and the list is marked cut.
///
/// The bound counts the body as compact JSON (no whitespace outside strings), which is what
/// orders-mongo and the in-memory store write; PostgreSQL's jsonb text adds a space after each `,`
/// and `:`. So every backend cuts a list at the same order, and orders-pg's body may pass the
/// bound by those spaces. Whitespace is counted only when the raw length says an order might not
/// fit, so lists far from their bound cost no scan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrderListJson {
    /// `{"orders":[` and the orders so far, comma-separated; `into_body` closes it.
    open: Vec<u8>,
    len: usize,
    max_bytes: usize,
    cut: bool,
    /// The compact length of `open[..scanned]`; `scanned` is always at the end of an order (or
    /// of the opening).
    counted: usize,
    scanned: usize,
}

const LIST_OPENING: &[u8] = br#"{"orders":["#;
const LIST_CLOSING: &[u8] = b"]}";

/// The length of `json` without its whitespace outside strings (its compact form's length).
fn compact_len(json: &[u8]) -> usize {
    let (mut in_string, mut escaped, mut whitespace) = (false, false, 0);
    for &byte in json {
        if in_string {
            if escaped {
                escaped = false;
            } else if byte == b'\\' {
                escaped = true;
            } else if byte == b'"' {
                in_string = false;
            }
        } else if byte == b'"' {
            in_string = true;
        } else if matches!(byte, b' ' | b'\n' | b'\r' | b'\t') {
            whitespace += 1;
        }
    }
    json.len() - whitespace
}

impl Default for OrderListJson {
    fn default() -> Self {
        Self::with_capacity(0)
    }
}

impl OrderListJson {
    /// An empty list with no byte bound and room for about `bytes` bytes of orders.
    pub fn with_capacity(bytes: usize) -> Self {
        let mut open = Vec::with_capacity(LIST_OPENING.len() + bytes + LIST_CLOSING.len());
        open.extend_from_slice(LIST_OPENING);
        let scanned = open.len();
        Self { open, len: 0, max_bytes: usize::MAX, cut: false, counted: scanned, scanned }
    }

    /// An empty list whose body stays within `max_bytes` (counted as compact JSON), but for a
    /// first order larger than that.
    pub fn bounded(max_bytes: ListBytes) -> Self {
        Self { max_bytes: max_bytes.get(), ..Self::default() }
    }

    /// Appends the JSON object a store holds for an order it wrote itself (see
    /// `OrderJson::from_stored`); `false` (and the list cut) when it does not fit, and once cut.
    #[must_use = "a refused order ends the list"]
    pub fn push_stored(&mut self, order: &[u8]) -> bool {
        if self.cut {
            return false;
        }
        let (before, len) = (self.open.len(), self.len);
        self.separate();
        self.open.extend_from_slice(order);
        self.keep_or_cut(before, len)
    }

    #[must_use = "a refused order ends the list"]
    pub fn push(&mut self, order: &OrderJson) -> bool {
        self.push_stored(order.as_bytes())
    }

    /// Appends one order that `write` writes straight into the body; `Ok(false)` (the order taken
    /// out again, the list cut) when it does not fit, and once cut. On an error the list is left
    /// with a partial entry, so callers drop it.
    pub fn push_with<E>(&mut self, write: impl FnOnce(&mut Vec<u8>) -> Result<(), E>) -> Result<bool, E> {
        if self.cut {
            return Ok(false);
        }
        let (before, len) = (self.open.len(), self.len);
        self.separate();
        write(&mut self.open)?;
        Ok(self.keep_or_cut(before, len))
    }

    /// Keeps the order just appended at `before` if the finished body stays within the bound (or
    /// it is the first), else takes it out again and cuts the list.
    fn keep_or_cut(&mut self, before: usize, len: usize) -> bool {
        let closing = LIST_CLOSING.len();
        let at_most = self.counted.saturating_add(self.open.len() - self.scanned).saturating_add(closing);
        if len == 0 || at_most <= self.max_bytes {
            return true;
        }
        self.counted += compact_len(&self.open[self.scanned..before]);
        self.scanned = before;
        let added = compact_len(&self.open[before..]);
        if self.counted.saturating_add(added).saturating_add(closing) <= self.max_bytes {
            self.counted += added;
            self.scanned = self.open.len();
            return true;
        }
        self.open.truncate(before);
        self.open.shrink_to(before + closing);
        self.len = len;
        self.cut = true;
        false
    }

    fn separate(&mut self) {
        if self.len > 0 {
            self.open.push(b',');
        }
        self.len += 1;
    }

    /// Whether an order was refused: the list ends before its bound would have been passed, and
    /// more orders may follow.
    pub fn is_cut(&self) -> bool {
        self.cut
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
        assert!(list.push(&OrderJson::from_order(&order(1))));
        assert!(list.push_stored(&serde_json::to_vec(&order(2)).expect("serialise")));
        assert!(list.push_with(|out| serde_json::to_writer(out, &order(3))).expect("write"));
        assert_eq!(list.len(), 3);
        assert!(!list.is_cut());
        let ids: Vec<u64> = list.to_orders().expect("parse").iter().map(|o| o.id.get()).collect();
        assert_eq!(ids, [1, 2, 3]);
        let body: Value = serde_json::from_slice(&list.into_body()).expect("json");
        assert_eq!(body["orders"].as_array().map(Vec::len), Some(3));
    }

    #[test]
    fn compact_length_leaves_out_whitespace_outside_strings_only() {
        assert_eq!(compact_len(br#"{"a": 1, "b": [1, 2]}"#), br#"{"a":1,"b":[1,2]}"#.len());
        assert_eq!(compact_len(br#"{"a b": "c, d: \" e", "f": "\\"}"#), br#"{"a b":"c, d: \" e","f":"\\"}"#.len());
        let compact = serde_json::to_vec(&order(1)).expect("serialise");
        let pretty = serde_json::to_vec_pretty(&order(1)).expect("serialise");
        assert_eq!((compact_len(&compact), compact_len(&pretty)), (compact.len(), compact.len()));
    }

    #[test]
    fn spaced_json_is_cut_where_compact_json_is() {
        let compact: Vec<Vec<u8>> = (1..=4).map(|id| serde_json::to_vec(&order(id)).expect("serialise")).collect();
        let spaced: Vec<Vec<u8>> =
            (1..=4).map(|id| serde_json::to_vec_pretty(&order(id)).expect("serialise")).collect();
        let two = LIST_OPENING.len() + compact[0].len() + 1 + compact[1].len() + LIST_CLOSING.len();
        for orders in [&compact, &spaced] {
            let mut list = OrderListJson::bounded(ListBytes::new(two));
            let kept: Vec<bool> = orders.iter().map(|order| list.push_stored(order)).collect();
            assert_eq!(kept, [true, true, false, false]);
        }
    }

    #[test]
    fn a_bounded_list_stops_before_its_bound_and_always_has_its_first_order() {
        let one = OrderJson::from_order(&order(1));
        let size = one.as_bytes().len();
        // Room for exactly two orders: the opening, two orders, a comma, the closing.
        let exact = LIST_OPENING.len() + 2 * size + 1 + LIST_CLOSING.len();
        for push in [0, 1] {
            let mut list = OrderListJson::bounded(ListBytes::new(exact));
            let mut add = |id| {
                let json = OrderJson::from_order(&order(id));
                if push == 0 {
                    list.push(&json)
                } else {
                    list.push_with(|out| {
                        out.extend_from_slice(json.as_bytes());
                        Ok::<_, ()>(())
                    })
                    .expect("write")
                }
            };
            assert!(add(1) && add(2), "two fit exactly");
            assert!(!add(3), "a third passes the bound");
            assert!(list.is_cut());
            let body = list.clone().into_body();
            assert_eq!(body.len(), exact, "push {push}");
            let ids: Vec<u64> = list.to_orders().expect("parse").iter().map(|o| o.id.get()).collect();
            assert_eq!(ids, [1, 2], "push {push}");
        }
        let mut tiny = OrderListJson::bounded(ListBytes::new(1));
        assert!(tiny.push_stored(one.as_bytes()), "the first order is always listed");
        assert!(!tiny.push_stored(b"{}"), "nothing after it");
        assert!(tiny.is_cut());
        assert_eq!(tiny.len(), 1);
        let mut small_after_cut = OrderListJson::bounded(ListBytes::new(LIST_OPENING.len() + size + 4));
        assert!(small_after_cut.push_stored(one.as_bytes()));
        assert!(!small_after_cut.push_stored(one.as_bytes()), "too large");
        assert!(!small_after_cut.push_stored(b"{}"), "a smaller order after a refused one is refused too");
        assert_eq!(small_after_cut.len(), 1);
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
