//! The `OrderStore` trait every backend implements, the typed queries it answers, its error type,
//! and `place_order`, the one piece of create logic shared by all backends (assigning an id and
//! retrying when a client already took it).

use crate::ids::{CustomerId, IdGenerator, OrderId, ProductId};
use crate::order::{NewOrder, Order, StatusChange};
use crate::order_json::{OrderJson, OrderListJson};
use crate::time::Timestamp;
use std::future::Future;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    #[error("order not found")]
    NotFound,
    /// The id is taken, or a conditional status change found another status.
    #[error("{0}")]
    Conflict(String),
    /// The database cannot be reached or the pool is exhausted; worth retrying.
    #[error("database unavailable: {0}")]
    Unavailable(String),
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
}

/// Up to `limit` orders that contain `product`, in no particular order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProductQuery {
    pub product: ProductId,
    pub limit: Limit,
}

/// Connection pool figures for `/metrics` and `/diagnostics`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct PoolStatus {
    pub max_size: usize,
    pub size: usize,
    pub available: usize,
    pub waiting: usize,
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

    /// `Conflict` when the id is taken (and nothing is written).
    fn insert(&self, order: &Order) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Sets the status and `updated_at`; `NotFound`, or `Conflict` when `change.from` is given
    /// and differs from the current status.
    fn update_status(
        &self,
        id: OrderId,
        change: StatusChange,
        now: Timestamp,
    ) -> impl Future<Output = Result<Order, StoreError>> + Send;

    /// Succeeds when the database answers.
    fn ready(&self) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Effective settings and engine statistics, read back from the database.
    fn diagnostics(&self) -> impl Future<Output = Result<serde_json::Value, StoreError>> + Send;

    fn pool_status(&self) -> PoolStatus;
}

/// How often `place_order` draws a new id after finding the drawn one taken.
const MAX_ID_ATTEMPTS: usize = 16;

/// Stores a new order: with the client's id (`Conflict` if taken), or with a generated one,
/// drawing the next id when a client already used it.
pub async fn place_order<S: OrderStore>(store: &S, ids: &IdGenerator, new: NewOrder) -> Result<Order, StoreError> {
    let now = Timestamp::now();
    if let Some(id) = new.requested_id() {
        let order = new.into_order(id, now);
        store.insert(&order).await?;
        return Ok(order);
    }
    let mut order = new.into_order(ids.next_id(), now);
    for _ in 0..MAX_ID_ATTEMPTS {
        match store.insert(&order).await {
            Err(StoreError::Conflict(_)) => order.id = ids.next_id(),
            result => return result.map(|()| order),
        }
    }
    Err(StoreError::Internal(format!("no free order id after {MAX_ID_ATTEMPTS} attempts")))
}
