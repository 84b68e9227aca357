//! Against the replicated local stack (`infra/local/stack.sh start --replicas 3`, issue 42): an
//! order the service acknowledged (`POST /orders` through the real HTTP app, `w: majority, j:
//! true`) is on a majority of the replica set's members, read on each member over a direct
//! connection right after the 201; a write waits for that majority (with both secondaries
//! `fsyncLock`ed, no 201 until one is unlocked); and `/diagnostics` names the primary and what a
//! write waits for. Skipped, saying so, without `REPLICA_MONGODB_URI`.

use crate::common::unique_db_name;
use mongodb::Client;
use mongodb::bson::{Document, doc};
use orders_core::sample::order_body;
use orders_http::HttpConfig;
use orders_mongo::{MongoConfig, MongoStore};
use orders_testkit::TestApp;
use orders_testkit::api::random_id;
use serde_json::Value;
use std::time::Duration;

/// How long a write must stay unanswered while no secondary can write it (a warm `POST /orders`
/// answers in 5-30 ms on this stack).
const HELD: Duration = Duration::from_millis(1500);

fn replica_uri() -> Option<String> {
    let uri = std::env::var("REPLICA_MONGODB_URI").ok().filter(|uri| !uri.is_empty());
    if uri.is_none() {
        eprintln!(
            "SKIPPED: REPLICA_MONGODB_URI is not set; start the replicas (as root: \
             infra/local/stack.sh start --replicas 3 --only-replicas) and eval \"$(infra/local/stack.sh env)\""
        );
    }
    uri
}

/// A client of one member alone.
async fn direct(host: &str) -> Client {
    let uri = format!("mongodb://{host}/?directConnection=true&serverSelectionTimeoutMS=5000");
    Client::with_uri_str(&uri).await.unwrap_or_else(|error| panic!("connect to {host}: {error}"))
}

/// The members (of `hosts`) whose copy of `database` holds order `id`, read on each one.
async fn members_holding(hosts: &[String], database: &str, id: i64) -> Vec<String> {
    let mut holding = Vec::new();
    for host in hosts {
        let orders = direct(host).await.database(database).collection::<Document>("orders");
        if orders.find_one(doc! {"_id": id}).await.unwrap_or_else(|error| panic!("read on {host}: {error}")).is_some() {
            holding.push(host.clone());
        }
    }
    holding
}

async fn create(app: &TestApp) -> i64 {
    let reply = app.post_json("/orders", &order_body(random_id(), [random_id(), random_id(), random_id()])).await;
    assert_eq!(reply.status, 201, "{}", reply.text);
    reply.json["id"].as_i64().expect("an order id")
}

/// Secondaries under `fsyncLock` (they write nothing, so they acknowledge nothing) until unlocked,
/// or until this is dropped (on a thread of its own: drop cannot await).
struct Locked(Vec<String>);

impl Locked {
    async fn lock(hosts: Vec<String>) -> Locked {
        for host in &hosts {
            let answer = direct(host).await.database("admin").run_command(doc! {"fsync": 1, "lock": true}).await;
            answer.unwrap_or_else(|error| panic!("fsyncLock on {host}: {error}"));
        }
        Locked(hosts)
    }

    async fn unlock(&mut self, host: &str) {
        direct(host).await.database("admin").run_command(doc! {"fsyncUnlock": 1}).await.expect("fsyncUnlock");
        self.0.retain(|locked| locked != host);
    }
}

impl Drop for Locked {
    fn drop(&mut self) {
        let hosts = std::mem::take(&mut self.0);
        let unlocked = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
            runtime.block_on(async {
                for host in hosts {
                    let _ = direct(&host).await.database("admin").run_command(doc! {"fsyncUnlock": 1}).await;
                }
            })
        });
        let _ = unlocked.join();
    }
}

