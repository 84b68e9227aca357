//! The store contract: what every `OrderStore` must do, written once and run against each real
//! backend. `store_contract_tests!(fresh_store)` expands to one `#[tokio::test]` per check, each
//! on a store over an empty database returned by the backend's `fresh_store().await`.

use futures_util::future::join_all;
use orders_core::sample::order_body;
use orders_core::{
    CustomerId, CustomerQuery, IdGenerator, IdempotencyKey, KeyedInsert, Limit, ListBytes, NewOrder, Order, OrderId,
    OrderJson, OrderListJson, OrderStore, Placed, ProductId, ProductQuery, Returning, Status, StatusChange, StoreError,
    Timestamp, place_order,
};
use serde_json::{Value, json};

/// Expands to the whole contract suite for one backend.
#[macro_export]
macro_rules! store_contract_tests {
    ($fresh_store:path) => {
        $crate::store_contract_tests!(@tests $fresh_store;
            insert_then_get_returns_the_same_order,
            get_of_a_missing_id_is_not_found,
            insert_of_a_taken_id_conflicts_and_keeps_the_original,
            customer_orders_are_newest_first_with_limit_and_before,
            product_orders_contain_the_product_up_to_the_limit,
            lists_stop_before_their_byte_bound_and_page_on,
            status_update_sets_status_and_updated_at,
            conditional_status_update_checks_the_current_status,
            status_update_of_a_missing_order_is_not_found,
            place_order_draws_a_new_id_when_the_generated_one_is_taken,
            big_documents_round_trip,
            ready_and_diagnostics_answer,
            status_update_returning_nothing_writes_the_same,
            a_keyed_insert_writes_once_and_finds_its_key_again,
            an_expired_key_names_a_new_order,
            concurrent_requests_with_one_key_make_one_order,
            concurrent_conditional_updates_report_the_status_they_met,
        );
    };
    (@tests $fresh_store:path; $($name:ident),* $(,)?) => {
        $(
            #[tokio::test]
            async fn $name() {
                let store = $fresh_store().await;
                $crate::contract::$name(&store).await;
            }
        )*
    };
}

fn order(id: u64, customer: u64, products: [u64; 3]) -> Order {
    order_from(json!(id), order_body(customer, products))
}

fn order_from(id: Value, mut body: Value) -> Order {
    body["id"] = id;
    let new = NewOrder::parse(body.to_string().as_bytes()).expect("sample order is valid");
    let requested = new.requested_id().expect("sample order has an id");
    new.into_order(requested, Timestamp::parse("2026-11-30T10:00:00.000Z").expect("timestamp"))
}

fn customer_query(customer: u64, limit: u64, before: Option<u64>) -> CustomerQuery {
    CustomerQuery {
        customer: CustomerId::new(customer).expect("id"),
        limit: Limit::new(limit).expect("limit"),
        before: before.map(|id| OrderId::new(id).expect("id")),
        max_bytes: ListBytes::UNBOUNDED,
    }
}

/// The ids of a list, after checking that every entry parses as a valid order.
fn ids(list: &OrderListJson) -> Vec<u64> {
    list.to_orders().expect("the store's JSON holds valid orders").iter().map(|order| order.id.get()).collect()
}

/// `get`, parsed back into an `Order` (which checks every field of the store's JSON).
async fn get<S: OrderStore>(store: &S, id: u64) -> Order {
    store.get(oid(id)).await.expect("get").to_order().expect("the store's JSON is a valid order")
}

/// The status of the order a store returned, parsed and validated.
fn status_of(returned: Option<OrderJson>) -> Option<Status> {
    returned.map(|json| json.to_order().expect("the store's JSON is a valid order").status)
}

fn oid(id: u64) -> OrderId {
    OrderId::new(id).expect("id")
}

pub async fn insert_then_get_returns_the_same_order<S: OrderStore>(store: &S) {
    let mut body = order_body(7, [1, 2, 3]);
    body["note"] = json!("ünïcödé ✓ and \"quotes\" and \\ backslashes");
    body["status"] = json!("paid");
    let written = order_from(json!(41), body);
    store.insert(&written.clone().into()).await.expect("insert");
    assert_eq!(get(store, 41).await, written);
}

