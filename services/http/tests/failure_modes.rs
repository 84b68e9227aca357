//! How the HTTP layer behaves when things go wrong below it: a database that is down (503 with
//! Retry-After, readiness fails, liveness holds), a request slower than `REQUEST_TIMEOUT_MS`
//! (503), a panicking handler (500 "internal", the process lives on), and SIGTERM-style shutdown
//! that lets an in-flight request finish.

use orders_core::memory::MemoryStore;
use orders_core::{
    CustomerQuery, Order, OrderId, OrderJson, OrderListJson, OrderStore, PoolStatus, ProductQuery, StatusChange,
    StoreError, Timestamp,
};
use orders_http::{HttpConfig, Server, app};
use orders_testkit::TestApp;
use orders_testkit::api::assert_error;
use std::sync::Arc;
use std::time::Duration;

/// The in-memory store, made slow (every `get` sleeps) or broken (`get` of id 13 panics).
struct Misbehaving {
    inner: MemoryStore,
    delay: Duration,
}

impl OrderStore for Misbehaving {
    fn backend(&self) -> &'static str {
        "misbehaving"
    }
    async fn get(&self, id: OrderId) -> Result<OrderJson, StoreError> {
        assert_ne!(id.get(), 13, "unlucky id");
        tokio::time::sleep(self.delay).await;
        self.inner.get(id).await
    }
    async fn by_customer(&self, query: CustomerQuery) -> Result<OrderListJson, StoreError> {
        self.inner.by_customer(query).await
    }
    async fn by_product(&self, query: ProductQuery) -> Result<OrderListJson, StoreError> {
        self.inner.by_product(query).await
    }
    async fn insert(&self, order: &Order) -> Result<(), StoreError> {
        self.inner.insert(order).await
    }
    async fn update_status(&self, id: OrderId, change: StatusChange, now: Timestamp) -> Result<Order, StoreError> {
        self.inner.update_status(id, change, now).await
    }
    async fn ready(&self) -> Result<(), StoreError> {
        self.inner.ready().await
    }
    async fn diagnostics(&self) -> Result<serde_json::Value, StoreError> {
        self.inner.diagnostics().await
    }
    fn pool_status(&self) -> PoolStatus {
        self.inner.pool_status()
    }
}

#[tokio::test]
async fn a_database_that_is_down_gives_503_with_retry_after_and_fails_readiness_only() {
    let store = Arc::new(MemoryStore::new());
    store.set_down(true);
    let server = Server::bind(HttpConfig::for_tests().bind_addr, app(store.clone(), &HttpConfig::for_tests()))
        .await
        .expect("bind");
    let app_client = TestApp::at(format!("http://{}", server.local_addr().expect("addr")));
    tokio::spawn(server.run(std::future::pending(), Duration::from_secs(1)));

    let reply = app_client.get("/orders/1").await;
    assert_error(&reply, 503, "unavailable");
    assert_eq!(reply.headers["retry-after"], "1");
    assert!(!reply.text.contains("in-memory"), "the cause is logged, not sent: {}", reply.text);
    assert_error(&app_client.get("/readyz").await, 503, "unavailable");
    assert_eq!(app_client.get("/healthz").await.status, 200);

    store.set_down(false);
    assert_eq!(app_client.get("/readyz").await.status, 200, "recovers when the database is back");
}

#[tokio::test]
async fn a_request_slower_than_the_timeout_gets_503() {
    let config = HttpConfig { request_timeout_ms: 100, ..HttpConfig::for_tests() };
    let store = Misbehaving { inner: MemoryStore::new(), delay: Duration::from_secs(5) };
    let app = TestApp::spawn(store, config).await;
    let started = std::time::Instant::now();
    assert_error(&app.get("/orders/1").await, 503, "unavailable");
    assert!(started.elapsed() < Duration::from_secs(3), "answered at the timeout, not after the store");
}

#[tokio::test]
async fn a_panicking_handler_gets_500_internal_and_the_service_lives_on() {
    let store = Misbehaving { inner: MemoryStore::new(), delay: Duration::ZERO };
    let app = TestApp::spawn(store, HttpConfig::for_tests()).await;
    let reply = app.get("/orders/13").await;
    assert_error(&reply, 500, "internal");
    assert_eq!(reply.json["error"]["message"], "internal error", "no internals in the message");
    assert_error(&app.get("/orders/14").await, 404, "not_found");
}

#[tokio::test]
async fn shutdown_lets_an_in_flight_request_finish_then_returns() {
    let store = Misbehaving { inner: MemoryStore::new(), delay: Duration::from_millis(500) };
    let config = HttpConfig::for_tests();
    let server = Server::bind(config.bind_addr, app(Arc::new(store), &config)).await.expect("bind");
    let client = TestApp::at(format!("http://{}", server.local_addr().expect("addr")));
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(server.run(
        async move {
            let _ = stopped.await;
        },
        Duration::from_secs(5),
    ));
    let in_flight = tokio::spawn(async move { client.get("/orders/1").await });
    tokio::time::sleep(Duration::from_millis(100)).await;
    stop.send(()).expect("signal shutdown");
    let reply = in_flight.await.expect("request task");
    assert_error(&reply, 404, "not_found");
    let finished = tokio::time::timeout(Duration::from_secs(3), serving).await;
    assert!(matches!(finished, Ok(Ok(Ok(())))), "server returned after draining: {finished:?}");
}
