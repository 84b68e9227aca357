//! The API contract: the HTTP behaviour of docs/api.md, checked through real HTTP on a running service.
//! `api_contract_tests!(spawn_app)` expands to one `#[tokio::test]` per check; the same checks
//! run against the in-memory store (HTTP layer), `orders-pg` and `orders-mongo` (end to end).
//! Checks use random customer, product and order ids, so they may share one database.

use crate::client::{Reply, TestApp};
use futures_util::future::join_all;
use orders_core::sample::{order_body, order_body_total};
use reqwest::Method;
use serde_json::{Value, json};
use std::hash::{BuildHasher, RandomState};

/// Expands to the whole API contract for one way of starting a service.
#[macro_export]
macro_rules! api_contract_tests {
    ($spawn_app:path) => {
        $crate::api_contract_tests!(@tests $spawn_app;
            create_returns_201_with_location_and_computed_fields,
            create_with_a_taken_id_is_409_and_changes_nothing,
            get_by_id_and_its_path_errors,
            customer_orders_page_newest_first,
            customer_list_parameters_are_checked,
            product_orders_contain_the_product,
            status_update_and_its_preconditions,
            status_update_checks_body_then_existence_then_from,
            malformed_json_is_400,
            content_type_must_be_json,
            bodies_over_the_limit_are_413,
            bad_fields_are_422_with_one_detail_each,
            thousands_of_bad_fields_list_the_first_hundred_and_say_how_many_more,
            operator_objects_where_an_id_belongs_are_422,
            unknown_paths_and_methods_use_the_error_shape,
            operational_endpoints_answer,
            prefer_return_minimal_answers_without_a_body,
            an_idempotency_key_replays_the_original_201,
            concurrent_retries_with_one_key_make_one_order,
            metrics_count_shed_requests_by_reason,
            signed_numbers_are_400_and_echoed_text_is_bounded,
            large_lists_are_cut_at_max_list_bytes_and_say_so,
        );
    };
    (@tests $spawn_app:path; $($name:ident),* $(,)?) => {
        $(
            #[tokio::test]
            async fn $name() {
                let app = $spawn_app().await;
                $crate::api::$name(&app).await;
            }
        )*
    };
}

/// A random id in 1..2^52, different in every call and every test process.
pub fn random_id() -> u64 {
    let hash = RandomState::new().hash_one((std::process::id(), std::time::Instant::now()));
    hash % (1 << 52) + 1
}

/// Asserts the error shape of docs/api.md and the expected status and code.
pub fn assert_error(reply: &Reply, status: u16, code: &str) {
    assert_eq!(reply.status, status, "status of {}", reply.text);
    assert_eq!(reply.error_code(), code, "code of {}", reply.text);
    assert!(reply.json["error"]["message"].is_string(), "message in {}", reply.text);
    assert!(reply.json["error"]["details"].is_array(), "details list in {}", reply.text);
}

fn detail_fields(reply: &Reply) -> Vec<String> {
    reply.json["error"]["details"]
        .as_array()
        .map(|details| details.iter().map(|d| d["field"].as_str().unwrap_or("").to_owned()).collect())
        .unwrap_or_default()
}

fn ids(reply: &Reply) -> Vec<u64> {
    reply.json["orders"]
        .as_array()
        .map(|orders| orders.iter().filter_map(|o| o["id"].as_u64()).collect())
        .unwrap_or_default()
}

async fn create(app: &TestApp, body: &Value) -> Value {
    let reply = app.post_json("/orders", body).await;
    assert_eq!(reply.status, 201, "create: {}", reply.text);
    reply.json
}

