//! The counters a write window is measured by, read from the servers and the kernel before and
//! after it: PostgreSQL's WAL position, `pg_stat_wal` and each standby's `sent_lsn`; MongoDB's
//! newest oplog entry and the oplog's size (the entries written in the window are summed with
//! `$bsonSize` after it); each member's bytes through its bridge port (`ip -s -j link` in the
//! bridge's namespace: what the member sent and received); and each member's CPU time from the
//! cgroup of its budget. A single server is a member without a network of its own.

use anyhow::{Context, Result, bail};
use mongodb::bson::{Document, Timestamp, doc};
use serde::Serialize;
use std::collections::BTreeMap;

/// Where a member's figures come from.
#[derive(Debug, Clone, Serialize)]
pub struct Member {
    /// `pg1`, `mongo2` (replicas: their bridge port and namespace) or `pg`, `mongo` (single servers).
    pub name: String,
    pub postgres: bool,
    pub address: Option<String>,
    /// A process in the member's budget cgroup (its CPU time is the cgroup's).
    #[serde(skip)]
    pub pid: Option<u32>,
}

/// What the probe reads: the two engines' servers and, for replicas, the bridge.
pub struct Probe {
    pub(super) pg: tokio_postgres::Client,
    pub(super) mongo: mongodb::Client,
    mongo_db: String,
    /// The namespace that holds the bridge (`orders-lan`), for replicas.
    lan: Option<String>,
    pub members: Vec<Member>,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Sample {
    pub wal_lsn: f64,
    pub wal_records: f64,
    pub wal_fpi: f64,
    pub wal_bytes: f64,
    /// `pg_stat_replication`: standby (application_name) → sent_lsn as bytes, and its sync_state.
    pub sent: BTreeMap<String, f64>,
    pub sync_state: BTreeMap<String, String>,
    #[serde(skip)]
    pub oplog_last: Option<Timestamp>,
    pub oplog_size: Option<f64>,
    /// Member → (bytes it sent, bytes it received) through its bridge port.
    pub links: BTreeMap<String, (f64, f64)>,
    /// Member → CPU seconds of its cgroup.
    pub cpu: BTreeMap<String, f64>,
    #[serde(skip)]
    pub at: Option<std::time::Instant>,
}

/// The oplog entries a window wrote, by kind.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Oplog {
    /// Entries on the orders collection (`i` inserts, `u` updates).
    pub orders_entries: f64,
    pub orders_bytes: f64,
    /// Every entry of the window (no-ops, other namespaces included).
    pub all_entries: f64,
    pub all_bytes: f64,
}

impl Probe {
    pub async fn connect(pg_url: &str, mongo_uri: &str, mongo_db: &str, lan: Option<String>) -> Result<Self> {
        // The `postgres` database: a reload drops the experiment's (and ends its sessions), and
        // the WAL and pg_stat_replication are the server's anyway.
        let admin = orders_bench_engines::databases::with_database(pg_url, "postgres");
        let (pg, _) = orders_bench_engines::postgres::seed::connect(&admin).await?;
        let mut options = mongodb::options::ClientOptions::parse(mongo_uri).await.context("MongoDB URI")?;
        options.app_name = Some("orders-bench-replication".into());
        let mongo = mongodb::Client::with_options(options).context("MongoDB client")?;
        Ok(Self { pg, mongo, mongo_db: mongo_db.to_owned(), lan, members: Vec::new() })
    }

    /// The bridge's ports (one per member, named after it) and a process in each member's budget;
    /// `prefix` is the namespaces' (`orders-`).
    pub async fn find_replicas(&mut self, prefix: &str) -> Result<()> {
        let Some(lan) = self.lan.clone() else { bail!("no bridge namespace") };
        for (port, _) in link_bytes(&lan).await? {
            let postgres = port.starts_with("pg");
            if !(postgres || port.starts_with("mongo")) {
                continue;
            }
            let ns = format!("{prefix}{port}");
            let address = ip(&["-n", &ns, "-4", "-br", "addr", "show", "eth0"])
                .await
                .ok()
                .and_then(|text| text.split_whitespace().nth(2).and_then(|a| a.split('/').next()).map(str::to_owned));
            let pids = tokio::process::Command::new("ip").args(["netns", "pids", &ns]).output().await?;
            let pid = String::from_utf8_lossy(&pids.stdout).lines().filter_map(|l| l.trim().parse().ok()).find(|pid| {
                orders_budget::placement(*pid)
                    .is_some_and(|p| p.path.trim_end_matches('/').ends_with(&format!("/{ns}")))
            });
            self.members.push(Member { name: port, postgres, address, pid });
        }
        if self.members.is_empty() {
            bail!("no member ports on the bridge in namespace {lan}");
        }
        Ok(())
    }

    /// Single servers: the processes listening on `pg_port` and `mongo_port`.
    pub fn single_servers(&mut self, pg_port: Option<u16>, mongo_port: Option<u16>) {
        for (name, port, postgres) in [("pg", pg_port, true), ("mongo", mongo_port, false)] {
            let pid = port.and_then(crate::procstat::listening_pid);
            self.members.push(Member { name: name.into(), postgres, address: None, pid });
        }
    }