pub async fn get_of_a_missing_id_is_not_found<S: OrderStore>(store: &S) {
    assert_eq!(store.get(oid(404)).await, Err(StoreError::NotFound));
}

pub async fn insert_of_a_taken_id_conflicts_and_keeps_the_original<S: OrderStore>(store: &S) {
    let original = order(5, 1, [1, 2, 3]);
    store.insert(&original.clone().into()).await.expect("insert");
    let intruder = order(5, 2, [4, 5, 6]);
    assert_eq!(store.insert(&intruder.into()).await, Err(StoreError::id_taken(oid(5))));
    assert_eq!(get(store, 5).await, original);
}

pub async fn customer_orders_are_newest_first_with_limit_and_before<S: OrderStore>(store: &S) {
    for id in [3, 9, 1, 7, 5] {
        store.insert(&order(id, 100, [1, 2, 3]).into()).await.expect("insert");
    }
    store.insert(&order(8, 200, [1, 2, 3]).into()).await.expect("insert other customer");
    assert_eq!(ids(&store.by_customer(customer_query(100, 20, None)).await.expect("list")), [9, 7, 5, 3, 1]);
    assert_eq!(ids(&store.by_customer(customer_query(100, 2, None)).await.expect("list")), [9, 7]);
    assert_eq!(ids(&store.by_customer(customer_query(100, 2, Some(7))).await.expect("list")), [5, 3]);
    assert_eq!(ids(&store.by_customer(customer_query(100, 20, Some(1))).await.expect("list")), Vec::<u64>::new());
    assert_eq!(ids(&store.by_customer(customer_query(999, 20, None)).await.expect("list")), Vec::<u64>::new());
}

pub async fn product_orders_contain_the_product_up_to_the_limit<S: OrderStore>(store: &S) {
    for (id, products) in [(1, [10, 11, 12]), (2, [12, 13, 14]), (3, [15, 16, 12]), (4, [20, 21, 22])] {
        store.insert(&order(id, 1, products).into()).await.expect("insert");
    }
    let query = |product, limit| ProductQuery {
        product: ProductId::new(product).expect("id"),
        limit: Limit::new(limit).expect("limit"),
        max_bytes: ListBytes::UNBOUNDED,
    };
    let mut found = ids(&store.by_product(query(12, 10)).await.expect("search"));
    found.sort_unstable();
    assert_eq!(found, [1, 2, 3]);
    let limited = store.by_product(query(12, 2)).await.expect("search").to_orders().expect("valid orders");
    assert_eq!(limited.len(), 2);
    assert!(limited.iter().all(|order| order.items.iter().any(|item| item.product_id.get() == 12)));
    assert_eq!(ids(&store.by_product(query(21, 10)).await.expect("search")), [4]);
    assert!(store.by_product(query(99, 10)).await.expect("search").is_empty());
}

/// The body's length as compact JSON, what the bound counts (orders-pg's jsonb text has spaces).
fn compact_len(list: OrderListJson) -> usize {
    let body: Value = serde_json::from_slice(&list.into_body()).expect("JSON");
    serde_json::to_vec(&body).expect("serialise").len()
}