pub async fn create_returns_201_with_location_and_computed_fields(app: &TestApp) {
    let customer = random_id();
    let mut body = order_body(customer, [random_id(), random_id(), random_id()]);
    body["note"] = json!("leave at the door");
    let reply = app.post_json("/orders", &body).await;
    assert_eq!(reply.status, 201, "{}", reply.text);
    let order = &reply.json;
    let id = order["id"].as_u64().expect("assigned id");
    assert!(id <= 9_007_199_254_740_991);
    assert_eq!(reply.headers["location"], format!("/orders/{id}").as_str());
    assert_eq!(order["status"], "pending");
    assert_eq!(order["total_cents"], json!(order_body_total(&body)));
    assert_eq!(order["created_at"], order["updated_at"]);
    let created = order["created_at"].as_str().expect("timestamp");
    assert!(created.len() == 24 && created.ends_with('Z'), "RFC 3339 with milliseconds: {created}");
    for field in ["customer", "items", "currency", "shipping", "note"] {
        assert_eq!(order[field], body[field], "{field} is stored as sent");
    }
    let fetched = app.get(&format!("/orders/{id}")).await;
    assert_eq!(fetched.status, 200);
    assert_eq!(&fetched.json, order);

    let second = create(app, &order_body(customer, [1, 2, 3])).await;
    assert!(second["id"].as_u64().expect("id") > id, "assigned ids are time-ordered");
}

pub async fn create_with_a_taken_id_is_409_and_changes_nothing(app: &TestApp) {
    let id = random_id();
    let mut body = order_body(random_id(), [1, 2, 3]);
    body["id"] = json!(id);
    body["status"] = json!("paid");
    let original = create(app, &body).await;
    assert_eq!(original["id"], json!(id));
    assert_eq!(original["status"], "paid");
    let mut intruder = order_body(random_id(), [4, 5, 6]);
    intruder["id"] = json!(id);
    assert_error(&app.post_json("/orders", &intruder).await, 409, "conflict");
    assert_eq!(app.get(&format!("/orders/{id}")).await.json, original);
}

pub async fn get_by_id_and_its_path_errors(app: &TestApp) {
    assert_error(&app.get(&format!("/orders/{}", random_id())).await, 404, "not_found");
    for bad in ["abc", "0", "-1", "1.5", "9007199254740992", "%7B%22%24gt%22%3A0%7D"] {
        assert_error(&app.get(&format!("/orders/{bad}")).await, 400, "bad_request");
    }
}

pub async fn customer_orders_page_newest_first(app: &TestApp) {
    let customer = random_id();
    let base = random_id();
    for offset in [3, 1, 4, 0, 2] {
        let mut body = order_body(customer, [1, 2, 3]);
        body["id"] = json!(base + offset);
        create(app, &body).await;
    }
    let list = |query: String| async move { app.get(&format!("/customers/{customer}/orders{query}")).await };
    assert_eq!(ids(&list(String::new()).await), [base + 4, base + 3, base + 2, base + 1, base]);
    assert_eq!(ids(&list("?limit=2".into()).await), [base + 4, base + 3]);
    assert_eq!(ids(&list(format!("?limit=2&before_id={}", base + 3)).await), [base + 2, base + 1]);
    assert_eq!(ids(&list(format!("?before_id={base}&unknown=1")).await), Vec::<u64>::new());
    let empty = app.get(&format!("/customers/{}/orders", random_id())).await;
    assert_eq!((empty.status, empty.json.clone()), (200, json!({"orders": []})));
}

pub async fn customer_list_parameters_are_checked(app: &TestApp) {
    for query in ["limit=0", "limit=101", "limit=abc", "limit=", "limit=-1", "before_id=0", "before_id=x"] {
        assert_error(&app.get(&format!("/customers/1/orders?{query}")).await, 400, "bad_request");
    }
    assert_error(&app.get("/customers/0/orders").await, 400, "bad_request");
    assert_error(&app.get("/customers/abc/orders").await, 400, "bad_request");
    assert_eq!(app.get("/customers/1/orders?limit=100").await.status, 200);
    assert_eq!(app.get("/customers/1/orders?limit=1&foo=bar").await.status, 200, "unknown parameters are ignored");
}

