//! How the HTTP layer behaves when things go wrong below it: a database that is down (503 with
//! Retry-After, readiness fails, liveness holds), a request slower than `REQUEST_TIMEOUT_MS`
//! (503), a write whose outcome is unknown (503 saying so), a panicking handler (500 "internal",
//! the process lives on), shed requests counted in `/metrics`, and SIGTERM-style shutdown that
//! lets an in-flight request finish, turns readiness to 503 and closes keep-alive connections
//! after their current response.

use orders_core::memory::MemoryStore;
use orders_core::{
    CustomerQuery, IdempotencyKey, KeyedInsert, OrderId, OrderJson, OrderListJson, OrderStore, OrderToStore,
    PoolStatus, ProductQuery, Returning, StatusChange, StoreError, Timestamp,
};
use orders_http::{HttpConfig, Server, app};
use orders_testkit::TestApp;
use orders_testkit::api::assert_error;
use std::sync::Arc;
use std::time::Duration;

/// The in-memory store, made slow (every `get` sleeps) or broken (`get` of id 13 panics; an
/// insert for customer 13 loses its answer).
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
    async fn insert(&self, order: &OrderToStore) -> Result<(), StoreError> {
        if order.order().customer.id.get() == 13 {
            return Err(StoreError::OutcomeUnknown("connection closed after the INSERT was sent".into()));
        }
        self.inner.insert(order).await
    }
    async fn insert_with_key(
        &self,
        order: &OrderToStore,
        key: &IdempotencyKey,
        print: i64,
    ) -> Result<KeyedInsert, StoreError> {
        self.inner.insert_with_key(order, key, print).await
    }
    async fn forget_key(&self, key: &IdempotencyKey, id: OrderId) -> Result<(), StoreError> {
        self.inner.forget_key(key, id).await
    }
    async fn update_status(
        &self,
        id: OrderId,
        change: StatusChange,
        now: Timestamp,
        returning: Returning,
    ) -> Result<Option<OrderJson>, StoreError> {
        self.inner.update_status(id, change, now, returning).await
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

#[tokio::test]
async fn a_write_with_an_unknown_outcome_is_503_and_says_so() {
    let store = Misbehaving { inner: MemoryStore::new(), delay: Duration::ZERO };
    let app = TestApp::spawn(store, HttpConfig::for_tests()).await;
    let reply = app.post_json("/orders", &orders_core::sample::order_body(13, [1, 2, 3])).await;
    assert_error(&reply, 503, "unavailable");
    assert_eq!(reply.headers["retry-after"], "1");
    let detail = reply.json["error"]["details"][0]["message"].as_str().unwrap_or("");
    assert!(
        detail.contains("outcome of this write is unknown") && detail.contains("Idempotency-Key"),
        "{}",
        reply.text
    );
    assert!(!reply.text.contains("INSERT"), "the cause is logged, not sent: {}", reply.text);
}

#[tokio::test]
async fn shed_requests_are_counted_by_reason_in_metrics() {
    let config = HttpConfig { request_timeout_ms: 50, ..HttpConfig::for_tests() };
    let store = Misbehaving { inner: MemoryStore::new(), delay: Duration::from_secs(5) };
    let app = TestApp::spawn(store, config).await;
    for _ in 0..2 {
        assert_error(&app.get("/orders/1").await, 503, "unavailable");
    }
    let metrics = app.get("/metrics").await.text;
    assert!(metrics.contains(r#"http_requests_shed_total{reason="request_timeout"} 2"#), "{metrics}");
    assert!(metrics.contains(r#"http_requests_shed_total{reason="database_unavailable"} 0"#), "{metrics}");
}

#[tokio::test]
async fn a_timed_out_write_says_its_outcome_is_unknown() {
    struct SlowWrites(MemoryStore);
    impl OrderStore for SlowWrites {
        fn backend(&self) -> &'static str {
            "slow writes"
        }
        async fn get(&self, id: OrderId) -> Result<OrderJson, StoreError> {
            self.0.get(id).await
        }
        async fn by_customer(&self, query: CustomerQuery) -> Result<OrderListJson, StoreError> {
            self.0.by_customer(query).await
        }
        async fn by_product(&self, query: ProductQuery) -> Result<OrderListJson, StoreError> {
            self.0.by_product(query).await
        }
        async fn insert(&self, _order: &OrderToStore) -> Result<(), StoreError> {
            tokio::time::sleep(Duration::from_secs(5)).await;
            Err(StoreError::Internal("never reached".into()))
        }
        async fn insert_with_key(
            &self,
            order: &OrderToStore,
            key: &IdempotencyKey,
            print: i64,
        ) -> Result<KeyedInsert, StoreError> {
            self.0.insert_with_key(order, key, print).await
        }
        async fn forget_key(&self, key: &IdempotencyKey, id: OrderId) -> Result<(), StoreError> {
            self.0.forget_key(key, id).await
        }
        async fn update_status(
            &self,
            id: OrderId,
            change: StatusChange,
            now: Timestamp,
            returning: Returning,
        ) -> Result<Option<OrderJson>, StoreError> {
            self.0.update_status(id, change, now, returning).await
        }
        async fn ready(&self) -> Result<(), StoreError> {
            self.0.ready().await
        }
        async fn diagnostics(&self) -> Result<serde_json::Value, StoreError> {
            self.0.diagnostics().await
        }
        fn pool_status(&self) -> PoolStatus {
            self.0.pool_status()
        }
    }
    let config = HttpConfig { request_timeout_ms: 50, ..HttpConfig::for_tests() };
    let app = TestApp::spawn(SlowWrites(MemoryStore::new()), config).await;
    let reply = app.post_json("/orders", &orders_core::sample::order_body(1, [1, 2, 3])).await;
    assert_error(&reply, 503, "unavailable");
    assert!(reply.text.contains("unknown"), "{}", reply.text);
    let read = app.get("/orders/1").await;
    assert_error(&read, 404, "not_found");
}

#[tokio::test]
async fn draining_turns_readiness_to_503_and_closes_keep_alive_connections_after_their_answer() {
    let store = Misbehaving { inner: MemoryStore::new(), delay: Duration::from_millis(600) };
    let config = HttpConfig::for_tests();
    let server = Server::bind(config.bind_addr, app(Arc::new(store), &config)).await.expect("bind");
    let base = format!("http://{}", server.local_addr().expect("addr"));
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(server.run(
        async move {
            let _ = stopped.await;
        },
        Duration::from_secs(5),
    ));
    // One idle keep-alive connection, and one request in flight when the signal comes.
    let idle = TestApp::at(base.clone());
    assert_eq!(idle.get("/readyz").await.status, 200);
    let busy = TestApp::at(base);
    let in_flight = tokio::spawn(async move { busy.get("/orders/1").await });
    tokio::time::sleep(Duration::from_millis(100)).await;
    stop.send(()).expect("signal shutdown");
    tokio::time::sleep(Duration::from_millis(100)).await;

    let readiness = idle.get("/readyz").await;
    assert_error(&readiness, 503, "unavailable");
    assert_eq!(readiness.headers["connection"], "close", "a keep-alive connection closes after its answer");
    let answered = in_flight.await.expect("request task");
    assert_error(&answered, 404, "not_found");
    assert_eq!(answered.headers["connection"], "close");
    let finished = tokio::time::timeout(Duration::from_secs(3), serving).await;
    assert!(matches!(finished, Ok(Ok(Ok(())))), "server returned after draining: {finished:?}");
}

#[tokio::test]
async fn connections_still_in_the_listen_backlog_at_the_signal_get_their_answers() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let config = HttpConfig::for_tests();
    let server = Server::bind(config.bind_addr, app(Arc::new(MemoryStore::new()), &config)).await.expect("bind");
    let addr = server.local_addr().expect("addr");
    // The kernel completes these handshakes, but nothing accepts them before the signal.
    let mut waiting = Vec::new();
    for _ in 0..20 {
        let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
        stream.write_all(b"GET /healthz HTTP/1.1\r\nHost: test\r\n\r\n").await.expect("send");
        waiting.push(stream);
    }
    let serving = tokio::spawn(server.run(std::future::ready(()), Duration::from_secs(5)));
    for mut stream in waiting {
        let mut answer = String::new();
        let read = tokio::time::timeout(Duration::from_secs(5), stream.read_to_string(&mut answer)).await;
        assert!(matches!(read, Ok(Ok(_))), "the connection was answered and closed, not reset: {read:?}");
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        assert!(answer.to_ascii_lowercase().contains("connection: close"), "{answer}");
    }
    let finished = tokio::time::timeout(Duration::from_secs(3), serving).await;
    assert!(matches!(finished, Ok(Ok(Ok(())))), "server returned after draining: {finished:?}");
}