/// Five orders of one customer and one product, each with a 10 kB note: a bound of 25 kB holds
/// two of them (`OrderListJson::bounded`), a bound of one byte still the first; the customer list
/// pages on with `before` from the last id listed and misses none.
pub async fn lists_stop_before_their_byte_bound_and_page_on<S: OrderStore>(store: &S) {
    for id in 1..=5 {
        let mut body = order_body(300, [30, 31, 32]);
        body["note"] = json!("n".repeat(10_000));
        store.insert(&order_from(json!(id), body).into()).await.expect("insert");
    }
    let bounded =
        |before, max_bytes| CustomerQuery { max_bytes: ListBytes::new(max_bytes), ..customer_query(300, 100, before) };
    let (mut pages, mut before) = (Vec::new(), None);
    loop {
        let list = store.by_customer(bounded(before, 25_000)).await.expect("list");
        assert!(compact_len(list.clone()) <= 25_000, "within the bound");
        let page = ids(&list);
        let last = page.last().copied();
        assert_eq!(list.is_cut(), last.is_some_and(|last| last > 1), "cut while orders remain: {page:?}");
        pages.push(page);
        match last {
            Some(last) if list.is_cut() => before = Some(last),
            _ => break,
        }
    }
    assert_eq!(pages, [vec![5, 4], vec![3, 2], vec![1]]);
    let first_only = store.by_customer(bounded(None, 1)).await.expect("list");
    assert_eq!((ids(&first_only), first_only.is_cut()), (vec![5], true));
    let whole = store.by_customer(bounded(None, 1 << 20)).await.expect("list");
    assert_eq!((ids(&whole).len(), whole.is_cut()), (5, false));

    let product = |max_bytes, limit| ProductQuery {
        product: ProductId::new(31).expect("id"),
        limit: Limit::new(limit).expect("limit"),
        max_bytes: ListBytes::new(max_bytes),
    };
    let cut = store.by_product(product(25_000, 10)).await.expect("search");
    assert_eq!((cut.len(), cut.is_cut()), (2, true));
    assert!(compact_len(cut) <= 25_000);
    let one = store.by_product(product(1, 10)).await.expect("search");
    assert_eq!((one.len(), one.is_cut()), (1, true));
    let limited = store.by_product(product(1 << 20, 3)).await.expect("search");
    assert_eq!((limited.len(), limited.is_cut()), (3, false), "the limit is not a cut");
}

pub async fn status_update_sets_status_and_updated_at<S: OrderStore>(store: &S) {
    let original = order(11, 1, [1, 2, 3]);
    store.insert(&original.clone().into()).await.expect("insert");
    let later = Timestamp::parse("2026-12-01T08:30:00.250Z").expect("timestamp");
    let change = StatusChange { status: Status::Shipped, from: None };
    let updated = store.update_status(oid(11), change, later, Returning::Document).await.expect("update").expect("doc");
    let updated = updated.to_order().expect("the store's JSON is a valid order");
    assert_eq!(updated.status, Status::Shipped);
    assert_eq!(updated.updated_at, later);
    assert_eq!(updated.created_at, original.created_at);
    assert_eq!(Order { status: original.status, updated_at: original.updated_at, ..updated.clone() }, original);
    assert_eq!(get(store, 11).await, updated);
}

pub async fn conditional_status_update_checks_the_current_status<S: OrderStore>(store: &S) {
    store.insert(&order(12, 1, [1, 2, 3]).into()).await.expect("insert");
    let now = Timestamp::now();
    let wrong = StatusChange { status: Status::Shipped, from: Some(Status::Paid) };
    assert_eq!(
        store.update_status(oid(12), wrong, now, Returning::Document).await,
        Err(StoreError::status_differs(oid(12), Status::Pending, Status::Paid))
    );
    assert_eq!(get(store, 12).await.status, Status::Pending, "a failed update changes nothing");
    let right = StatusChange { status: Status::Paid, from: Some(Status::Pending) };
    let updated = store.update_status(oid(12), right, now, Returning::Document).await.expect("update");
    assert_eq!(status_of(updated), Some(Status::Paid));
    let same = StatusChange { status: Status::Paid, from: Some(Status::Paid) };
    let again = store.update_status(oid(12), same, now, Returning::Document).await.expect("idempotent update");
    assert_eq!(status_of(again), Some(Status::Paid));
}

pub async fn status_update_of_a_missing_order_is_not_found<S: OrderStore>(store: &S) {
    let now = Timestamp::now();
    for from in [None, Some(Status::Pending)] {
        let change = StatusChange { status: Status::Paid, from };
        for returning in [Returning::Document, Returning::Nothing] {
            let result = store.update_status(oid(77), change, now, returning).await;
            assert_eq!(result, Err(StoreError::NotFound), "from {from:?}, {returning:?}");
        }
    }
}

