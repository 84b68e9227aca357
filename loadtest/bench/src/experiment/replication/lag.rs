//! Replication lag during a write window, sampled from each primary four times a second: for every
//! PostgreSQL standby `pg_stat_replication.replay_lag` (from the primary's flush of WAL to the
//! standby's replay of it), for every MongoDB secondary the primary's `lastAppliedWallTime` minus
//! the secondary's as the primary last heard it (`replSetGetStatus`). Both say how far behind a
//! member's reads are; neither is what a write waited for (the synchronous standby, the majority).

use super::counters::{Member, Probe};
use anyhow::{Context, Result};
use mongodb::bson::{Bson, Document, doc};
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

const EVERY: Duration = Duration::from_millis(250);

/// One member's lag over a window, in milliseconds.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Lag {
    pub samples: usize,
    pub median_ms: f64,
    pub max_ms: f64,
}

impl Lag {
    fn of(mut values: Vec<f64>) -> Lag {
        values.sort_by(f64::total_cmp);
        let median_ms = values.get(values.len() / 2).copied().unwrap_or(0.0);
        Lag { samples: values.len(), median_ms, max_ms: values.last().copied().unwrap_or(0.0) }
    }
}

/// Runs `work` and samples the lag of every standby and secondary until it ends (both in this
/// task: the sampler waits on its queries while `work` goes on). Member → its lag; empty for
/// single servers.
pub async fn during<T>(probe: &Probe, work: impl Future<Output = T>) -> (T, BTreeMap<String, Lag>) {
    let done = AtomicBool::new(false);
    let work = async {
        let out = work.await;
        done.store(true, Ordering::Relaxed);
        out
    };
    let sample = async {
        let mut seen: BTreeMap<String, Vec<f64>> = BTreeMap::new();
        while !done.load(Ordering::Relaxed) {
            tokio::time::sleep(EVERY).await;
            // A failed sample is a missing sample: the window's own figures do not depend on it.
            if let Ok(lags) = probe.lag().await {
                for (member, ms) in lags {
                    seen.entry(member).or_default().push(ms);
                }
            }
        }
        seen
    };
    let (out, seen) = tokio::join!(work, sample);
    (out, seen.into_iter().map(|(member, values)| (member, Lag::of(values))).collect())
}

impl Probe {
    /// Every standby's and secondary's lag now, by member name (`pg2`, `mongo3`).
    pub async fn lag(&self) -> Result<Vec<(String, f64)>> {
        let mut out = Vec::new();
        let standbys = self
            .pg
            .query(
                "SELECT host(client_addr), COALESCE(EXTRACT(EPOCH FROM replay_lag) * 1000, 0)::float8 \
                 FROM pg_stat_replication WHERE client_addr IS NOT NULL",
                &[],
            )
            .await
            .context("reading pg_stat_replication")?;
        for row in standbys {
            let address: String = row.get(0);
            out.extend(member_at(&self.members, true, &address).map(|name| (name, row.get(1))));
        }
        let status = self.mongo.database("admin").run_command(doc! {"replSetGetStatus": 1}).await;
        // A single server answers NoReplicationEnabled: it has no secondaries to lag.
        if let Ok(status) = status {
            for (host, ms) in secondaries_behind(&status) {
                let address = host.rsplit_once(':').map_or(host.as_str(), |(address, _)| address);
                out.extend(member_at(&self.members, false, address).map(|name| (name, ms)));
            }
        }
        Ok(out)
    }
}

fn member_at(members: &[Member], postgres: bool, address: &str) -> Option<String> {
    let member = members.iter().find(|m| m.postgres == postgres && m.address.as_deref() == Some(address));
    member.map(|m| m.name.clone())
}

/// (secondary's `name`, milliseconds its `lastAppliedWallTime` is behind the primary's).
fn secondaries_behind(status: &Document) -> Vec<(String, f64)> {
    let wall = |member: &Document| match member.get("lastAppliedWallTime") {
        Some(Bson::DateTime(at)) => Some(at.timestamp_millis()),
        _ => None,
    };
    let members: Vec<&Document> =
        status.get_array("members").map(|m| m.iter().filter_map(Bson::as_document).collect()).unwrap_or_default();
    let primary = members.iter().find(|m| m.get_str("stateStr") == Ok("PRIMARY")).and_then(|m| wall(m));
    let Some(primary) = primary else { return Vec::new() };
    members
        .iter()
        .filter(|m| m.get_str("stateStr") == Ok("SECONDARY"))
        .filter_map(|m| Some((m.get_str("name").ok()?.to_owned(), (primary - wall(m)?).max(0) as f64)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use mongodb::bson::DateTime;

    #[test]
    fn a_secondary_lags_by_the_applied_wall_times_difference() {
        let at = |ms: i64| DateTime::from_millis(1_000_000 + ms);
        let status = doc! {"members": [
            {"name": "198.18.42.11:27017", "stateStr": "PRIMARY", "lastAppliedWallTime": at(900)},
            {"name": "198.18.42.12:27017", "stateStr": "SECONDARY", "lastAppliedWallTime": at(860)},
            {"name": "198.18.42.13:27017", "stateStr": "SECONDARY", "lastAppliedWallTime": at(950)},
            {"name": "198.18.42.14:27017", "stateStr": "STARTUP2"},
        ]};
        let behind = secondaries_behind(&status);
        assert_eq!(behind, vec![("198.18.42.12:27017".into(), 40.0), ("198.18.42.13:27017".into(), 0.0)]);
        assert!(secondaries_behind(&doc! {"members": [{"name": "x", "stateStr": "SECONDARY"}]}).is_empty());
    }

    #[test]
    fn a_members_lag_is_summarised_by_its_median_and_maximum() {
        assert_eq!(Lag::of(vec![3.0, 1.0, 7.0, 2.0]), Lag { samples: 4, median_ms: 3.0, max_ms: 7.0 });
        assert_eq!(Lag::of(Vec::new()), Lag::default());
    }
}
