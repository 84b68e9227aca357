//! The figures a run needs while it runs, read by the runner over connections of its own instead
//! of from the services under test: `/diagnostics` costs each service two EXPLAINs, about eight
//! queries and a pool slot, inside the very process being measured. Here, once per sample, each
//! database's backend sends what it needs (`Backend::sampler`; PostgreSQL one query: the GIN
//! pending list, the `pg_stat_user_tables` counters of `orders` and the WAL position; MongoDB two
//! commands: `serverStatus` and `$collStats`).
//!
//! Each sample is the service's own typed `/diagnostics` with only those sections filled (and
//! `"source": "orders-bench"`), so the explaining code reads both alike. A database the runner
//! cannot reach (a droplet that accepts only its service) is read through its service's
//! `/diagnostics`, still once per sample, and the cost says so. The services' `/diagnostics` stay
//! for the snapshots before and after a run.

use super::{Client, Snapshot};
use indexmap::IndexMap;
use orders_bench_engines::{Sampler, Targets};
use orders_bench_model::cpu::ProbeCost;
use serde_json::{Value, json};
use std::time::Duration;

/// Where one target's samples come from.
enum Source {
    Direct(Box<dyn Sampler>),
    Service,
}

pub struct Probe {
    /// Per target: its name and where its samples come from.
    sources: Vec<(String, Source)>,
    services: Client,
    pub cost: ProbeCost,
}

impl Probe {
    /// Connects to every database; one that does not answer within five seconds is read through
    /// its service instead.
    pub async fn connect(targets: &Targets, services: Client, interval: Duration) -> Self {
        let mut cost = ProbeCost { interval_seconds: interval.as_secs_f64(), ..ProbeCost::default() };
        let mut sources = Vec::new();
        for target in targets.iter() {
            let info = target.backend.info();
            let source = match target.backend.sampler().await {
                Ok(sampler) => Source::Direct(sampler),
                Err(why) => {
                    cost.notes.push(format!(
                        "{} not reachable from the runner ({why}): read through /diagnostics",
                        info.label
                    ));
                    Source::Service
                }
            };
            sources.push((info.name, source));
        }
        let probe = Self { sources, services, cost };
        // Once before the load, not counted: a backend's first sample loads the pgstattuple
        // library and fills its catalog caches, about 40 ms of PostgreSQL's CPU (measured; later
        // ones cost under 10 ms), which under a quarter-core budget held every query of the first
        // sampled step up for some 160 ms (p95 160-320 ms in step 2 of `demo --quick`'s read).
        let _ = probe.read_all().await;
        probe
    }

    async fn read(&self, name: &str, source: &Source) -> Value {
        match source {
            Source::Direct(sampler) => sampler.sample().await,
            Source::Service => match self.services.url(name) {
                Some(url) => self.services.fetch(url).await.unwrap_or_else(|e| json!({"error": format!("{e:#}")})),
                None => json!({"error": "no service"}),
            },
        }
    }

    async fn read_all(&self) -> IndexMap<String, Value> {
        let reads = self.sources.iter().map(|(name, source)| self.read(name, source));
        let values = futures_util::future::join_all(reads).await;
        self.sources.iter().map(|(name, _)| name.clone()).zip(values).collect()
    }

    /// One sample of every database, `at_s` seconds into the run.
    pub async fn sample(&mut self, at_s: f64) -> Snapshot {
        let services = self.read_all().await;
        self.cost.samples += 1;
        Snapshot { at_s, services }
    }

    /// Counts what was sent and closes the connections.
    pub fn finish(mut self) -> ProbeCost {
        let samples = self.cost.samples;
        for (name, source) in self.sources {
            match source {
                Source::Direct(sampler) => {
                    let (per_sample, unit) = sampler.cost();
                    self.cost.sent.insert(format!("{name}_{unit}"), per_sample * samples);
                }
                Source::Service => self.cost.service_diagnostics += samples,
            }
        }
        self.cost
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mongodb::bson::{Document, doc};
    use orders_bench_engines::databases::Databases;
    use orders_bench_engines::mongo::snapshot::MongoSnapshot;
    use orders_bench_engines::postgres::snapshot::PgSnapshot;

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
        let databases = Databases {
            database_url,
            mongodb_uri: mongodb_uri(),
            mongodb_db: mongodb_db.clone(),
            ..Databases::default()
        };
        let targets = Targets::new(&databases, &[]).expect("targets");
        let services = Client::new(&targets).expect("client");

        let mut probe = Probe::connect(&targets, services, Duration::from_secs(4)).await;
        let first = probe.sample(4.0).await;
        let second = probe.sample(8.0).await;
        let cost = probe.finish();
        let _ = client.database(&mongodb_db).drop().await;

        let pg = PgSnapshot::from_json(second.get("pg"));
        assert_eq!((pg.pending_pages, pg.counter(|t| t.n_tup_ins)), (Some(0.0), Some(0.0)), "{:#}", second.get("pg"));
        assert!(pg.wal_bytes.is_some_and(|b| b > 0.0), "{:#}", second.get("pg"));
        let mongo = MongoSnapshot::from_json(first.get("mongo"));
        assert_eq!(mongo.count, Some(1.0), "{:#}", first.get("mongo"));
        assert!(mongo.opcounters.contains_key("insert") && mongo.journal_bytes.is_some(), "{:#}", first.get("mongo"));
        assert_eq!(first.get("pg")["source"], "orders-bench", "not a service's /diagnostics");
        assert_eq!(
            (cost.samples, cost.sent["pg_queries"], cost.sent["mongo_commands"], cost.service_diagnostics),
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
            ..Databases::default()
        };
        let urls =
            [("pg".to_owned(), "http://127.0.0.1:9".to_owned()), ("mongo".to_owned(), "http://127.0.0.1:9".to_owned())];
        let targets = Targets::new(&databases, &urls).expect("targets");
        let services = Client::new(&targets).expect("client");
        let mut probe = Probe::connect(&targets, services, Duration::from_secs(4)).await;
        let sample = probe.sample(4.0).await;
        let cost = probe.finish();
        assert!(sample.get("pg").get("error").is_some() && sample.get("mongo").get("error").is_some(), "{sample:?}");
        assert_eq!((cost.sent.len(), cost.service_diagnostics), (0, 2));
        assert_eq!(cost.notes.len(), 2, "{:?}", cost.notes);
    }
}