pub async fn place_order_draws_a_new_id_when_the_generated_one_is_taken<S: OrderStore>(store: &S) {
    const FROZEN: u64 = 1_700_000_000_000_000;
    let ids = IdGenerator::with_clock(|| FROZEN);
    store.insert(&order(FROZEN, 1, [1, 2, 3]).into()).await.expect("insert");
    store.insert(&order(FROZEN + 1, 1, [1, 2, 3]).into()).await.expect("insert");
    let body = order_body(2, [4, 5, 6]);
    let new = NewOrder::parse(body.to_string().as_bytes()).expect("valid");
    let placed = place_order(store, &ids, new, None).await.expect("placed");
    let Placed::Created(placed) = placed else { panic!("a new order, not a replay: {placed:?}") };
    let placed = placed.order();
    assert_eq!(placed.id.get(), FROZEN + 2);
    assert_eq!(&get(store, placed.id.get()).await, placed);
    assert_eq!(get(store, FROZEN).await.customer.id.get(), 1, "the taken order is untouched");
}

pub async fn big_documents_round_trip<S: OrderStore>(store: &S) {
    let mut body = order_body(3, [1, 2, 3]);
    let template = body["items"][0].clone();
    body["items"] = Value::Array(
        (1..=40)
            .map(|product| {
                let mut item = template.clone();
                item["product_id"] = json!(product);
                item
            })
            .collect(),
    );
    body["note"] = json!("x".repeat(100_000));
    let big = order_from(json!(90), body);
    store.insert(&big.clone().into()).await.expect("insert");
    assert_eq!(get(store, 90).await, big);
    let query = ProductQuery {
        product: ProductId::new(40).expect("id"),
        limit: Limit::new(10).expect("limit"),
        max_bytes: ListBytes::UNBOUNDED,
    };
    assert_eq!(ids(&store.by_product(query).await.expect("search")), [90]);
}

pub async fn ready_and_diagnostics_answer<S: OrderStore>(store: &S) {
    store.ready().await.expect("ready");
    let report = store.diagnostics().await.expect("diagnostics");
    assert_eq!(report["backend"], json!(store.backend()));
    assert!(store.pool_status().max_size >= 1, "the pool has a size");
}

pub async fn status_update_returning_nothing_writes_the_same<S: OrderStore>(store: &S) {
    store.insert(&order(13, 1, [1, 2, 3]).into()).await.expect("insert");
    let later = Timestamp::parse("2026-12-01T08:30:00.250Z").expect("timestamp");
    let change = StatusChange { status: Status::Delivered, from: Some(Status::Pending) };
    assert_eq!(store.update_status(oid(13), change, later, Returning::Nothing).await, Ok(None));
    let stored = get(store, 13).await;
    assert_eq!((stored.status, stored.updated_at), (Status::Delivered, later));
    let again = store.update_status(oid(13), change, later, Returning::Nothing).await;
    assert_eq!(again, Err(StoreError::status_differs(oid(13), Status::Delivered, Status::Pending)));
}

fn key(text: &str) -> IdempotencyKey {
    IdempotencyKey::parse(text).expect("key")
}

pub async fn a_keyed_insert_writes_once_and_finds_its_key_again<S: OrderStore>(store: &S) {
    let first = order(21, 1, [1, 2, 3]);
    assert_eq!(store.insert_with_key(&first.clone().into(), &key("k-1"), -42).await, Ok(KeyedInsert::Inserted));
    assert_eq!(get(store, 21).await, first, "the key is not part of the order");
    let retry = order(22, 1, [1, 2, 3]);
    assert_eq!(
        store.insert_with_key(&retry.into(), &key("k-1"), 7).await,
        Ok(KeyedInsert::Existing(Box::new(first.clone()), -42))
    );
    assert_eq!(store.get(oid(22)).await, Err(StoreError::NotFound), "nothing written under a known key");
    let other_key_same_id = order(21, 2, [4, 5, 6]);
    assert_eq!(
        store.insert_with_key(&other_key_same_id.into(), &key("k-2"), 1).await,
        Err(StoreError::id_taken(oid(21)))
    );
    assert_eq!(store.insert_with_key(&order(23, 1, [1, 2, 3]).into(), &key("k-2"), 1).await, Ok(KeyedInsert::Inserted));
    store.insert(&order(24, 1, [1, 2, 3]).into()).await.expect("an insert without a key is unchanged");
    store.insert(&order(25, 1, [1, 2, 3]).into()).await.expect("and keyless orders never collide on their key");
    let shipped = StatusChange { status: Status::Shipped, from: None };
    store.update_status(oid(21), shipped, Timestamp::now(), Returning::Nothing).await.expect("update");
    let found = store.insert_with_key(&order(26, 1, [1, 2, 3]).into(), &key("k-1"), 0).await.expect("lookup");
    let KeyedInsert::Existing(found, -42) = found else { panic!("the key still names order 21: {found:?}") };
    assert_eq!((found.id, found.status), (oid(21), Status::Shipped), "the key survives a status change");
}

