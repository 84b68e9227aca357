//! `MemoryStore`: an in-memory `OrderStore` for the HTTP layer's tests, so they can check every
//! status code without a database. It is never a stand-in for the database tests: each real
//! backend runs the same contract suite against a real server.

use crate::idempotency::IdempotencyKey;
use crate::ids::OrderId;
use crate::order::{Order, StatusChange};
use crate::order_json::{ListBytes, OrderJson, OrderListJson, OrderToStore};
use crate::store::{CustomerQuery, KeyedInsert, OrderStore, PoolStatus, ProductQuery, Returning, StoreError};
use crate::time::Timestamp;
use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

#[derive(Debug, Default)]
pub struct MemoryStore {
    orders: Mutex<BTreeMap<OrderId, Order>>,
    /// Idempotency keys and the order each names; only locked while `orders` is held.
    keys: Mutex<HashMap<IdempotencyKey, (OrderId, i64)>>,
    down: AtomicBool,
}

impl MemoryStore {
    pub fn new() -> Self {
        Self::default()
    }

    /// Makes every call fail with `Unavailable`, like a database that went away.
    pub fn set_down(&self, down: bool) {
        self.down.store(down, Ordering::SeqCst);
    }

    fn orders(&self) -> Result<std::sync::MutexGuard<'_, BTreeMap<OrderId, Order>>, StoreError> {
        if self.down.load(Ordering::SeqCst) {
            return Err(StoreError::Unavailable("the in-memory store is switched off".into()));
        }
        self.orders.lock().map_err(|_| StoreError::Internal("poisoned lock".into()))
    }
}

fn list<'a>(orders: impl Iterator<Item = &'a Order>, max_bytes: ListBytes) -> OrderListJson {
    let mut list = OrderListJson::bounded(max_bytes);
    for order in orders {
        if !list.push(&OrderJson::from_order(order)) {
            break;
        }
    }
    list
}

impl OrderStore for MemoryStore {
    fn backend(&self) -> &'static str {
        "memory"
    }

    async fn get(&self, id: OrderId) -> Result<OrderJson, StoreError> {
        let orders = self.orders()?;
        let order = orders.get(&id).ok_or(StoreError::NotFound)?;
        Ok(OrderJson::from_order(order))
    }

    async fn by_customer(&self, query: CustomerQuery) -> Result<OrderListJson, StoreError> {
        let orders = self.orders()?;
        let upper = query.before.map_or(u64::MAX, OrderId::get);
        let found = orders
            .values()
            .rev()
            .filter(|order| order.customer.id == query.customer && order.id.get() < upper)
            .take(query.limit.get() as usize);
        Ok(list(found, query.max_bytes))
    }

    async fn by_product(&self, query: ProductQuery) -> Result<OrderListJson, StoreError> {
        let orders = self.orders()?;
        let found = orders
            .values()
            .filter(|order| order.items.iter().any(|item| item.product_id == query.product))
            .take(query.limit.get() as usize);
        Ok(list(found, query.max_bytes))
    }

    async fn insert(&self, order: &OrderToStore) -> Result<(), StoreError> {
        let order = order.order();
        let mut orders = self.orders()?;
        if orders.contains_key(&order.id) {
            return Err(StoreError::id_taken(order.id));
        }
        orders.insert(order.id, order.clone());
        Ok(())
    }

    async fn insert_with_key(
        &self,
        order: &OrderToStore,
        key: &IdempotencyKey,
        fingerprint: i64,
    ) -> Result<KeyedInsert, StoreError> {
        let order = order.order();
        let mut orders = self.orders()?;
        let mut keys = self.keys.lock().map_err(|_| StoreError::Internal("poisoned lock".into()))?;
        if let Some((existing, stored)) = keys.get(key).and_then(|(id, stored)| Some((orders.get(id)?, *stored))) {
            return Ok(KeyedInsert::Existing(Box::new(existing.clone()), stored));
        }
        if orders.contains_key(&order.id) {
            return Err(StoreError::id_taken(order.id));
        }
        orders.insert(order.id, order.clone());
        keys.insert(key.clone(), (order.id, fingerprint));
        Ok(KeyedInsert::Inserted)
    }

    async fn forget_key(&self, key: &IdempotencyKey, id: OrderId) -> Result<(), StoreError> {
        let _orders = self.orders()?;
        let mut keys = self.keys.lock().map_err(|_| StoreError::Internal("poisoned lock".into()))?;
        if keys.get(key).is_some_and(|(holder, _)| *holder == id) {
            keys.remove(key);
        }
        Ok(())
    }

    async fn update_status(
        &self,
        id: OrderId,
        change: StatusChange,
        now: Timestamp,
        returning: Returning,
    ) -> Result<Option<OrderJson>, StoreError> {
        let mut orders = self.orders()?;
        let order = orders.get_mut(&id).ok_or(StoreError::NotFound)?;
        if let Some(from) = change.from
            && order.status != from
        {
            return Err(StoreError::status_differs(id, order.status, from));
        }
        order.status = change.status;
        order.updated_at = now;
        match returning {
            Returning::Document => Ok(Some(OrderJson::from_order(order))),
            Returning::Nothing => Ok(None),
        }
    }

    async fn ready(&self) -> Result<(), StoreError> {
        self.orders().map(drop)
    }

    async fn diagnostics(&self) -> Result<serde_json::Value, StoreError> {
        let count = self.orders()?.len();
        Ok(serde_json::json!({"backend": "memory", "orders": count}))
    }

    fn pool_status(&self) -> PoolStatus {
        // No pool: one lock guards the map.
        PoolStatus { max_size: 1, size: 1, available: 1, waiting: 0 }
    }
}
