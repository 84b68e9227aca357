//! What the failover asks the servers themselves, before and after the kill: Patroni's REST API
//! (`/cluster`: the leader; `/config`: ttl, loop_wait, retry_timeout, primary_start_timeout;
//! `/history`: the timelines and who was promoted when) and MongoDB's `hello`,
//! `replSetGetStatus` (every member's state, the last election's reason) and `replSetGetConfig`
//! (`electionTimeoutMillis`, `heartbeatIntervalMillis`). Every finding of the report about who
//! became primary comes from these answers.

use anyhow::{Context, Result, bail};
use mongodb::bson::{Bson, Document, doc};
use serde_json::{Value, json};
use std::time::Duration;

pub struct Patroni {
    urls: Vec<String>,
    http: reqwest::Client,
}

impl Patroni {
    pub fn new(urls: &str) -> Result<Self> {
        let urls: Vec<String> = urls.split(',').filter(|u| !u.is_empty()).map(str::to_owned).collect();
        if urls.is_empty() {
            bail!("no Patroni URL");
        }
        Ok(Self { urls, http: reqwest::Client::builder().timeout(Duration::from_secs(3)).build()? })
    }

    /// `path` from the first member that answers (a killed member's Patroni still answers).
    pub async fn get(&self, path: &str) -> Result<Value> {
        let mut last = None;
        for url in &self.urls {
            match self.http.get(format!("{url}{path}")).send().await {
                Ok(r) if r.status().is_success() => return r.json().await.context("Patroni's JSON"),
                Ok(r) => last = Some(format!("{url}{path}: {}", r.status())),
                Err(e) => last = Some(format!("{url}{path}: {e}")),
            }
        }
        bail!("no Patroni answered: {}", last.unwrap_or_default())
    }

    /// The leader's name and host, when there is one.
    pub async fn leader(&self) -> Result<Option<(String, String)>> {
        let cluster = self.get("/cluster").await?;
        let leader = cluster["members"].as_array().into_iter().flatten().find(|m| m["role"] == "leader");
        Ok(leader.and_then(|m| Some((m["name"].as_str()?.to_owned(), m["host"].as_str()?.to_owned()))))
    }

    /// Changes one key of the cluster's dynamic configuration (`PATCH /config`).
    pub async fn set(&self, key: &str, value: Value) -> Result<()> {
        let url = &self.urls[0];
        let r = self.http.patch(format!("{url}/config")).json(&json!({ key: value })).send().await?;
        if !r.status().is_success() {
            bail!("PATCH {url}/config {key}: {}", r.status());
        }
        Ok(())
    }
}

/// The Patroni settings that decide the gap, as its `/config` says.
pub fn patroni_settings(config: &Value) -> Value {
    let pick = |k: &str| config.get(k).cloned().unwrap_or(Value::Null);
    json!({
        "ttl": pick("ttl"),
        "loop_wait": pick("loop_wait"),
        "retry_timeout": pick("retry_timeout"),
        "primary_start_timeout": pick("primary_start_timeout"),
        "synchronous_mode": pick("synchronous_mode"),
    })
}

async fn admin(client: &mongodb::Client, command: Document) -> Result<Document> {
    let name = command.keys().next().cloned().unwrap_or_default();
    client.database("admin").run_command(command).await.with_context(|| format!("MongoDB {name}"))
}

/// The primary's `host:port`, as `hello` says.
pub async fn mongo_primary(client: &mongodb::Client) -> Result<Option<String>> {
    let hello = admin(client, doc! {"hello": 1}).await?;
    Ok(hello.get_str("primary").ok().map(str::to_owned))
}

/// `electionTimeoutMillis` and `heartbeatIntervalMillis` from `replSetGetConfig`.
pub async fn mongo_settings(client: &mongodb::Client) -> Result<Value> {
    let config = admin(client, doc! {"replSetGetConfig": 1}).await?;
    let settings = config.get_document("config").and_then(|c| c.get_document("settings")).ok();
    let number = |k: &str| settings.and_then(|s| s.get(k)).and_then(bson_number).map_or(Value::Null, Value::from);
    Ok(json!({
        "electionTimeoutMillis": number("electionTimeoutMillis"),
        "heartbeatIntervalMillis": number("heartbeatIntervalMillis"),
        "catchUpTimeoutMillis": number("catchUpTimeoutMillis"),
    }))
}

fn bson_number(b: &Bson) -> Option<f64> {
    match b {
        Bson::Int32(v) => Some(f64::from(*v)),
        Bson::Int64(v) => Some(*v as f64),
        Bson::Double(v) => Some(*v),
        _ => None,
    }
}

/// Every member's `name` → `stateStr`, and the last election's reason and date as the primary
/// reports them (`electionCandidateMetrics`).
pub async fn mongo_status(client: &mongodb::Client) -> Result<Value> {
    let status = admin(client, doc! {"replSetGetStatus": 1}).await?;
    let members: serde_json::Map<String, Value> = status
        .get_array("members")
        .map(|ms| {
            ms.iter()
                .filter_map(Bson::as_document)
                .filter_map(|m| Some((m.get_str("name").ok()?.to_owned(), Value::from(m.get_str("stateStr").ok()?))))
                .collect()
        })
        .unwrap_or_default();
    let election = status.get_document("electionCandidateMetrics").ok();
    let reason = election.and_then(|e| e.get_str("lastElectionReason").ok()).map(str::to_owned);
    let date = election.and_then(|e| e.get_datetime("lastElectionDate").ok());
    Ok(json!({
        "members": members,
        "last_election_reason": reason,
        "last_election_date": date.map(|d| d.to_string()),
        "last_election_ms": date.map(|d| d.timestamp_millis()),
    }))
}

/// When the newest timeline of Patroni's `/history` began (`[timeline, lsn, reason, timestamp,
/// new_leader]`, the timestamp like `2026-12-07T12:27:38.526424+00:00`), in ms since 1970.
pub fn patroni_promoted_ms(history: &Value) -> Option<i64> {
    let text = history.as_array()?.last()?.get(3)?.as_str()?;
    let utc = text.strip_suffix("+00:00")?;
    orders_core::Timestamp::parse(&format!("{}Z", utc.get(..23)?)).ok().map(orders_core::Timestamp::millis)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patroni_history_gives_the_newest_promotion() {
        let history = json!([
            [1, 76942632, "no recovery target specified", "2026-12-07T12:27:38.526424+00:00", "pg2"],
            [2, 78443232, "no recovery target specified", "2026-12-07T12:38:01.100000+00:00", "pg3"]
        ]);
        let at = orders_core::Timestamp::parse("2026-12-07T12:38:01.100Z").map(orders_core::Timestamp::millis);
        assert_eq!(patroni_promoted_ms(&history), at.ok());
        assert_eq!(patroni_promoted_ms(&json!([])), None);
        assert_eq!(patroni_promoted_ms(&json!([[1, 2, "x", "2026-12-07T12:38:01+02:00", "pg3"]])), None);
    }
}
