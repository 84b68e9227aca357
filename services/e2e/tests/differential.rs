//! The differential test: `orders-pg`, `orders-pg-hybrid` and `orders-mongo` over real databases,
//! sent the same long, seeded sequence of requests (creates with and without ids, duplicates,
//! reads, lists, status changes with and without `from`, bad input of every kind). All must answer
//! with the same status and semantically equal JSON, ignoring only server-assigned ids and write
//! timestamps; product lists are compared as sets. A difference is a bug in one of the services.

use orders_http::HttpConfig;
use orders_mongo::{MongoConfig, MongoStore};
use orders_pg::{PgConfig, PgStore};
use orders_pg_hybrid::HybridStore;
use orders_testkit::{Reply, TestApp};
use reqwest::Method;
use serde_json::{Value, json};
use std::collections::HashMap;

/// splitmix64: a tiny deterministic generator, so a failing sequence can be replayed by seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }
}

const STATUSES: [&str; 5] = ["pending", "paid", "shipped", "delivered", "cancelled"];
const EXPLICIT_IDS: u64 = 40;
const CUSTOMERS: u64 = 6;
const PRODUCTS: u64 = 10;

/// One service under test and what it assigned: its own id for each order it numbered.
struct Target {
    name: &'static str,
    app: TestApp,
    /// Server-assigned id -> the position of the create that got it (same on every service).
    assigned: HashMap<u64, usize>,
    /// Position -> server-assigned id.
    by_position: Vec<u64>,
}

impl Target {
    fn new(name: &'static str, app: TestApp) -> Self {
        Self { name, app, assigned: HashMap::new(), by_position: Vec::new() }
    }

    /// The reply with assigned ids replaced by `"assigned#N"` and timestamps removed.
    fn normalize(&self, value: &Value) -> Value {
        match value {
            Value::Object(map) => Value::Object(
                map.iter()
                    .filter(|(key, _)| *key != "created_at" && *key != "updated_at")
                    .map(|(key, value)| (key.clone(), self.normalize(value)))
                    .collect(),
            ),
            Value::Array(items) => Value::Array(items.iter().map(|item| self.normalize(item)).collect()),
            Value::Number(n) => match n.as_u64().and_then(|id| self.assigned.get(&id)) {
                Some(position) => json!(format!("assigned#{position}")),
                None => value.clone(),
            },
            Value::String(text) => {
                let mut text = text.clone();
                for (id, position) in &self.assigned {
                    text = text.replace(&id.to_string(), &format!("assigned#{position}"));
                }
                Value::String(text)
            }
            other => other.clone(),
        }
    }
}

/// A request in terms every service understands: `Assigned(n)` is the n-th server-assigned id.
#[derive(Debug, Clone, Copy)]
enum OrderRef {
    Explicit(u64),
    Assigned(usize),
}

#[derive(Debug)]
struct Step {
    method: Method,
    /// Path with `{id}` standing for the order reference, if any.
    path: String,
    order: Option<OrderRef>,
    content_type: Option<&'static str>,
    body: Vec<u8>,
    /// Product searches with a limit below the number of matches may return different subsets.
    compare_as_set: bool,
    creates_with_assigned_id: bool,
}

fn step(method: Method, path: String) -> Step {
    Step {
        method,
        path,
        order: None,
        content_type: None,
        body: Vec::new(),
        compare_as_set: false,
        creates_with_assigned_id: false,
    }
}

fn json_step(method: Method, path: String, body: &Value) -> Step {
    Step { content_type: Some("application/json"), body: body.to_string().into_bytes(), ..step(method, path) }
}

