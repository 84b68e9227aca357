//! Test support for the MongoDB tests: the server under test (`MONGODB_URI`, default the local
//! stack's `mongodb://127.0.0.1:57017`), a database name no other test uses, and `TestStore`, a
//! `MongoStore` on a fresh database that drops that database when the test is done with it.

use mongodb::Client;
use orders_core::{
    CustomerQuery, IdempotencyKey, KeyedInsert, OrderId, OrderJson, OrderListJson, OrderStore, OrderToStore,
    PoolStatus, ProductQuery, Returning, StatusChange, StoreError, Timestamp,
};
use orders_mongo::{MongoConfig, MongoStore};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

pub fn mongodb_uri() -> String {
    std::env::var("MONGODB_URI").unwrap_or_else(|_| "mongodb://127.0.0.1:57017".to_owned())
}

/// `<prefix>_<pid>_<n>_<time>`: unique across the tests of one run and across runs.
pub fn unique_db_name(prefix: &str) -> String {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.subsec_nanos()).unwrap_or(0);
    format!("{prefix}_{}_{}_{nanos}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed))
}

/// A store on an empty database of its own (the service's defaults: majority, journal on).
pub async fn fresh_store() -> TestStore {
    let config = MongoConfig::new(mongodb_uri(), unique_db_name("orders_test"));
    TestStore { store: MongoStore::connect(&config).await.expect("connect to MongoDB (is the local stack running?)") }
}

/// A `MongoStore` that drops its database when dropped.
pub struct TestStore {
    pub store: MongoStore,
}

impl Drop for TestStore {
    fn drop(&mut self) {
        // Drop cannot await, and the test's runtime may be single-threaded: use a thread with a
        // runtime and a client of its own.
        let name = self.store.database().name().to_owned();
        let dropped = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
            runtime.block_on(async {
                let client = Client::with_uri_str(mongodb_uri()).await?;
                client.database(&name).drop().await
            })
        });
        let _ = dropped.join();
    }
}

impl OrderStore for TestStore {
    fn backend(&self) -> &'static str {
        self.store.backend()
    }

    async fn get(&self, id: OrderId) -> Result<OrderJson, StoreError> {
        self.store.get(id).await
    }

    async fn by_customer(&self, query: CustomerQuery) -> Result<OrderListJson, StoreError> {
        self.store.by_customer(query).await
    }

    async fn by_product(&self, query: ProductQuery) -> Result<OrderListJson, StoreError> {
        self.store.by_product(query).await
    }

    async fn insert(&self, order: &OrderToStore) -> Result<(), StoreError> {
        self.store.insert(order).await
    }

    async fn insert_with_key(
        &self,
        order: &OrderToStore,
        key: &IdempotencyKey,
        print: i64,
    ) -> Result<KeyedInsert, StoreError> {
        self.store.insert_with_key(order, key, print).await
    }

    async fn forget_key(&self, key: &IdempotencyKey, id: OrderId) -> Result<(), StoreError> {
        self.store.forget_key(key, id).await
    }

    async fn update_status(
        &self,
        id: OrderId,
        change: StatusChange,
        now: Timestamp,
        returning: Returning,
    ) -> Result<Option<OrderJson>, StoreError> {
        self.store.update_status(id, change, now, returning).await
    }

    async fn ready(&self) -> Result<(), StoreError> {
        self.store.ready().await
    }

    async fn diagnostics(&self) -> Result<serde_json::Value, StoreError> {
        self.store.diagnostics().await
    }

    fn pool_status(&self) -> PoolStatus {
        self.store.pool_status()
    }
}
