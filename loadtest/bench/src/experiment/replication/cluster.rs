//! The replicated deployment the experiment measures beside the single servers: the stack's
//! replicas (started with the single servers' budget per member when they are not running, and
//! stopped again only then), the services over them (the single servers' services' settings with
//! the replicas' URLs), and what each engine's write waited for, read back from the services'
//! `/diagnostics`, from `pg_stat_replication` and from Patroni, never from the configuration.

use super::counters::Sample;
use crate::diagnostics::Snapshot;
use crate::experiment::engine::Target;
use crate::experiment::services::{Local, Services};
use anyhow::{Context, Result};
use orders_bench_engines::databases::Databases;
use orders_bench_engines::stack::Stack;
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

pub struct Replicas {
    pub env: BTreeMap<String, String>,
    stack: Stack,
    started: bool,
}

impl Replicas {
    /// The running replicas, or replicas started now with `budget` (`--db-cpus X --db-memory Y`).
    pub async fn ensure(stack: &Stack, budget: &[String]) -> Result<Self> {
        let mut env = stack.env().await?;
        let mut started = false;
        if !env.contains_key("REPLICA_DATABASE_URL") {
            eprintln!("experiment: starting the replicated stack (3 members per engine; about a minute)");
            let mut args: Vec<String> = ["--replicas", "3", "--only-replicas"].map(str::to_owned).to_vec();
            args.extend(budget.iter().cloned());
            stack.start(&args).await.context("the replicated stack (root only: namespaces, a bridge, cgroups)")?;
            started = true;
            env = stack.env().await?;
        }
        Ok(Self { env, stack: stack.clone(), started })
    }

    pub fn get(&self, name: &str) -> Result<&str> {
        self.env.get(name).map(String::as_str).with_context(|| format!("stack.sh env printed no {name}"))
    }

    /// The replicas' databases, named `db` as the single servers'.
    pub fn databases(&self, db: &str) -> Result<Databases> {
        Ok(Databases {
            database_url: orders_bench_engines::databases::with_database(self.get("REPLICA_DATABASE_URL")?, db),
            mongodb_uri: self.get("REPLICA_MONGODB_URI")?.to_owned(),
            mongodb_db: db.to_owned(),
            ..Databases::default()
        })
    }

    /// Stops the replicas if this run started them.
    pub async fn stop(self) {
        if self.started
            && let Err(error) = self.stack.stop_replicas().await
        {
            eprintln!("experiment: stopping the replicas: {error:#}");
        }
    }
}

/// orders-pg and orders-mongo with `single`'s settings over `databases`, logging into `logs`.
pub fn services_over(single: &Services, databases: &Databases, logs: &Path) -> Result<Services> {
    let Services::Local(local) = single else { anyhow::bail!("replication needs the local services") };
    std::fs::create_dir_all(logs).with_context(|| format!("creating {}", logs.display()))?;
    let envs = local
        .envs
        .iter()
        .filter(|(t, _)| matches!(t, Target::Pg | Target::Mongo))
        .map(|(t, env)| {
            let env = env
                .iter()
                .map(|(k, v)| match k.as_str() {
                    "DATABASE_URL" => (k.clone(), databases.database_url.clone()),
                    "MONGODB_URI" => (k.clone(), databases.mongodb_uri.clone()),
                    _ => (k.clone(), v.clone()),
                })
                .collect();
            (*t, env)
        })
        .collect();
    Ok(Services::Local(Local::new(local.bin_dir.clone(), logs.to_path_buf(), envs)))
}

/// What each engine's write waited for, as the servers say.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Waited {
    pub pg: String,
    pub mongo: String,
    /// The member each service writes to (`inet_server_addr()`; `hello.me`).
    pub pg_member: Option<String>,
    pub mongo_member: Option<String>,
    /// The PostgreSQL standbys `pg_stat_replication` calls synchronous, and Patroni's.
    pub pg_sync_standbys: Vec<String>,
    pub patroni_sync_standbys: Vec<String>,
    pub mongo_members: Option<u64>,
    pub mongo_acknowledged_by: Option<u64>,
}

fn text(v: &Value, key: &str) -> Option<String> {
    match v.get(key)? {
        Value::String(s) => Some(s.clone()),
        Value::Null => None,
        other => Some(other.to_string()),
    }
}

/// From the services' `/diagnostics` (`replication`), the primary's `pg_stat_replication` (in
/// `sample`) and Patroni's `/cluster` (at `patroni`, when replicated).
pub async fn waited(snapshot: &Snapshot, sample: &Sample, patroni: Option<&str>) -> Waited {
    let pg = &snapshot.get("pg")["replication"];
    let mongo = &snapshot.get("mongo")["replication"];
    let sync: Vec<String> =
        sample.sync_state.iter().filter(|(_, s)| *s == "sync" || *s == "quorum").map(|(n, _)| n.clone()).collect();
    let patroni_sync = match patroni {
        Some(url) => patroni_sync_standbys(url).await.unwrap_or_else(|e| vec![format!("unread: {e:#}")]),
        None => Vec::new(),
    };
    let concern = &mongo["write_concern"];
    let pg_text = format!(
        "synchronous_commit={}, synchronous_standby_names='{}'{}: {}",
        text(pg, "synchronous_commit").unwrap_or_else(|| "?".into()),
        text(pg, "synchronous_standby_names").unwrap_or_default(),
        if sync.is_empty() { String::new() } else { format!(", sync standby {}", sync.join(", ")) },
        text(pg, "commit_waits_for").unwrap_or_else(|| "not reported".into()),
    );
    let mongo_text = format!(
        "w:{}, j:{} ({}): {}",
        text(concern, "w").unwrap_or_else(|| "?".into()),
        text(concern, "j").unwrap_or_else(|| "?".into()),
        text(concern, "source").unwrap_or_else(|| "?".into()),
        text(mongo, "write_waits_for").unwrap_or_else(|| "not reported".into()),
    );
    Waited {
        pg: pg_text,
        mongo: mongo_text,
        pg_member: text(pg, "server_addr"),
        mongo_member: text(mongo, "me"),
        pg_sync_standbys: sync,
        patroni_sync_standbys: patroni_sync,
        mongo_members: mongo["members"].as_u64(),
        mongo_acknowledged_by: mongo["acknowledged_by"].as_u64(),
    }
}

/// The members Patroni's `/cluster` calls `sync_standby`.
async fn patroni_sync_standbys(url: &str) -> Result<Vec<String>> {
    let client = reqwest::Client::builder().timeout(std::time::Duration::from_secs(5)).build()?;
    let cluster: Value = client.get(format!("{url}/cluster")).send().await?.error_for_status()?.json().await?;
    let members = cluster["members"].as_array().context("no members in Patroni's /cluster")?;
    Ok(members
        .iter()
        .filter(|m| m["role"] == "sync_standby")
        .filter_map(|m| m["name"].as_str().map(str::to_owned))
        .collect())
}
