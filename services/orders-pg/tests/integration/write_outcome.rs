//! Honest write outcomes (issue 45, point 3) on real PostgreSQL: the service's session is
//! terminated (`pg_terminate_backend`, `FATAL 57P01`) while its write waits for a lock the test
//! holds on `orders`. Once the write statement was sent, the answer must be the 503 "outcome
//! unknown" (a backend terminated while its commit waits for a synchronous standby has already
//! committed locally); a 503 that says nothing was written must really have written nothing.
//! orders-pg-hybrid's tests include this file too: `crate::connect_store` is each crate's store.

use orders_core::sample::order_body;
use orders_http::HttpConfig;
use orders_http::error::OUTCOME_UNKNOWN;
use orders_pg::PgConfig;
use orders_pg::config::StatementMode;
use orders_pg::testing::{OrdersLocked, fresh_database, terminate_when_blocked};
use orders_testkit::api::random_id;
use orders_testkit::{Reply, TestApp};
use serde_json::json;

/// The write's answer as the client reads it.
#[derive(Debug, PartialEq, Eq)]
enum Outcome {
    Unknown,
    NothingWritten,
    Other(u16),
}

fn outcome(reply: &Reply) -> Outcome {
    match (reply.status, reply.json["error"]["details"][0]["message"].as_str()) {
        (503, Some(OUTCOME_UNKNOWN)) => Outcome::Unknown,
        (503, _) => Outcome::NothingWritten,
        (status, _) => Outcome::Other(status),
    }
}

/// The service on a database of its own with one pooled connection named `application_name`.
async fn spawn(mode: StatementMode, application_name: &str) -> (TestApp, String) {
    let url = fresh_database().await;
    let mut config = PgConfig::with_url(format!("{url}?application_name={application_name}"));
    config.statement_mode = mode;
    config.pool_size = 1;
    let store = crate::connect_store(&config).await;
    (TestApp::spawn(store, HttpConfig::for_tests()).await, url)
}

/// Sends `write` (method, path, body) while the test locks `orders`, terminates the service's
/// session once it waits for the lock, releases the lock, and returns the answer with the
/// statement that was waiting.
async fn write_terminated(
    app: &TestApp,
    url: &str,
    application_name: &str,
    write: (&'static str, String, serde_json::Value),
) -> (Reply, String) {
    let lock = OrdersLocked::take(url).await;
    let request = tokio::spawn({
        let app = TestApp::at(app.base_url.clone());
        async move {
            match write.0 {
                "POST" => app.post_json(&write.1, &write.2).await,
                _ => app.patch_json(&write.1, &write.2).await,
            }
        }
    });
    // A request answered before it waited for the lock leaves nothing to terminate: this fails
    // after 10 s saying so.
    let statement = terminate_when_blocked(url, application_name).await;
    let reply = request.await.expect("the request task");
    lock.release().await;
    (reply, statement)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_whose_session_is_terminated_after_it_was_sent_answers_outcome_unknown() {
    let name = format!("outcome_test_{}", std::process::id());
    let (app, url) = spawn(StatementMode::Unprepared, &name).await;
    let existing = random_id();
    let mut body = order_body(7, [1, 2, 3]);
    body["id"] = json!(existing);
    assert_eq!(app.post_json("/orders", &body).await.status, 201);

    let new = random_id();
    body["id"] = json!(new);
    let writes = [
        ("POST", "/orders".to_owned(), body.clone()),
        ("PATCH", format!("/orders/{existing}/status"), json!({"status": "paid"})),
    ];
    for write in writes {
        let label = format!("{} {}", write.0, write.1);
        let (reply, statement) = write_terminated(&app, &url, &name, write).await;
        println!("{label}: terminated while running {statement:?}; answered {} {}", reply.status, reply.text);
        assert_eq!(outcome(&reply), Outcome::Unknown, "{label}: {}", reply.text);
        assert_eq!(reply.error_code(), "unavailable", "{label}");
        assert!(reply.headers.contains_key("retry-after"), "{label}");
    }
    // The service is back on a new connection, and the answers did not lie about the rows: the
    // terminated writes were rolled back with their sessions.
    assert_eq!(app.get(&format!("/orders/{new}")).await.status, 404);
    assert_eq!(app.get(&format!("/orders/{existing}")).await.json["status"], "pending");
}

/// Preparing a statement writes nothing: a session terminated while its write is being prepared
/// (the first use of the statement on that connection) is still the retryable "nothing was
/// written", and nothing was.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_terminated_while_being_prepared_answers_nothing_written_and_wrote_nothing() {
    let name = format!("prepare_test_{}", std::process::id());
    let (app, url) = spawn(StatementMode::Prepared, &name).await;
    let mut answered_nothing_written = Vec::new();
    for _ in 0..2 {
        let id = random_id();
        let mut body = order_body(7, [1, 2, 3]);
        body["id"] = json!(id);
        let (reply, statement) = write_terminated(&app, &url, &name, ("POST", "/orders".into(), body)).await;
        println!("POST /orders: terminated while running {statement:?}; answered {} {}", reply.status, reply.text);
        assert_ne!(outcome(&reply), Outcome::Other(reply.status), "{}", reply.text);
        if outcome(&reply) == Outcome::NothingWritten {
            answered_nothing_written.push(id);
        }
    }
    assert!(!answered_nothing_written.is_empty(), "a terminated prepare answers 'nothing was written'");
    let mut written = 0;
    for id in &answered_nothing_written {
        written += usize::from(app.get(&format!("/orders/{id}")).await.status == 200);
    }
    assert_eq!(written, 0, "rows written for requests answered 'nothing was written'");
}
