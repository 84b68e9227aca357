//! The figures a run needs while it runs, read by the runner over connections of its own instead
//! of from the services under test: `/diagnostics` costs each service two EXPLAINs, about eight
//! queries and a pool slot, inside the very process being measured. Here, once per sample:
//!
//! - PostgreSQL, one query: the GIN pending list (`pgstatginindex`), the `pg_stat_user_tables`
//!   counters of `orders` and the WAL position;
//! - MongoDB, two commands: `serverStatus` (opcounters, WiredTiger log) and `$collStats`
//!   (document count and sizes).
//!
//! The statements are `orders_pg::admin::sample` and `orders_mongo::admin::sample`. Each sample is
//! the services' own typed `/diagnostics` with only those sections filled (and `"source":
//! "orders-bench"`), so the explaining code reads both alike. A database the runner cannot reach
//! (a droplet that accepts only its service) is read through its service's `/diagnostics`, still
//! once per sample, and the cost says so. The services' `/diagnostics` stay for the snapshots
//! before and after a run.

use super::{Client, Pair};
use crate::databases::Databases;
use mongodb::options::ClientOptions;
use orders_bench_model::cpu::ProbeCost;
use orders_mongo::diagnostics as mongo;
use orders_pg::diagnostics as pg;
use serde_json::{Value, json};
use std::time::Duration;
use tokio_postgres::NoTls;

const CONNECT_LIMIT: Duration = Duration::from_secs(5);
const SOURCE: &str = "orders-bench";

enum PgSource {
    Direct(tokio_postgres::Client, tokio::task::JoinHandle<()>),
    Service,
}

enum MongoSource {
    Direct(mongodb::Database),
    Service,
}

pub struct Probe {
    pg: PgSource,
    mongo: MongoSource,
    services: Client,
    pub cost: ProbeCost,
}

impl Probe {
    /// Connects to both databases; one that does not answer within five seconds is read through
    /// its service instead.
    pub async fn connect(databases: &Databases, services: Client, interval: Duration) -> Self {
        let mut cost = ProbeCost { interval_seconds: interval.as_secs_f64(), ..ProbeCost::default() };
        let pg = match tokio::time::timeout(CONNECT_LIMIT, tokio_postgres::connect(&databases.database_url, NoTls))
            .await
        {
            Ok(Ok((client, connection))) => {
                PgSource::Direct(client, tokio::spawn(async move { drop(connection.await) }))
            }
            outcome => {
                let why = outcome.map_or_else(
                    |_| "no answer within 5 s".to_owned(),
                    |r| r.err().map(|e| e.to_string()).unwrap_or_default(),
                );
                cost.notes.push(format!("PostgreSQL not reachable from the runner ({why}): read through /diagnostics"));
                PgSource::Service
            }
        };
        let mongo = match mongo_database(databases).await {
            Ok(db) => MongoSource::Direct(db),
            Err(why) => {
                cost.notes.push(format!("MongoDB not reachable from the runner ({why}): read through /diagnostics"));
                MongoSource::Service
            }
        };
        let probe = Self { pg, mongo, services, cost };
        // Once before the load, not counted: a backend's first sample loads the pgstattuple
        // library and fills its catalog caches, about 40 ms of PostgreSQL's CPU (measured; later
        // ones cost under 10 ms), which under a quarter-core budget held every query of the first
        // sampled step up for some 160 ms (p95 160-320 ms in step 2 of `demo --quick`'s read).
        let _ = tokio::join!(probe.pg_sample(), probe.mongo_sample());
        probe
    }

    /// One sample of both databases, `at_s` seconds into the run.
    pub async fn sample(&mut self, at_s: f64) -> Pair {
        let (pg, mongo) = tokio::join!(self.pg_sample(), self.mongo_sample());
        self.cost.samples += 1;
        Pair { at_s, pg, mongo }
    }

    async fn pg_sample(&self) -> Value {
        match &self.pg {
            PgSource::Direct(client, _) => match orders_pg::admin::sample(client).await {
                Ok(sample) => to_json(&pg::Diagnostics { source: Some(SOURCE.into()), ..sample }),
                Err(error) => json!({"source": SOURCE, "error": error.to_string()}),
            },
            PgSource::Service => {
                self.services.fetch(&self.services.pg_url).await.unwrap_or_else(|e| json!({"error": format!("{e:#}")}))
            }
        }
    }

    async fn mongo_sample(&self) -> Value {
        match &self.mongo {
            MongoSource::Direct(db) => match orders_mongo::admin::sample(db).await {
                Ok(sample) => to_json(&mongo::Diagnostics { source: Some(SOURCE.into()), ..sample }),
                Err(error) => json!({"source": SOURCE, "error": error.to_string()}),
            },
            MongoSource::Service => self
                .services
                .fetch(&self.services.mongo_url)
                .await
                .unwrap_or_else(|e| json!({"error": format!("{e:#}")})),
        }
    }

