//! The figures that explain a run, as `result.json` records them: per database, what its server
//! did during the run (WAL or journal per write, table, index and collection growth, scans, the
//! product query's plans) and the settings it ran with. Each engine's backend computes them from the
//! `/diagnostics` snapshots.

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A size before and after the run, bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Growth {
    pub before: Option<f64>,
    pub after: Option<f64>,
}

impl Growth {
    pub fn of(before: Option<f64>, after: Option<f64>) -> Self {
        Self { before, after }
    }

    pub fn delta(&self) -> Option<f64> {
        Some(self.after? - self.before?)
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    pub nodes: Vec<String>,
    pub total_cost: Option<f64>,
}

impl Plan {
    pub fn describe(&self) -> String {
        if self.nodes.is_empty() {
            return "not reported".into();
        }
        let cost = self.total_cost.map(|c| format!(" (cost {c:.0})")).unwrap_or_default();
        format!("{}{cost}", self.nodes.join(" → "))
    }
}

/// A merge of the GIN pending list seen between two polls, in seconds after the load began.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PendingMerge {
    pub from_s: f64,
    pub to_s: f64,
    pub pages_before: f64,
    pub pages_after: f64,
}

impl PendingMerge {
    /// Whether the merge belongs to the step that ran from `start_s` to `end_s`: the polls come once
    /// a step, a moment after its end, so the middle of the interval between them lies in one step.
    pub fn within(&self, start_s: f64, end_s: f64) -> bool {
        (start_s..end_s).contains(&((self.from_s + self.to_s) / 2.0))
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PgExplain {
    pub write_requests: u64,
    pub wal_bytes: Option<f64>,
    pub wal_bytes_per_write: Option<f64>,
    /// From `pg_stat_wal` when the runner reaches the database (server-wide, like the bytes).
    #[serde(default)]
    pub wal_records: Option<f64>,
    #[serde(default)]
    pub wal_records_per_write: Option<f64>,
    /// Full-page images: the first change of a page after a checkpoint logs the whole 8 KiB page.
    #[serde(default)]
    pub wal_fpi: Option<f64>,
    #[serde(default)]
    pub wal_fpi_per_write: Option<f64>,
    /// WAL flushes (fsyncs) during the run, server-wide.
    #[serde(default)]
    pub wal_flushes: Option<f64>,
    pub inserts: Option<f64>,
    pub updates: Option<f64>,
    pub hot_updates: Option<f64>,
    /// HOT updates / updates, 0..1.
    pub hot_share: Option<f64>,
    pub seq_scans: Option<f64>,
    pub seq_tup_read: Option<f64>,
    pub rows_per_seq_scan: Option<f64>,
    pub idx_scans: Option<f64>,
    pub max_pending_pages: Option<f64>,
    pub max_pending_tuples: Option<f64>,
    /// Each time the GIN pending list was found shorter than at the poll before: one insert (or
    /// autovacuum) merged it into the index tree between the two polls.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pending_merges: Vec<PendingMerge>,
    pub dead_tuples_after: Option<f64>,
    pub table: Growth,
    pub toast: Growth,
    pub indexes: Growth,
    pub index: BTreeMap<String, Growth>,
    pub generic_plan_before: Plan,
    pub generic_plan_after: Plan,
    pub custom_plan_after: Plan,
    /// Every distinct generic plan shape seen before, during and after the run.
    pub generic_plans_seen: Vec<String>,
    /// Generic / custom plans the prepared product statement has used on the pooled connection that
    /// answered `/diagnostics` after the run, since that connection opened (snapshots may come from
    /// different connections, so no difference is taken).
    pub product_generic_plans: Option<f64>,
    pub product_custom_plans: Option<f64>,
    /// The same summed over every pooled connection after the run (`pool_plans`), and how many
    /// connections had used a generic plan of the product search.
    #[serde(default)]
    pub pool_generic_plans: Option<f64>,
    #[serde(default)]
    pub pool_custom_plans: Option<f64>,
    #[serde(default)]
    pub pool_connections_using_generic: Option<f64>,
    #[serde(default)]
    pub pool_connections_read: Option<f64>,
    /// Which plan ran each sequential scan (the plan log), when it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scans: Option<crate::plans::ScanAttribution>,
    pub settings: BTreeMap<String, String>,
}

impl PgExplain {
    /// The WAL figures `pg_stat_wal` gave over the run (the runner reads them itself).
    pub fn add_wal_stats(&mut self, records: f64, fpi: f64, flushes: Option<f64>) {
        self.wal_flushes = flushes;
        self.wal_records = Some(records);
        self.wal_fpi = Some(fpi);
        self.wal_records_per_write = per_write(Some(records), self.write_requests);
        self.wal_fpi_per_write = per_write(Some(fpi), self.write_requests);
    }
}

/// `total` per write request; `None` without writes.
pub fn per_write(total: Option<f64>, count: u64) -> Option<f64> {
    if count == 0 { None } else { total.map(|t| t / count as f64) }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MongoExplain {
    pub write_requests: u64,
    pub opcounters: BTreeMap<String, f64>,
    pub journal_bytes: Option<f64>,
    pub journal_bytes_per_write: Option<f64>,
    pub journal_syncs: Option<f64>,
    pub count: Growth,
    pub data: Growth,
    pub storage: Growth,
    pub indexes: Growth,
    pub index: BTreeMap<String, Growth>,
    pub plan: String,
    pub settings: BTreeMap<String, String>,
}

/// Per target (by name, in the round's order), what its database did: `{"pg": {...}, "mongo":
/// {...}}` as before there could be more.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Explain(pub IndexMap<String, EngineExplain>);

/// One database's explaining figures: typed for the engines the report knows (the published
/// studies' findings are about them), as the backend recorded them for any other.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum EngineExplain {
    Pg(Box<PgExplain>),
    Mongo(Box<MongoExplain>),
    /// Named figures of an engine the report shows as they are.
    Other(serde_json::Map<String, serde_json::Value>),
}

impl EngineExplain {
    pub fn as_pg(&self) -> Option<&PgExplain> {
        match self {
            EngineExplain::Pg(pg) => Some(pg),
            _ => None,
        }
    }

    pub fn as_mongo(&self) -> Option<&MongoExplain> {
        match self {
            EngineExplain::Mongo(mongo) => Some(mongo),
            _ => None,
        }
    }
}

impl Explain {
    /// The first PostgreSQL target's figures in the round's order: orders-pg's (the jsonb layout
    /// the studies' findings are about) wherever it ran; `pg_of` for a given target.
    pub fn pg(&self) -> Option<&PgExplain> {
        self.0.values().find_map(EngineExplain::as_pg)
    }

    pub fn pg_mut(&mut self) -> Option<&mut PgExplain> {
        self.0.values_mut().find_map(|e| match e {
            EngineExplain::Pg(pg) => Some(pg.as_mut()),
            _ => None,
        })
    }

    /// The first MongoDB target's figures in the round's order; `mongo_of` for a given target.
    pub fn mongo(&self) -> Option<&MongoExplain> {
        self.0.values().find_map(EngineExplain::as_mongo)
    }

    /// Target `name`'s figures, when it is a PostgreSQL target (orders-pg and the hybrid layout
    /// are both, each over a database of its own).
    pub fn pg_of(&self, name: &str) -> Option<&PgExplain> {
        self.0.get(name)?.as_pg()
    }

    /// Target `name`'s figures, when it is a MongoDB target.
    pub fn mongo_of(&self, name: &str) -> Option<&MongoExplain> {
        self.0.get(name)?.as_mongo()
    }

    /// The settings target `name` ran with, by name.
    pub fn settings(&self, name: &str) -> Option<&BTreeMap<String, String>> {
        match self.0.get(name)? {
            EngineExplain::Pg(pg) => Some(&pg.settings),
            EngineExplain::Mongo(mongo) => Some(&mongo.settings),
            EngineExplain::Other(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_engine_keeps_its_type_and_the_json_keeps_its_shape() {
        let mut explain = Explain::default();
        explain
            .0
            .insert("pg".into(), EngineExplain::Pg(Box::new(PgExplain { write_requests: 7, ..PgExplain::default() })));
        explain.0.insert("mongo".into(), EngineExplain::Mongo(Box::default()));
        let figures = serde_json::json!({"write requests": 3, "log bytes": 4096});
        explain.0.insert("third".into(), EngineExplain::Other(figures.as_object().cloned().unwrap_or_default()));
        let json = serde_json::to_value(&explain).expect("json");
        assert_eq!(json["pg"]["write_requests"], 7, "{json}");
        assert!(json["mongo"]["opcounters"].is_object(), "{json}");
        assert_eq!(json["third"]["log bytes"], 4096);
        let back: Explain = serde_json::from_value(json).expect("read back");
        assert_eq!(back, explain);
        assert_eq!(back.pg().map(|e| e.write_requests), Some(7));
        assert!(back.mongo().is_some() && back.settings("third").is_none());
    }
}
