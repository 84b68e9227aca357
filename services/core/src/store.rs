//! The `OrderStore` trait every backend implements, the typed queries it answers, its error type,
//! and `place_order`, the one piece of create logic shared by all backends (assigning an id,
//! retrying when a client already took it, and answering a retried `Idempotency-Key`).

use crate::idempotency::{self, IdempotencyKey};
use crate::ids::{CustomerId, IdGenerator, OrderId, ProductId};
use crate::order::{NewOrder, Order, StatusChange};
use crate::order_json::{ListBytes, OrderJson, OrderListJson, OrderToStore};
use crate::time::Timestamp;
use std::future::Future;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    #[error("order not found")]
    NotFound,
    /// The id is taken, or a conditional status change found another status.
    #[error("{0}")]
    Conflict(String),
    /// The database cannot be reached; nothing was written; worth retrying.
    #[error("database unavailable: {0}")]
    Unavailable(String),
    /// No database connection became free within `POOL_TIMEOUT_MS`; nothing was written.
    #[error("no database connection free in time: {0}")]
    Busy(String),
    /// A write was sent but its answer was lost (connection dropped, durability not confirmed,
    /// request timed out): it may or may not have been applied.
    #[error("outcome of the write unknown: {0}")]
    OutcomeUnknown(String),
    /// The `Idempotency-Key` names an order created by a different request body.
    #[error("the Idempotency-Key was used for a different request")]
    KeyReused,
    /// Anything else; the HTTP layer logs it and tells the client only "internal".
    #[error("database error: {0}")]
    Internal(String),
}

impl StoreError {
    /// The conflict of an insert whose id is taken; the same words from every backend.
    pub fn id_taken(id: OrderId) -> Self {
        StoreError::Conflict(format!("order {id} already exists"))
    }

    /// The conflict of a conditional status change; the same words from every backend.
    pub fn status_differs(id: OrderId, current: crate::order::Status, expected: crate::order::Status) -> Self {
        StoreError::Conflict(format!("order {id} has status {}, not {}", current.as_str(), expected.as_str()))
    }
}

/// A page size checked against a maximum (both list endpoints allow 1..=100).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limit(u32);

impl Limit {
    pub const MAX: u32 = 100;
    /// Default page size of `GET /customers/{id}/orders`.
    pub const CUSTOMER_DEFAULT: Limit = Limit(20);
    /// Default page size of `GET /products/{id}/orders`.
    pub const PRODUCT_DEFAULT: Limit = Limit(10);

    pub fn new(value: u64) -> Result<Self, String> {
        if (1..=u64::from(Self::MAX)).contains(&value) {
            Ok(Self(value as u32))
        } else {
            Err(format!("limit must be an integer from 1 to {}", Self::MAX))
        }
    }

    pub fn get(self) -> u32 {
        self.0
    }
}

/// Newest first (id descending); `before` is an exclusive upper bound for keyset paging.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CustomerQuery {
    pub customer: CustomerId,
    pub limit: Limit,
    pub before: Option<OrderId>,
    /// The answer stops before passing this many bytes (`MAX_LIST_BYTES`); continue with `before`
    /// set to the last id listed.
    pub max_bytes: ListBytes,
}

/// Up to `limit` orders that contain `product`, in no particular order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProductQuery {
    pub product: ProductId,
    pub limit: Limit,
    /// The answer stops before passing this many bytes (`MAX_LIST_BYTES`).
    pub max_bytes: ListBytes,
}

/// Connection pool figures for `/metrics` and `/diagnostics`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct PoolStatus {
    pub max_size: usize,
    pub size: usize,
    pub available: usize,
    pub waiting: usize,
}

/// What a keyed insert found: the order was written, or the key already names an order (and
/// nothing was written).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyedInsert {
    Inserted,
    /// The order the key names, and the fingerprint of the request that created it.
    Existing(Box<Order>, i64),
}

/// Whether a status change answers with the updated order (`Document`) or only says it happened
/// (`Nothing`, for `Prefer: return=minimal`: the document never leaves the database).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Returning {
    Document,
    Nothing,
}