    /// Counts what was sent and closes the connections.
    pub fn finish(mut self) -> ProbeCost {
        let samples = self.cost.samples;
        match self.pg {
            PgSource::Direct(client, connection) => {
                self.cost.pg_queries = samples;
                drop(client);
                connection.abort();
            }
            PgSource::Service => self.cost.service_diagnostics += samples,
        }
        match self.mongo {
            MongoSource::Direct(_) => self.cost.mongo_commands = 2 * samples,
            MongoSource::Service => self.cost.service_diagnostics += samples,
        }
        self.cost
    }
}

async fn mongo_database(databases: &Databases) -> Result<mongodb::Database, String> {
    let mut options = ClientOptions::parse(&databases.mongodb_uri).await.map_err(|e| e.to_string())?;
    options.server_selection_timeout = Some(CONNECT_LIMIT);
    options.app_name = Some("orders-bench probe".into());
    options.max_pool_size = Some(1);
    let client = mongodb::Client::with_options(options).map_err(|e| e.to_string())?;
    let db = client.database(&databases.mongodb_db);
    orders_mongo::admin::ping(&db).await.map_err(|e| e.to_string())?;
    Ok(db)
}

/// A sample as the `/diagnostics` JSON it stands in for.
fn to_json(sample: &impl serde::Serialize) -> Value {
    serde_json::to_value(sample).unwrap_or_else(|e| json!({"source": SOURCE, "error": e.to_string()}))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnostics::snapshot::{MongoSnapshot, PgSnapshot};
    use mongodb::bson::{Document, doc};

    fn mongodb_uri() -> String {
        // Tests read the environment directly, as the other database tests do.
        std::env::var("MONGODB_URI").unwrap_or_else(|_| "mongodb://127.0.0.1:57017".into())
    }

    #[tokio::test]
    async fn the_runner_reads_both_databases_itself_once_per_sample() {
        let database_url = orders_pg::testing::fresh_database().await;
        orders_pg::PgStore::connect(&orders_pg::PgConfig::with_url(database_url.clone())).await.expect("migrate");
        let mongodb_db = format!("probe_test_{}", std::process::id());
        let client = mongodb::Client::with_uri_str(mongodb_uri()).await.expect("mongo");
        let orders = client.database(&mongodb_db).collection::<Document>("orders");
        orders.insert_one(doc! {"_id": 1_i64, "status": "paid"}).await.expect("insert");
        let databases = Databases { database_url, mongodb_uri: mongodb_uri(), mongodb_db: mongodb_db.clone() };
        let services = Client::new("http://127.0.0.1:9", "http://127.0.0.1:9").expect("client");

        let mut probe = Probe::connect(&databases, services, Duration::from_secs(4)).await;
        let first = probe.sample(4.0).await;
        let second = probe.sample(8.0).await;
        let cost = probe.finish();
        let _ = client.database(&mongodb_db).drop().await;

        let pg = PgSnapshot::from_json(&second.pg);
        assert_eq!((pg.pending_pages, pg.counter(|t| t.n_tup_ins)), (Some(0.0), Some(0.0)), "{:#}", second.pg);
        assert!(pg.wal_bytes.is_some_and(|b| b > 0.0), "{:#}", second.pg);
        let mongo = MongoSnapshot::from_json(&first.mongo);
        assert_eq!(mongo.count, Some(1.0), "{:#}", first.mongo);
        assert!(mongo.opcounters.contains_key("insert") && mongo.journal_bytes.is_some(), "{:#}", first.mongo);
        assert_eq!(first.pg["source"], "orders-bench", "not a service's /diagnostics");
        assert_eq!(
            (cost.samples, cost.pg_queries, cost.mongo_commands, cost.service_diagnostics),
            (2, 2, 4, 0),
            "one query and two commands per sample, nothing through the services"
        );
    }

    #[tokio::test]
    async fn a_database_out_of_reach_is_read_through_its_service_and_the_cost_says_so() {
        let databases = Databases {
            database_url: "postgres://postgres@127.0.0.1:9/none".into(),
            mongodb_uri: "mongodb://127.0.0.1:9/?serverSelectionTimeoutMS=200".into(),
            mongodb_db: "none".into(),
        };
        let services = Client::new("http://127.0.0.1:9", "http://127.0.0.1:9").expect("client");
        let mut probe = Probe::connect(&databases, services, Duration::from_secs(4)).await;
        let sample = probe.sample(4.0).await;
        let cost = probe.finish();
        assert!(sample.pg.get("error").is_some() && sample.mongo.get("error").is_some(), "{sample:?}");
        assert_eq!((cost.pg_queries, cost.mongo_commands, cost.service_diagnostics), (0, 0, 2));
        assert_eq!(cost.notes.len(), 2, "{:?}", cost.notes);
    }
}