/// Ids and limits are plain digits: a `+` (sent as `%2B`; a bare `+` in a query is a space) is a
/// 400 like any other malformed number. A client's text repeated in an error (a path id, a query
/// value, an unknown key) is cut to 64 characters and an ellipsis.
pub async fn signed_numbers_are_400_and_echoed_text_is_bounded(app: &TestApp) {
    for path in ["/customers/1/orders?limit=%2B5", "/customers/1/orders?limit=+5", "/products/1/orders?limit=%2B5"] {
        assert_error(&app.get(path).await, 400, "bad_request");
    }
    for path in ["/customers/1/orders?before_id=%2B5", "/orders/%2B5", "/orders/+5", "/customers/%2B5/orders"] {
        assert_error(&app.get(path).await, 400, "bad_request");
    }
    let long = "9".repeat(5000);
    for path in [format!("/orders/{long}"), format!("/customers/1/orders?limit={long}x"), format!("/orders/{long}x")] {
        let reply = app.get(&path).await;
        assert_error(&reply, 400, "bad_request");
        let message = reply.json["error"]["message"].as_str().unwrap_or("");
        assert!(message.chars().count() < 160 && message.contains("…"), "{path}: {message}");
    }
    let key = "k".repeat(5000);
    let mut body = order_body(7, [1, 2, 3]);
    body["customer"][key.as_str()] = json!(1);
    let reply = app.post_json("/orders", &body).await;
    assert_error(&reply, 422, "validation_failed");
    let field = reply.json["error"]["details"][0]["field"].as_str().unwrap_or("");
    assert!(field.starts_with("customer.kkk") && field.ends_with('…') && field.chars().count() == 65, "{field}");
    assert!(reply.text.len() < 1000, "{}", reply.text);
}

pub async fn product_orders_contain_the_product(app: &TestApp) {
    let product = random_id();
    let mut created = Vec::new();
    for _ in 0..12 {
        created.push(create(app, &order_body(random_id(), [random_id(), product, random_id()])).await["id"].clone());
    }
    let default_page = app.get(&format!("/products/{product}/orders")).await;
    assert_eq!(default_page.status, 200);
    assert_eq!(ids(&default_page).len(), 10, "default limit is 10");
    let all = app.get(&format!("/products/{product}/orders?limit=100")).await;
    let mut found = ids(&all);
    found.sort_unstable();
    let mut expected: Vec<u64> = created.iter().filter_map(Value::as_u64).collect();
    expected.sort_unstable();
    assert_eq!(found, expected);
    assert_eq!(ids(&app.get(&format!("/products/{}/orders", random_id())).await), Vec::<u64>::new());
    assert_error(&app.get("/products/0/orders").await, 400, "bad_request");
    assert_error(&app.get(&format!("/products/{product}/orders?limit=101")).await, 400, "bad_request");
}

/// With the default `MAX_LIST_BYTES` (4 MiB), 18 orders with a note of 256 KiB (the largest
/// allowed) are listed 15 at a time: the list stops before its compact JSON passes the bound,
/// says so with `List-Truncated: true`, and the customer list continues with `before_id` from the
/// last id listed. A list that is not cut has no such header.
pub async fn large_lists_are_cut_at_max_list_bytes_and_say_so(app: &TestApp) {
    const MAX_LIST_BYTES: usize = 4 << 20;
    let (customer, product) = (random_id(), random_id());
    let mut created = Vec::new();
    for _ in 0..18 {
        let mut body = order_body(customer, [product, 1, 2]);
        body["note"] = json!("n".repeat(262_144));
        created.push(create(app, &body).await["id"].as_u64().expect("id"));
    }
    created.sort_unstable_by(|a, b| b.cmp(a));
    let compact_len = |reply: &Reply| serde_json::to_vec(&reply.json).expect("serialise").len();
    let truncated = |reply: &Reply| reply.headers.get("list-truncated").map(|value| value.as_bytes().to_vec());
    let (mut listed, mut before) = (Vec::new(), String::new());
    for expected_cut in [true, false] {
        let page = app.get(&format!("/customers/{customer}/orders?limit=100{before}")).await;
        assert_eq!(page.status, 200, "{}", page.text);
        assert!(compact_len(&page) <= MAX_LIST_BYTES, "{} bytes", compact_len(&page));
        assert_eq!(truncated(&page), expected_cut.then(|| b"true".to_vec()), "{:?}", ids(&page));
        listed.extend(ids(&page));
        before = format!("&before_id={}", listed.last().expect("an order"));
    }
    assert_eq!(listed, created, "two pages list every order once, newest first");
    let product_page = app.get(&format!("/products/{product}/orders?limit=100")).await;
    assert_eq!((product_page.status, ids(&product_page).len()), (200, 15), "{}", product_page.text.len());
    assert_eq!(truncated(&product_page), Some(b"true".to_vec()));
    let small = app.get(&format!("/products/{product}/orders?limit=3")).await;
    assert_eq!((ids(&small).len(), truncated(&small)), (3, None), "the limit is not a cut");
}