pub async fn an_expired_key_names_a_new_order<S: OrderStore>(store: &S) {
    let old = order_from(json!(31), order_body(1, [1, 2, 3]));
    let long_ago = Timestamp::parse("2020-01-01T00:00:00.000Z").expect("timestamp");
    let old = Order { created_at: long_ago, updated_at: long_ago, ..old };
    let body = order_body(1, [1, 2, 3]);
    let new = NewOrder::parse(body.to_string().as_bytes()).expect("valid");
    let fingerprint = orders_core::idempotency::fingerprint(&new);
    store.insert_with_key(&old.clone().into(), &key("old-key"), fingerprint).await.expect("insert");
    let placed = place_order(store, &IdGenerator::new(), new, Some(&key("old-key"))).await.expect("placed");
    let Placed::Created(placed) = placed else { panic!("an expired key makes a new order: {placed:?}") };
    let placed = placed.order().clone();
    assert_ne!(placed.id, oid(31));
    assert_eq!(get(store, 31).await, old, "the old order stays");
    let new = NewOrder::parse(body.to_string().as_bytes()).expect("valid");
    let again = place_order(store, &IdGenerator::new(), new, Some(&key("old-key"))).await.expect("replayed");
    assert_eq!(again, Placed::Replayed(placed));
}

pub async fn concurrent_requests_with_one_key_make_one_order<S: OrderStore>(store: &S) {
    let generator = IdGenerator::new();
    let body = order_body(4242, [1, 2, 3]);
    let same_key = key("same-key");
    let attempts = (0..8).map(|_| {
        let new = NewOrder::parse(body.to_string().as_bytes()).expect("valid");
        place_order(store, &generator, new, Some(&same_key))
    });
    let results = join_all(attempts).await;
    let orders: Vec<Order> = results.iter().map(|r| r.as_ref().expect("placed").order().clone()).collect();
    let created = results.iter().filter(|r| matches!(r, Ok(Placed::Created(_)))).count();
    assert_eq!(created, 1, "exactly one request writes: {results:?}");
    assert!(orders.iter().all(|order| *order == orders[0]), "every request answers the same order");
    let stored = store.by_customer(customer_query(4242, 100, None)).await.expect("list");
    assert_eq!(ids(&stored), [orders[0].id.get()], "one order in the database");
    let mut changed = body.clone();
    changed["items"][0]["quantity"] = json!(7);
    let new = NewOrder::parse(changed.to_string().as_bytes()).expect("valid");
    assert_eq!(place_order(store, &generator, new, Some(&same_key)).await, Err(StoreError::KeyReused));
}

pub async fn concurrent_conditional_updates_report_the_status_they_met<S: OrderStore>(store: &S) {
    store.insert(&order(41, 1, [1, 2, 3]).into()).await.expect("insert");
    // Two flippers race pending -> paid -> pending; a 409 must name a status other than `from`.
    let flip = |from: Status, to: Status| async move {
        let mut conflicts = Vec::new();
        for _ in 0..100 {
            let change = StatusChange { status: to, from: Some(from) };
            match store.update_status(oid(41), change, Timestamp::now(), Returning::Nothing).await {
                Ok(_) => {}
                Err(StoreError::Conflict(message)) => conflicts.push(message),
                Err(other) => panic!("unexpected {other:?}"),
            }
        }
        conflicts
    };
    let flippers =
        [flip(Status::Pending, Status::Paid), flip(Status::Paid, Status::Pending), flip(Status::Pending, Status::Paid)];
    for conflicts in join_all(flippers).await {
        for message in conflicts.iter().filter(|message| !message.contains("changed its status concurrently")) {
            let (said_current, said_expected) = message
                .strip_prefix("order 41 has status ")
                .and_then(|rest| rest.split_once(", not "))
                .expect("conflict message");
            assert_ne!(said_current, said_expected, "a 409 saying {message:?}");
        }
    }
}