    pub async fn sample(&self) -> Result<Sample> {
        let mut s = Sample { at: Some(std::time::Instant::now()), ..Sample::default() };
        let row = self
            .pg
            .query_one(
                "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::float8, wal_records::float8, \
                 wal_fpi::float8, wal_bytes::float8 FROM pg_stat_wal",
                &[],
            )
            .await
            .context("reading the WAL position and pg_stat_wal")?;
        (s.wal_lsn, s.wal_records, s.wal_fpi, s.wal_bytes) = (row.get(0), row.get(1), row.get(2), row.get(3));
        let standbys = self
            .pg
            .query(
                "SELECT application_name, pg_wal_lsn_diff(sent_lsn, '0/0')::float8, sync_state \
                 FROM pg_stat_replication WHERE sent_lsn IS NOT NULL",
                &[],
            )
            .await
            .context("reading pg_stat_replication")?;
        for row in standbys {
            let name: String = row.get(0);
            s.sent.insert(name.clone(), row.get(1));
            s.sync_state.insert(name, row.get(2));
        }
        let local = self.mongo.database("local");
        if self.is_replica_set().await {
            let oplog = local.collection::<Document>("oplog.rs");
            let newest = oplog.find_one(doc! {}).sort(doc! {"$natural": -1}).await.context("the newest oplog entry")?;
            s.oplog_last = newest.and_then(|d| d.get_timestamp("ts").ok());
            let stats = local.run_command(doc! {"collStats": "oplog.rs"}).await.context("collStats oplog.rs")?;
            s.oplog_size = number(&stats, "size");
        }
        if let Some(lan) = &self.lan {
            s.links = link_bytes(lan).await?.into_iter().collect();
        }
        for member in &self.members {
            let used = member.pid.and_then(orders_budget::placement).and_then(|p| p.read().usage_seconds);
            if let Some(seconds) = used {
                s.cpu.insert(member.name.clone(), seconds);
            }
        }
        Ok(s)
    }

    async fn is_replica_set(&self) -> bool {
        let hello = self.mongo.database("admin").run_command(doc! {"hello": 1}).await;
        hello.is_ok_and(|h| h.get_str("setName").is_ok())
    }

    /// The oplog entries written after `since` up to `to` (sizes with `$bsonSize`), by namespace.
    pub async fn oplog_since(&self, since: Timestamp, to: Timestamp) -> Result<Oplog> {
        let ns = format!("{}.orders", self.mongo_db);
        let pipeline = vec![
            doc! {"$match": {"ts": {"$gt": since, "$lte": to}}},
            doc! {"$group": {
                "_id": {"$eq": ["$ns", &ns]},
                "n": {"$sum": 1},
                "bytes": {"$sum": {"$bsonSize": "$$ROOT"}},
            }},
        ];
        let oplog = self.mongo.database("local").collection::<Document>("oplog.rs");
        let mut cursor = oplog.aggregate(pipeline).await.context("summing the window's oplog entries")?;
        let mut out = Oplog::default();
        while cursor.advance().await? {
            let group = cursor.deserialize_current()?;
            let (n, bytes) = (number(&group, "n").unwrap_or(0.0), number(&group, "bytes").unwrap_or(0.0));
            if group.get_bool("_id").unwrap_or(false) {
                (out.orders_entries, out.orders_bytes) = (n, bytes);
            }
            out.all_entries += n;
            out.all_bytes += bytes;
        }
        Ok(out)
    }
}

fn number(d: &Document, key: &str) -> Option<f64> {
    match d.get(key)? {
        mongodb::bson::Bson::Int32(v) => Some(f64::from(*v)),
        mongodb::bson::Bson::Int64(v) => Some(*v as f64),
        mongodb::bson::Bson::Double(v) => Some(*v),
        _ => None,
    }
}

async fn ip(args: &[&str]) -> Result<String> {
    let output = tokio::process::Command::new("ip").args(args).output().await.context("running ip")?;
    if !output.status.success() {
        bail!("ip {} failed: {}", args.join(" "), String::from_utf8_lossy(&output.stderr).trim());
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// Every port of the bridge in namespace `lan`: (name, (bytes the member sent, bytes it received)).
/// A bridge port receives what its member sends, so the port's rx is the member's tx.
async fn link_bytes(lan: &str) -> Result<Vec<(String, (f64, f64))>> {
    parse_links(&ip(&["-n", lan, "-s", "-j", "link", "show"]).await?)
}

pub fn parse_links(json: &str) -> Result<Vec<(String, (f64, f64))>> {
    let links: serde_json::Value = serde_json::from_str(json).context("ip -j link: not JSON")?;
    let list = links.as_array().context("ip -j link: not a list")?;
    Ok(list
        .iter()
        .filter_map(|l| {
            let stats = l.get("stats64")?;
            let bytes = |way: &str| stats.get(way)?.get("bytes")?.as_f64();
            Some((l.get("ifname")?.as_str()?.to_owned(), (bytes("rx")?, bytes("tx")?)))
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bridge_ports_rx_is_what_its_member_sent() {
        let json = r#"[{"ifname":"br0","stats64":{"rx":{"bytes":5},"tx":{"bytes":6}}},
            {"ifname":"pg1","stats64":{"rx":{"bytes":1000,"packets":3},"tx":{"bytes":20}}},{"ifname":"lo"}]"#;
        let links = parse_links(json).expect("links");
        assert_eq!(links, vec![("br0".into(), (5.0, 6.0)), ("pg1".into(), (1000.0, 20.0))]);
        assert!(parse_links("{").is_err());
    }
}