pub async fn status_update_and_its_preconditions(app: &TestApp) {
    let order = create(app, &order_body(random_id(), [1, 2, 3])).await;
    let path = format!("/orders/{}/status", order["id"]);
    let shipped = app.patch_json(&path, &json!({"status": "shipped"})).await;
    assert_eq!(shipped.status, 200, "{}", shipped.text);
    assert_eq!(shipped.json["status"], "shipped");
    assert_eq!(shipped.json["created_at"], order["created_at"]);
    assert!(shipped.json["updated_at"].as_str() >= order["updated_at"].as_str());
    assert_error(&app.patch_json(&path, &json!({"status": "delivered", "from": "paid"})).await, 409, "conflict");
    assert_eq!(app.get(&format!("/orders/{}", order["id"])).await.json["status"], "shipped", "409 changes nothing");
    let delivered = app.patch_json(&path, &json!({"status": "delivered", "from": "shipped"})).await;
    assert_eq!((delivered.status, delivered.json["status"].clone()), (200, json!("delivered")));
    let back = app.patch_json(&path, &json!({"status": "pending"})).await;
    assert_eq!(back.status, 200, "any status may follow any other");
}

pub async fn status_update_checks_body_then_existence_then_from(app: &TestApp) {
    let missing = format!("/orders/{}/status", random_id());
    assert_error(&app.patch_json(&missing, &json!({"status": "lost"})).await, 422, "validation_failed");
    assert_error(&app.patch_json(&missing, &json!({"status": "paid", "from": "pending"})).await, 404, "not_found");
    assert_error(&app.patch_json(&missing, &json!({"status": "paid"})).await, 404, "not_found");
    assert_error(&app.patch_json("/orders/0/status", &json!({"status": "paid"})).await, 400, "bad_request");
    let reply = app.patch_json(&missing, &json!({"status": "paid", "from": "nope", "extra": 1})).await;
    assert_error(&reply, 422, "validation_failed");
    assert_eq!(detail_fields(&reply), ["extra", "from"]);
}

pub async fn malformed_json_is_400(app: &TestApp) {
    for body in [&b"{"[..], b"not json", br#"{"customer": }"#, br#"{"note":"\ud800"}"#, b"", b"{} []"] {
        let reply = app.send(Method::POST, "/orders", Some("application/json"), body.to_vec()).await;
        assert_error(&reply, 400, "bad_request");
    }
    let reply = app.send(Method::PATCH, "/orders/1/status", Some("application/json"), b"[".to_vec()).await;
    assert_error(&reply, 400, "bad_request");
}