#[tokio::test]
async fn an_acknowledged_order_is_on_a_majority_and_diagnostics_say_so() {
    let Some(uri) = replica_uri() else { return };
    let database = unique_db_name("orders_replica");
    let mut config = MongoConfig::new(uri.clone(), database.clone());
    config.pool_size = 2;
    let store = MongoStore::connect(&config).await.expect("connect to the replica set");
    let app = TestApp::spawn(store, HttpConfig::for_tests()).await;

    // /diagnostics: the primary written to, and a write waits for 2 of 3 members, journaled.
    let reply = app.get("/diagnostics").await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    let replication = &reply.json["replication"];
    assert_eq!(replication["role"], "primary", "{replication:#}");
    let primary = replication["primary"].as_str().expect("the primary").to_owned();
    assert_eq!(replication["me"], primary.as_str(), "the service's commands reach the primary: {replication:#}");
    assert!(
        uri.contains(&format!("replicaSet={}", replication["set_name"].as_str().unwrap_or("?"))),
        "{replication:#}"
    );
    let hosts: Vec<String> =
        replication["hosts"].as_array().expect("hosts").iter().filter_map(Value::as_str).map(str::to_owned).collect();
    assert_eq!(hosts.len(), 3, "{replication:#}");
    assert_eq!((&replication["members"], &replication["acknowledged_by"]), (&Value::from(3), &Value::from(2)));
    assert_eq!(
        replication["write_concern"],
        serde_json::json!({"w": "majority", "j": true, "source": "sent with every write"})
    );
    let waits = replication["write_waits_for"].as_str().unwrap_or_default();
    assert_eq!(
        waits,
        format!(
            "a majority, 2 of 3 members: the primary {primary} and 1 secondary, each in its on-disk journal (j: true)"
        )
    );

    // Right after the 201, at least two members hold the order.
    let id = create(&app).await;
    let holding = members_holding(&hosts, &database, id).await;
    assert!(holding.len() >= 2 && holding.contains(&primary), "order {id} right after the 201 is on {holding:?} only");

    // A write waits for the majority: with both secondaries locked, no 201 until one is unlocked.
    let secondaries: Vec<String> = hosts.iter().filter(|host| **host != primary).cloned().collect();
    let mut locked = Locked::lock(secondaries.clone()).await;
    let body = order_body(random_id(), [random_id(), random_id(), random_id()]);
    let post = app.post_json("/orders", &body);
    tokio::pin!(post);
    if let Ok(reply) = tokio::time::timeout(HELD, &mut post).await {
        drop(locked);
        panic!("answered {} within {HELD:?} while no secondary could write (order {})", reply.status, reply.json["id"]);
    }
    // The secondary to unlock is one that fetches the oplog from the primary: MongoDB chains
    // secondaries by default, and one that syncs from the other (still locked) gets nothing.
    let unlocked = syncing_from(&primary, &secondaries).await;
    locked.unlock(&unlocked).await;
    let reply = tokio::time::timeout(Duration::from_secs(10), post).await.expect("a 201 once a secondary writes again");
    assert_eq!(reply.status, 201, "unlocked {unlocked}: {}", reply.text);
    let id = reply.json["id"].as_i64().expect("an order id");
    let holding = members_holding(&[primary.clone(), unlocked.clone()], &database, id).await;
    assert_eq!(holding.len(), 2, "order {id} is on the primary and the unlocked secondary: {holding:?}");
    drop(locked);

    let _ = Client::with_uri_str(&uri).await.expect("client").database(&database).drop().await;
}

/// The first of `secondaries` whose sync source (`replSetGetStatus.syncSourceHost`, read on the
/// primary) is the primary itself.
async fn syncing_from(primary: &str, secondaries: &[String]) -> String {
    let status = direct(primary).await.database("admin").run_command(doc! {"replSetGetStatus": 1}).await;
    let status = status.unwrap_or_else(|error| panic!("replSetGetStatus on {primary}: {error}"));
    let members = status.get_array("members").expect("members");
    let source_of = |host: &str| {
        members.iter().filter_map(|member| member.as_document()).find_map(|member| {
            (member.get_str("name").ok() == Some(host))
                .then(|| member.get_str("syncSourceHost").unwrap_or("").to_owned())
        })
    };
    let found = secondaries.iter().find(|host| source_of(host).as_deref() == Some(primary));
    found.unwrap_or_else(|| panic!("no secondary syncs from the primary {primary}: {members:?}")).clone()
}

/// `opcounters.query` of every member in `hosts`, as each one counts it.
async fn queries(hosts: &[String]) -> Vec<i64> {
    let mut counts = Vec::new();
    for host in hosts {
        let status = direct(host).await.database("admin").run_command(doc! {"serverStatus": 1}).await;
        let status = status.unwrap_or_else(|error| panic!("serverStatus on {host}: {error}"));
        let opcounters = status.get_document("opcounters").expect("opcounters");
        counts
            .push(opcounters.get_i64("query").or_else(|_| opcounters.get_i32("query").map(i64::from)).expect("query"));
    }
    counts
}

#[tokio::test]
async fn with_secondary_preferred_reads_reach_the_secondaries_and_diagnostics_say_which() {
    let Some(uri) = replica_uri() else { return };
    let database = unique_db_name("orders_replica_reads");
    let mut config = MongoConfig::new(format!("{uri}&readPreference=secondaryPreferred"), database.clone());
    config.pool_size = 2;
    let store = MongoStore::connect(&config).await.expect("connect to the replica set");
    let app = TestApp::spawn(store, HttpConfig::for_tests()).await;

    let reply = app.get("/diagnostics").await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    let (reads, replication) = (&reply.json["reads"], &reply.json["replication"]);
    assert_eq!(reads["read_preference"], "secondaryPreferred", "{reads:#}");
    assert_eq!(reads["source"], "MONGODB_URI's readPreference", "{reads:#}");
    assert_eq!(reads["role"], "secondary", "{reads:#}");
    assert_ne!(reads["answered_by"], replication["primary"], "{:#}", reply.json);
    let primary = replication["primary"].as_str().expect("the primary").to_owned();
    let secondaries: Vec<String> = replication["hosts"]
        .as_array()
        .expect("hosts")
        .iter()
        .filter_map(Value::as_str)
        .filter(|host| *host != primary)
        .map(str::to_owned)
        .collect();

    // An order written on the primary is found through the secondaries once one has applied it.
    let id = create(&app).await;
    let began = std::time::Instant::now();
    while app.get(&format!("/orders/{id}")).await.status != 200 {
        assert!(began.elapsed() < Duration::from_secs(2), "order {id} not found through the secondaries in 2 s");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // The secondaries count the service's reads as their own queries.
    let before = queries(&secondaries).await;
    for _ in 0..20 {
        assert_eq!(app.get(&format!("/orders/{id}")).await.status, 200);
    }
    let after = queries(&secondaries).await;
    let counted: i64 = after.iter().zip(&before).map(|(a, b)| a - b).sum();
    assert!(counted >= 20, "the secondaries {secondaries:?} counted {counted} queries for 20 reads");

    let _ = Client::with_uri_str(&uri).await.expect("client").database(&database).drop().await;
}
