//! MongoDB as a backend of the runner (`mongo`, orders-mongo over `mongod`). Its commands live in
//! `crate::mongo::admin`; here is what the runner does with them: seeding (`seed`: unordered
//! `insert_many`), counts, the warm-up and fingerprint of a repeat's start, `fsync` and what else
//! runs, the snapshot of the data set (mongod's data directory copied by the local stack), the
//! per-step sample (two commands), the explaining figures of a run (`explain`, from `/diagnostics`
//! read by `snapshot`), and the facts the fairness gate compares.

pub mod admin;
pub mod explain;
pub mod seed;
pub mod snapshot;

use super::{Backend, Facts, Local, Sampler, Seeder};
use crate::databases::{Databases, mongo_client};
use anyhow::Result;
use async_trait::async_trait;
use md5::{Digest, Md5};
use mongodb::bson::Document;
use orders_bench_model::explain::EngineExplain;
use orders_bench_model::start::DatabaseStart;
use orders_bench_model::target::TargetInfo;
use orders_dataset::manifest::Manifest;
use orders_mongo::indexes::COLLECTION;
use serde_json::Value;
use snapshot::MongoSnapshot;
use std::time::Duration;

/// Its target's name (the key of its figures), label, service and database server, as
/// `TargetInfo` carries them and the experiments' tables name them.
pub const NAME: &str = "mongo";
pub const LABEL: &str = "MongoDB";
pub const SERVICE: &str = "orders-mongo";
pub const SERVER: &str = "mongod";
/// All of the above, as the runner passes it around.
pub const IDENTITY: super::Identity = super::Identity { name: NAME, label: LABEL, service: SERVICE, server: SERVER };

const COUNT_LIMIT: Duration = Duration::from_secs(15);
const CONNECT_LIMIT: Duration = Duration::from_secs(5);

#[derive(Debug, Clone)]
pub struct Mongo {
    uri: String,
    db: String,
}

impl Mongo {
    pub fn new(databases: &Databases) -> Self {
        Self { uri: databases.mongodb_uri.clone(), db: databases.mongodb_db.clone() }
    }

    async fn database(&self) -> Result<mongodb::Database> {
        Ok(mongo_client(&self.uri).await?.database(&self.db))
    }

    /// The name of mongod's data directory copy of data set `label`.
    fn snapshot_name(&self, label: &str) -> String {
        format!("{}_{label}", self.db)
    }
}