/// One backend. Every method is one database round trip on its success path.
///
/// Reads return the orders already as the API's JSON, written from what the database sends:
/// the services answer reads without parsing a stored order and serialising it again.
pub trait OrderStore: Send + Sync + 'static {
    /// `"postgres"` or `"mongodb"`, for logs and diagnostics.
    fn backend(&self) -> &'static str;

    fn get(&self, id: OrderId) -> impl Future<Output = Result<OrderJson, StoreError>> + Send;

    fn by_customer(&self, query: CustomerQuery) -> impl Future<Output = Result<OrderListJson, StoreError>> + Send;

    fn by_product(&self, query: ProductQuery) -> impl Future<Output = Result<OrderListJson, StoreError>> + Send;

    /// `Conflict` when the id is taken (and nothing is written). A store that sends JSON to its
    /// database takes it from `order.json()`, which the answer then reuses.
    fn insert(&self, order: &OrderToStore) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Stores `order` with `key` and the request's `fingerprint` in one atomic write, so that two
    /// requests with the same key can never both write: `Existing` (nothing written) when an order
    /// already carries `key`, `Conflict` when only the id is taken. Neither the key nor the
    /// fingerprint is part of the order read back.
    fn insert_with_key(
        &self,
        order: &OrderToStore,
        key: &IdempotencyKey,
        fingerprint: i64,
    ) -> impl Future<Output = Result<KeyedInsert, StoreError>> + Send;

    /// Removes `key` from order `id` (a key past the retention window), so it can name a new order.
    fn forget_key(&self, key: &IdempotencyKey, id: OrderId) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Sets the status and `updated_at`; `NotFound`, or `Conflict` when `change.from` is given
    /// and differs from the current status. The result is `Some` exactly when `returning` is
    /// `Document`: the updated order as the database returned it (like `get`, not parsed and
    /// serialised again).
    fn update_status(
        &self,
        id: OrderId,
        change: StatusChange,
        now: Timestamp,
        returning: Returning,
    ) -> impl Future<Output = Result<Option<OrderJson>, StoreError>> + Send;

    /// Succeeds when the database answers.
    fn ready(&self) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Effective settings and engine statistics, read back from the database.
    fn diagnostics(&self) -> impl Future<Output = Result<serde_json::Value, StoreError>> + Send;

    fn pool_status(&self) -> PoolStatus;
}

/// How often `place_order` draws a new id after finding the drawn one taken.
const MAX_ID_ATTEMPTS: usize = 16;

/// What `place_order` did: stored a new order, or found the same request already stored under its
/// `Idempotency-Key` and answers with the order as it was created then.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Placed {
    Created(OrderToStore),
    Replayed(Order),
}

impl Placed {
    pub fn order(&self) -> &Order {
        match self {
            Placed::Created(order) => order.order(),
            Placed::Replayed(order) => order,
        }
    }

    /// The answer's body: a created order's JSON as the store may already have written it.
    pub fn into_json(self) -> OrderJson {
        match self {
            Placed::Created(order) => order.into_json(),
            Placed::Replayed(order) => OrderJson::from_order(&order),
        }
    }
}

/// Stores a new order: with the client's id (`Conflict` if taken), or with a generated one,
/// drawing the next id when a client already used it. With a `key`, the key is stored with the
/// order; a key that already names an order within the retention window answers that order
/// (`Replayed`) when the body is the same, and `KeyReused` when it differs.
pub async fn place_order<S: OrderStore>(
    store: &S,
    ids: &IdGenerator,
    new: NewOrder,
    key: Option<&IdempotencyKey>,
) -> Result<Placed, StoreError> {
    let now = Timestamp::now();
    let mut order =
        OrderToStore::from(new.clone().into_order(new.requested_id().unwrap_or_else(|| ids.next_id()), now));
    let fingerprint = if key.is_some() { idempotency::fingerprint(&new) } else { 0 };
    // Each round either stores, answers, or changes something (the id, or an expired key).
    for _ in 0..MAX_ID_ATTEMPTS {
        let outcome = match key {
            None => store.insert(&order).await.map(|()| KeyedInsert::Inserted),
            Some(key) => store.insert_with_key(&order, key, fingerprint).await,
        };
        match outcome {
            Ok(KeyedInsert::Inserted) => return Ok(Placed::Created(order)),
            Ok(KeyedInsert::Existing(existing, stored)) => match key {
                Some(key) if idempotency::expired(&existing, now) => store.forget_key(key, existing.id).await?,
                _ => {
                    return idempotency::original_answer(new, fingerprint, existing.as_ref(), stored)
                        .map(Placed::Replayed)
                        .ok_or(StoreError::KeyReused);
                }
            },
            Err(StoreError::Conflict(_)) if new.requested_id().is_none() => order.set_id(ids.next_id()),
            Err(error) => return Err(error),
        }
    }
    Err(StoreError::Internal(format!("no free order id after {MAX_ID_ATTEMPTS} attempts")))
}