pub async fn content_type_must_be_json(app: &TestApp) {
    let body = order_body(random_id(), [1, 2, 3]).to_string().into_bytes();
    for content_type in [None, Some("text/plain"), Some("application/x-www-form-urlencoded"), Some("application/xml")] {
        let reply = app.send(Method::POST, "/orders", content_type, body.clone()).await;
        assert_error(&reply, 415, "unsupported_media_type");
    }
    for content_type in ["application/json; charset=utf-8", "application/vnd.orders+json"] {
        let reply = app.send(Method::POST, "/orders", Some(content_type), body.clone()).await;
        assert_eq!(reply.status, 201, "{content_type}: {}", reply.text);
    }
    let patch = app.send(Method::PATCH, "/orders/1/status", Some("text/plain"), br#"{"status":"paid"}"#.to_vec()).await;
    assert_error(&patch, 415, "unsupported_media_type");
}

pub async fn bodies_over_the_limit_are_413(app: &TestApp) {
    let mut body = order_body(random_id(), [1, 2, 3]);
    body["note"] = json!("x".repeat(1_100_000));
    assert_error(&app.post_json("/orders", &body).await, 413, "payload_too_large");
}

pub async fn bad_fields_are_422_with_one_detail_each(app: &TestApp) {
    let customer = random_id();
    let mut body = order_body(customer, [1, 2, 3]);
    body["items"][1]["quantity"] = json!(0);
    body["shipping"]["city"] = json!("Ber\u{0}lin");
    body["currency"] = json!("eur");
    body["surprise"] = json!(1);
    body["note"] = json!("x".repeat(262_145));
    let reply = app.post_json("/orders", &body).await;
    assert_error(&reply, 422, "validation_failed");
    let mut fields = detail_fields(&reply);
    fields.sort();
    assert_eq!(fields, ["currency", "items[1].quantity", "note", "shipping.city", "surprise"]);
    let mut duplicate = order_body(customer, [1, 2, 3]).to_string();
    duplicate.insert_str(1, r#""currency":"USD","#);
    let reply = app.send(Method::POST, "/orders", Some("application/json"), duplicate.into_bytes()).await;
    assert_error(&reply, 422, "validation_failed");
    assert_eq!(detail_fields(&reply), ["currency"]);
    let missing = app.post_json("/orders", &json!({})).await;
    assert_eq!(detail_fields(&missing), ["customer", "items", "currency", "shipping"]);
    assert_error(&app.post_json("/orders", &json!([])).await, 422, "validation_failed");
    assert_eq!(ids(&app.get(&format!("/customers/{customer}/orders")).await), Vec::<u64>::new(), "nothing stored");
}

pub async fn thousands_of_bad_fields_list_the_first_hundred_and_say_how_many_more(app: &TestApp) {
    let unknown: Vec<String> = (0..5000).map(|i| format!(r#""u{i}":0"#)).collect();
    let body = format!("{{{}}}", unknown.join(","));
    let reply = app.send(Method::POST, "/orders", Some("application/json"), body.into_bytes()).await;
    assert_error(&reply, 422, "validation_failed");
    let details = reply.json["error"]["details"].as_array().expect("details");
    assert_eq!(details.len(), 101, "{}", reply.text);
    assert_eq!(details[0], json!({"field": "u0", "message": "unknown field"}));
    assert_eq!(details[99]["field"], "u99");
    // 5000 unknown, then customer, items, currency and shipping missing: 5004, 100 listed.
    assert_eq!(details[100]["field"], "body");
    assert!(details[100]["message"].as_str().is_some_and(|m| m.starts_with("4904 more bad fields")), "{}", reply.text);
}

pub async fn operator_objects_where_an_id_belongs_are_422(app: &TestApp) {
    let mut body = order_body(random_id(), [1, 2, 3]);
    body["customer"]["id"] = json!({"$gt": 0});
    body["items"][0]["product_id"] = json!({"$ne": null});
    body["id"] = json!("1; DROP TABLE orders");
    let reply = app.post_json("/orders", &body).await;
    assert_error(&reply, 422, "validation_failed");
    assert_eq!(detail_fields(&reply), ["id", "customer.id", "items[0].product_id"]);
    let status = app.patch_json("/orders/1/status", &json!({"status": {"$set": "paid"}})).await;
    assert_error(&status, 422, "validation_failed");
}

pub async fn unknown_paths_and_methods_use_the_error_shape(app: &TestApp) {
    assert_error(&app.get("/nope").await, 404, "not_found");
    assert_error(&app.send(Method::DELETE, "/orders/1", None, Vec::new()).await, 405, "method_not_allowed");
    assert_error(&app.send(Method::PUT, "/orders", None, Vec::new()).await, 405, "method_not_allowed");
    assert_error(&app.send(Method::GET, "/orders/1/status", None, Vec::new()).await, 405, "method_not_allowed");
}

pub async fn operational_endpoints_answer(app: &TestApp) {
    assert_eq!(app.get("/healthz").await.status, 200);
    assert_eq!(app.get("/readyz").await.status, 200);
    let _ = app.get("/orders/1").await;
    let metrics = app.get("/metrics").await;
    assert_eq!(metrics.status, 200);
    assert!(
        metrics.text.contains(r#"http_request_duration_seconds_bucket{route="/orders/{id}",method="GET""#),
        "{}",
        metrics.text
    );
    assert!(metrics.text.contains("db_pool_size"));
    let openapi = app.get("/openapi.json").await;
    assert_eq!(openapi.status, 200);
    assert_eq!(openapi.json["openapi"], "3.0.3");
    let diagnostics = app.get("/diagnostics").await;
    assert_eq!(diagnostics.status, 200, "{}", diagnostics.text);
    assert!(diagnostics.json["backend"].is_string());
    assert!(diagnostics.json["pool"]["max_size"].is_u64());
    let runtime = &diagnostics.json["runtime"];
    assert!(matches!(runtime["flavor"].as_str(), Some("current_thread" | "multi_thread")), "{runtime}");
    assert!(runtime["worker_threads"].as_u64() >= Some(1), "{runtime}");
}

const MINIMAL: (&str, &str) = ("prefer", "return=minimal");

pub async fn prefer_return_minimal_answers_without_a_body(app: &TestApp) {
    let body = order_body(random_id(), [1, 2, 3]);
    let created = app.json_with(Method::POST, "/orders", &[MINIMAL], &body).await;
    assert_eq!(created.status, 201, "{}", created.text);
    assert_eq!(created.text, "", "no body with return=minimal");
    assert_eq!(created.headers["preference-applied"], "return=minimal");
    let location = created.headers["location"].to_str().expect("location").to_owned();
    let stored = app.get(&location).await;
    assert_eq!((stored.status, stored.json["status"].clone()), (200, json!("pending")), "{}", stored.text);

    let status = format!("{location}/status");
    let patched = app
        .json_with(
            Method::PATCH,
            &status,
            &[("prefer", "respond-async, return=minimal")],
            &json!({"status": "paid", "from": "pending"}),
        )
        .await;
    assert_eq!((patched.status, patched.text.as_str()), (204, ""));
    assert_eq!(patched.headers["preference-applied"], "return=minimal");
    let after = app.get(&location).await.json;
    assert_eq!(after["status"], "paid");
    assert!(after["updated_at"].as_str() >= stored.json["updated_at"].as_str());

    let conflict =
        app.json_with(Method::PATCH, &status, &[MINIMAL], &json!({"status": "shipped", "from": "pending"})).await;
    assert_error(&conflict, 409, "conflict");
    assert!(!conflict.headers.contains_key("preference-applied"), "errors keep their body");
    let missing = format!("/orders/{}/status", random_id());
    assert_error(
        &app.json_with(Method::PATCH, &missing, &[MINIMAL], &json!({"status": "paid"})).await,
        404,
        "not_found",
    );

    let full = app.json_with(Method::POST, "/orders", &[("prefer", "return=representation")], &body).await;
    assert_eq!(full.status, 201);
    assert!(full.json["id"].is_u64(), "return=representation is the default answer: {}", full.text);
    assert!(!full.headers.contains_key("preference-applied"));
    let patched = app
        .json_with(Method::PATCH, &format!("/orders/{}/status", full.json["id"]), &[], &json!({"status": "paid"}))
        .await;
    assert_eq!((patched.status, patched.json["status"].clone()), (200, json!("paid")));
}

pub async fn an_idempotency_key_replays_the_original_201(app: &TestApp) {
    let customer = random_id();
    let key = format!("key-{}", random_id());
    let body = order_body(customer, [1, 2, 3]);
    let with_key = |headers: &'static [(&'static str, &'static str)]| {
        let mut all = headers.to_vec();
        all.push(("idempotency-key", key.as_str()));
        all
    };
    let first = app.json_with(Method::POST, "/orders", &with_key(&[]), &body).await;
    assert_eq!(first.status, 201, "{}", first.text);
    assert!(first.json.get("idempotency_key").is_none(), "the key is not part of the order: {}", first.text);
    let again = app.json_with(Method::POST, "/orders", &with_key(&[]), &body).await;
    assert_eq!((again.status, &again.json), (201, &first.json), "the same key and body get the original answer");
    assert_eq!(again.headers["location"], first.headers["location"]);

    let id = first.json["id"].as_u64().expect("id");
    let shipped = app.patch_json(&format!("/orders/{id}/status"), &json!({"status": "shipped"})).await;
    assert_eq!(shipped.status, 200);
    let later = app.json_with(Method::POST, "/orders", &with_key(&[]), &body).await;
    assert_eq!((later.status, &later.json), (201, &first.json), "the original 201, even after a status change");
    let minimal = app.json_with(Method::POST, "/orders", &with_key(&[MINIMAL]), &body).await;
    assert_eq!((minimal.status, minimal.text.as_str()), (201, ""));
    assert_eq!(minimal.headers["location"], first.headers["location"]);
    assert_eq!(app.get(&format!("/orders/{id}")).await.json["status"], "shipped", "a replay writes nothing");

    let mut changed = body.clone();
    changed["items"][0]["quantity"] = json!(9);
    let reused = app.json_with(Method::POST, "/orders", &with_key(&[]), &changed).await;
    assert_error(&reused, 422, "validation_failed");
    assert_eq!(detail_fields(&reused), ["Idempotency-Key"]);
    assert_eq!(ids(&app.get(&format!("/customers/{customer}/orders")).await), [id], "still one order");

    for bad in ["two words", &"k".repeat(256)] {
        let reply = app.json_with(Method::POST, "/orders", &[("idempotency-key", bad)], &body).await;
        assert_error(&reply, 400, "bad_request");
    }
    let twice =
        app.json_with(Method::POST, "/orders", &[("idempotency-key", "a"), ("idempotency-key", "b")], &body).await;
    assert_error(&twice, 400, "bad_request");
    let without = create(app, &body).await;
    assert_ne!(without["id"], first.json["id"], "without a key every POST is a new order");
}

pub async fn concurrent_retries_with_one_key_make_one_order(app: &TestApp) {
    let customer = random_id();
    let key = format!("key-{}", random_id());
    let body = order_body(customer, [4, 5, 6]);
    let headers = [("idempotency-key", key.as_str())];
    let replies = join_all((0..8).map(|_| app.json_with(Method::POST, "/orders", &headers, &body))).await;
    for reply in &replies {
        assert_eq!(reply.status, 201, "{}", reply.text);
        assert_eq!(reply.json, replies[0].json, "every retry answers the same order");
    }
    assert_eq!(ids(&app.get(&format!("/customers/{customer}/orders")).await).len(), 1, "one order");
}

pub async fn metrics_count_shed_requests_by_reason(app: &TestApp) {
    let metrics = app.get("/metrics").await;
    for reason in ["database_unavailable", "pool_timeout", "request_timeout", "shutting_down", "in_flight_limit"] {
        let series = format!(r#"http_requests_shed_total{{reason="{reason}"}} "#);
        assert!(metrics.text.contains(&series), "{series} in {}", metrics.text);
    }
}