/// Whether MongoDB acknowledges a write only once it is in the on-disk journal: `j: true` (with
/// journaling on), or `w: majority` without `j` on a replica set, where
/// `writeConcernMajorityJournalDefault` makes majority wait for the journal. `w: 0` never waits.
pub fn waits_for_disk(mongo: &MongoSnapshot) -> Option<bool> {
    if mongo.write_w.as_deref() == Some("0") || mongo.journal_enabled == Some(false) {
        return Some(false);
    }
    match mongo.write_j {
        Some(j) => Some(j),
        None => {
            let replica_set = mongo.topology.as_deref().is_some_and(|t| t.starts_with("replica set"));
            Some(replica_set && mongo.write_w.as_deref() == Some("majority"))
        }
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

struct MongoSampler {
    db: mongodb::Database,
}

#[async_trait]
impl Sampler for MongoSampler {
    /// `serverStatus` (opcounters, WiredTiger log) and `$collStats` (document count and sizes).
    async fn sample(&self) -> Value {
        super::sample_json(admin::sample(&self.db).await)
    }

    fn cost(&self) -> (u64, &'static str) {
        (2, "commands")
    }
}

#[async_trait]
impl Backend for Mongo {
    fn info(&self) -> TargetInfo {
        IDENTITY.info()
    }

    fn database_url(&self) -> &str {
        &self.uri
    }

    fn default_service_url(&self) -> &'static str {
        "http://127.0.0.1:8081"
    }

    fn pool_setting(&self) -> &'static str {
        "MONGO_POOL_SIZE"
    }

    fn service_env(&self) -> Vec<(String, String)> {
        vec![("MONGODB_URI".into(), self.uri.clone()), ("MONGODB_DB".into(), self.db.clone())]
    }

    /// mongod creates a database on its first write.
    async fn create_database(&self) -> Result<()> {
        Ok(())
    }

    async fn seeder(&self) -> Result<Box<dyn Seeder>> {
        Ok(Box::new(seed::MongoTarget::connect(&self.uri, &self.db).await?))
    }

    async fn count_orders(&self) -> Option<u64> {
        let count = async {
            let db = self.database().await.ok()?;
            admin::count_orders(&db.collection::<Document>(COLLECTION)).await.ok()
        };
        tokio::time::timeout(COUNT_LIMIT, count).await.ok().flatten()
    }

    async fn warm_and_fingerprint(&self, entry: &mut DatabaseStart) -> Result<()> {
        let orders = self.database().await?.collection::<Document>(COLLECTION);
        admin::warm(&orders).await?;
        let mut digest = Md5::new();
        let count = admin::fingerprint(&orders, |bytes| digest.update(bytes)).await?;
        entry.data_fingerprint = Some(hex(&digest.finalize()));
        entry.orders = Some(count);
        let stats = admin::coll_stats(&orders).await?.unwrap_or_default();
        let size = |name: &str| match stats.get(name)? {
            mongodb::bson::Bson::Double(v) => Some(*v),
            mongodb::bson::Bson::Int32(v) => Some(f64::from(*v)),
            mongodb::bson::Bson::Int64(v) => Some(*v as f64),
            _ => None,
        };
        entry.bytes_on_disk = size("storageSize").zip(size("totalIndexSize")).map(|(a, b)| a + b);
        Ok(())
    }

    async fn checkpoint(&self) -> Result<(), String> {
        let db = self.database().await.map_err(|e| format!("{e:#}"))?;
        admin::checkpoint(&db).await.map_err(|e| e.to_string())
    }

    async fn busy(&self) -> Result<Vec<String>, String> {
        let db = self.database().await.map_err(|e| format!("{e:#}"))?;
        admin::busy_operations(&db).await.map_err(|e| e.to_string())
    }

    /// mongod's whole data directory copied with the server stopped (`infra/local/stack.sh
    /// mongo-snapshot`).
    async fn snapshot(&self, local: &Local<'_>) -> Result<()> {
        local.stack.mongo_snapshot(&self.snapshot_name(local.label)).await
    }

    async fn restore(&self, local: &Local<'_>) -> Result<()> {
        local.stack.mongo_restore(&self.snapshot_name(local.label)).await
    }

    /// The copy stays under `.local/mongo/snapshots`, replaced by the next snapshot of the same name.
    async fn drop_snapshot(&self, _local: &Local<'_>) {}

    async fn sampler(&self) -> Result<Box<dyn Sampler>, String> {
        let mut options = mongodb::options::ClientOptions::parse(&self.uri).await.map_err(|e| e.to_string())?;
        options.server_selection_timeout = Some(CONNECT_LIMIT);
        options.app_name = Some("orders-bench probe".into());
        options.max_pool_size = Some(1);
        let client = mongodb::Client::with_options(options).map_err(|e| e.to_string())?;
        let db = client.database(&self.db);
        admin::ping(&db).await.map_err(|e| e.to_string())?;
        Ok(Box::new(MongoSampler { db }))
    }

    fn explain(&self, before: &Value, _polled: &[(f64, &Value)], after: &Value, write_requests: u64) -> EngineExplain {
        let explain =
            explain::mongo(&MongoSnapshot::from_json(before), &MongoSnapshot::from_json(after), write_requests);
        EngineExplain::Mongo(Box::new(explain))
    }

    fn facts(&self, diagnostics: &Value, manifest: Option<&Manifest>) -> Facts {
        let mongo = MongoSnapshot::from_json(diagnostics);
        let mut own_checks = Vec::new();
        let name = self.info().name;
        let seeded = manifest.and_then(|m| m.targets.get(&name)).map(|t| t.database.rsplit('/').next().unwrap_or(""));
        if let (Some(seeded), Some(served)) = (seeded, mongo.database.as_deref()) {
            own_checks.push((
                "MongoDB database".to_owned(),
                format!("service reads {served}, manifest seeded {seeded}"),
                seeded == served,
                "the service must read the database the manifest describes".to_owned(),
            ));
        }
        Facts {
            waits_for_disk: waits_for_disk(&mongo),
            durability: format!(
                "w={}, j={}, journal {}",
                mongo.write_w.as_deref().unwrap_or("unset"),
                mongo.write_j.map_or("unset".into(), |j| j.to_string()),
                match mongo.journal_enabled {
                    Some(false) => "off",
                    Some(true) => "on",
                    None => "?",
                }
            ),
            estimated_orders: mongo.count,
            estimate_source: "collStats",
            unit: "documents",
            pool_size: mongo.pool_size.map(|p| format!("{p:.0}")),
            runtime: mongo.runtime.clone(),
            // The members that acknowledge a write (a standalone: itself).
            copies: diagnostics["replication"]["acknowledged_by"].as_u64().and_then(|n| u32::try_from(n).ok()),
            copies_words: diagnostics["replication"]["write_waits_for"].as_str().unwrap_or("not reported").to_owned(),
            own_checks,
        }
    }

    fn cache_bytes(&self, diagnostics: &Value) -> Option<u64> {
        diagnostics.pointer("/wiredtiger_cache/maximum_bytes_configured").and_then(Value::as_f64).map(|b| b as u64)
    }
}