fn order_body(rng: &mut Rng) -> Value {
    let items: Vec<Value> = (0..1 + rng.below(4))
        .map(|n| {
            let product = 1 + rng.below(PRODUCTS);
            json!({"product_id": product, "sku": format!("SKU-{product}-{n}"), "name": format!("Product {product}"),
                   "quantity": 1 + rng.below(5), "unit_price_cents": rng.below(50_000)})
        })
        .collect();
    let customer = 1 + rng.below(CUSTOMERS);
    let mut body = json!({
        "customer": {"id": customer, "name": format!("Customer {customer} ✓"), "email": format!("c{customer}@example.com")},
        "items": items,
        "currency": *rng.pick(&["EUR", "USD"]),
        "shipping": {"street": "Main Street 1", "city": "Köln", "postal_code": "50667", "country": "DE"},
    });
    if rng.chance(30) {
        body["note"] = json!("n".repeat(rng.below(2000) as usize));
    }
    if rng.chance(30) {
        body["status"] = json!(*rng.pick(&STATUSES));
    }
    body
}

/// Bad input of every kind docs/api.md names.
fn bad_step(rng: &mut Rng) -> Step {
    let mut body = order_body(rng);
    match rng.below(12) {
        0 => Step { body: b"{\"customer\":".to_vec(), ..json_step(Method::POST, "/orders".into(), &json!({})) },
        1 => Step { content_type: Some("text/plain"), ..json_step(Method::POST, "/orders".into(), &body) },
        2 => {
            body["customer"]["id"] = json!({"$gt": 0});
            json_step(Method::POST, "/orders".into(), &body)
        }
        3 => {
            body["items"][0]["name"] = json!("nul\u{0}byte");
            body["unknown"] = json!(true);
            json_step(Method::POST, "/orders".into(), &body)
        }
        4 => {
            body["items"][0]["quantity"] = json!(0);
            body["currency"] = json!("euro");
            json_step(Method::POST, "/orders".into(), &body)
        }
        5 => step(Method::GET, "/orders/abc".into()),
        6 => step(Method::GET, format!("/customers/1/orders?limit={}", *rng.pick(&["0", "101", "x"]))),
        7 => step(Method::DELETE, "/orders/1".into()),
        8 => json_step(Method::PATCH, "/orders/1/status".into(), &json!({"status": "lost"})),
        9 => Step { body: br#"{"note":"\udc00"}"#.to_vec(), ..json_step(Method::POST, "/orders".into(), &json!({})) },
        10 => {
            body["note"] = json!("x".repeat(1_100_000));
            json_step(Method::POST, "/orders".into(), &body)
        }
        _ => step(Method::GET, "/products/0/orders".into()),
    }
}

fn random_ref(rng: &mut Rng, assigned_so_far: usize) -> OrderRef {
    if assigned_so_far > 0 && rng.chance(40) {
        OrderRef::Assigned(rng.below(assigned_so_far as u64) as usize)
    } else {
        OrderRef::Explicit(1 + rng.below(EXPLICIT_IDS))
    }
}

fn next_step(rng: &mut Rng, assigned_so_far: usize) -> Step {
    match rng.below(100) {
        0..=14 => {
            let mut body = order_body(rng);
            body["id"] = json!(1 + rng.below(EXPLICIT_IDS));
            json_step(Method::POST, "/orders".into(), &body)
        }
        15..=24 => {
            Step { creates_with_assigned_id: true, ..json_step(Method::POST, "/orders".into(), &order_body(rng)) }
        }
        25..=39 => Step { order: Some(random_ref(rng, assigned_so_far)), ..step(Method::GET, "/orders/{id}".into()) },
        40..=51 => {
            let customer = 1 + rng.below(CUSTOMERS);
            let mut query = format!("?limit={}", 1 + rng.below(8));
            if rng.chance(40) {
                query.push_str(&format!("&before_id={}", 1 + rng.below(EXPLICIT_IDS)));
            }
            step(Method::GET, format!("/customers/{customer}/orders{query}"))
        }
        52..=61 => Step {
            compare_as_set: true,
            ..step(Method::GET, format!("/products/{}/orders?limit=100", 1 + rng.below(PRODUCTS + 2)))
        },
        62..=81 => {
            let mut change = json!({"status": *rng.pick(&STATUSES)});
            if rng.chance(50) {
                change["from"] = json!(*rng.pick(&STATUSES));
            }
            Step {
                order: Some(random_ref(rng, assigned_so_far)),
                ..json_step(Method::PATCH, "/orders/{id}/status".into(), &change)
            }
        }
        _ => bad_step(rng),
    }
}

async fn send(target: &Target, step: &Step) -> Reply {
    let id = match step.order {
        Some(OrderRef::Explicit(id)) => id.to_string(),
        Some(OrderRef::Assigned(position)) => target.by_position[position].to_string(),
        None => String::new(),
    };
    let path = step.path.replace("{id}", &id);
    target.app.send(step.method.clone(), &path, step.content_type, step.body.clone()).await
}

fn sorted_orders(value: &Value) -> Value {
    let mut orders = value["orders"].as_array().cloned().unwrap_or_default();
    orders.sort_by_key(|order| order.to_string());
    json!({ "orders": orders })
}

/// The reply as compared: normalized, and a product list sorted when the step says so.
fn comparable(target: &Target, step: &Step, reply: &Reply) -> Value {
    let normalized = target.normalize(&reply.json);
    if step.compare_as_set { sorted_orders(&normalized) } else { normalized }
}

#[tokio::test]
async fn every_service_answers_a_long_seeded_sequence_identically() {
    let seed: u64 = 20_261_130;
    let steps = 600;
    let pg = PgStore::connect(&PgConfig::with_url(orders_pg::testing::fresh_database().await)).await.expect("pg");
    let hybrid =
        HybridStore::connect(&PgConfig::with_url(orders_pg::testing::fresh_database().await)).await.expect("hybrid");
    let database = format!("orders_differential_{}", std::process::id());
    let mongo_uri = std::env::var("MONGODB_URI").unwrap_or_else(|_| "mongodb://127.0.0.1:57017".into());
    let mongo = MongoStore::connect(&MongoConfig::new(mongo_uri, database)).await.expect("mongo");
    let mongo_database = mongo.database().clone();
    // The first is the reference every other answer must equal.
    let mut targets = [
        Target::new("orders-pg", TestApp::spawn(pg, HttpConfig::for_tests()).await),
        Target::new("orders-pg-hybrid", TestApp::spawn(hybrid, HttpConfig::for_tests()).await),
        Target::new("orders-mongo", TestApp::spawn(mongo, HttpConfig::for_tests()).await),
    ];

    let mut rng = Rng(seed);
    let mut statuses: HashMap<u16, usize> = HashMap::new();
    for n in 0..steps {
        let step = next_step(&mut rng, targets[0].by_position.len());
        let mut replies = Vec::with_capacity(targets.len());
        for target in &targets {
            replies.push(send(target, &step).await);
        }
        let (reference, first) = (&targets[0], &replies[0]);
        for (target, reply) in targets.iter().zip(&replies).skip(1) {
            assert_eq!(
                first.status, reply.status,
                "step {n} {step:?}: {} {} vs {} {}",
                reference.name, first.text, target.name, reply.text
            );
        }
        *statuses.entry(first.status).or_default() += 1;
        if step.creates_with_assigned_id && first.status == 201 {
            for (target, reply) in targets.iter_mut().zip(&replies) {
                let id = reply.json["id"].as_u64().expect("assigned id");
                target.assigned.insert(id, target.by_position.len());
                target.by_position.push(id);
            }
        }
        let expected = comparable(&targets[0], &step, first);
        for (target, reply) in targets.iter().zip(&replies).skip(1) {
            let answer = comparable(target, &step, reply);
            assert_eq!(expected, answer, "step {n} {step:?}: {} vs {}", targets[0].name, target.name);
        }
    }
    let _ = mongo_database.drop().await;

    // The sequence must have exercised every outcome, or it proves little.
    for status in [200, 201, 400, 404, 405, 409, 413, 415, 422] {
        assert!(statuses.get(&status).copied().unwrap_or(0) > 0, "status {status} never seen: {statuses:?}");
    }
}
