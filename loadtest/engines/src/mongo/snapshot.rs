//! The figures of one orders-mongo `/diagnostics` answer that explain a result, read from its
//! typed report (`orders_mongo::diagnostics::Diagnostics`): the opcounters, journal (WiredTiger
//! log) counters, collection and index sizes, the product query's plan and the write concern. An
//! answer that does not parse gives empty figures.

use crate::figures::{figure, runtime};
use orders_mongo::diagnostics::{self as mongo, Section};
use serde_json::Value;
use std::collections::BTreeMap;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct MongoSnapshot {
    pub opcounters: BTreeMap<String, f64>,
    pub journal_bytes: Option<f64>,
    pub journal_syncs: Option<f64>,
    pub count: Option<f64>,
    /// Uncompressed BSON bytes of the documents.
    pub data_bytes: Option<f64>,
    pub storage_bytes: Option<f64>,
    pub index_bytes_total: Option<f64>,
    pub index_bytes: BTreeMap<String, f64>,
    pub cache_bytes: Option<f64>,
    pub plan_stages: Vec<String>,
    pub plan_indexes: Vec<String>,
    pub database: Option<String>,
    pub version: Option<String>,
    pub topology: Option<String>,
    /// `w` of the write concern sent with every write (`majority`, `1`, ...), `None` if unset.
    pub write_w: Option<String>,
    /// `j` of that write concern, `None` if unset.
    pub write_j: Option<bool>,
    pub journal_enabled: Option<bool>,
    pub pool_size: Option<f64>,
    /// The service's own runtime (`runtime`).
    pub runtime: Option<String>,
}

impl MongoSnapshot {
    pub fn from_json(v: &Value) -> Self {
        let snapshot = Self::from(&serde_json::from_value::<mongo::Diagnostics>(v.clone()).unwrap_or_default());
        Self { runtime: runtime(v), ..snapshot }
    }

    pub fn from(d: &mongo::Diagnostics) -> Self {
        let settings = d.settings.as_ref();
        let journal = settings.and_then(|s| s.journal.as_ref());
        let log = read(journal.and_then(|j| j.wiredtiger_log.as_ref()));
        let options = read(journal.and_then(|j| j.startup_options.as_ref()));
        let sent = settings.and_then(|s| s.write_concern.as_ref()).and_then(|w| w.sent_with_every_write.as_ref());
        let collection = read(d.collection.as_ref());
        let opcounters = read(d.opcounters.as_ref());
        let cache = read(d.wiredtiger_cache.as_ref());
        let plan = read(d.product_query.as_ref());
        let server = d.server.as_ref();
        let topology = read(server.and_then(|s| s.topology.as_ref()));
        Self {
            opcounters: opcounters.map(numbers).unwrap_or_default(),
            journal_bytes: figure(log.and_then(|l| l.log_bytes_written.as_ref())),
            journal_syncs: figure(log.and_then(|l| l.log_sync_operations.as_ref())),
            count: figure(collection.and_then(|c| c.count.as_ref())),
            data_bytes: figure(collection.and_then(|c| c.size.as_ref())),
            storage_bytes: figure(collection.and_then(|c| c.storage_size.as_ref())),
            index_bytes_total: figure(collection.and_then(|c| c.total_index_size.as_ref())),
            index_bytes: collection
                .and_then(|c| c.index_sizes.as_ref())
                .map(|sizes| sizes.iter().filter_map(|(name, n)| Some((name.clone(), n.as_f64()?))).collect())
                .unwrap_or_default(),
            cache_bytes: figure(cache.and_then(|c| c.bytes_currently_in_cache.as_ref())),
            plan_stages: plan.map(|p| p.stages.clone()).unwrap_or_default(),
            plan_indexes: plan.map(|p| p.index_names.clone()).unwrap_or_default(),
            database: settings.and_then(|s| s.database.clone()),
            version: server.and_then(|s| s.version.clone()),
            topology: topology.and_then(|t| t.kind.clone()),
            write_w: sent.and_then(|w| w.w.as_ref()).map(ToString::to_string),
            write_j: sent.and_then(|w| w.j),
            journal_enabled: options.and_then(|o| o.enabled),
            pool_size: settings.and_then(|s| s.pool.as_ref()).and_then(|p| p.max_pool_size_per_server).map(f64::from),
            runtime: None,
        }
    }

    pub fn plan(&self) -> String {
        if self.plan_stages.is_empty() {
            return "not reported".into();
        }
        let on =
            if self.plan_indexes.is_empty() { String::new() } else { format!(" on {}", self.plan_indexes.join(", ")) };
        format!("{}{on}", self.plan_stages.join(" → "))
    }
}

/// A section the service read (not one the server refused).
fn read<T>(section: Option<&Section<T>>) -> Option<&T> {
    section.and_then(Section::read)
}

/// Every opcounter that is a number, by name (the named ones and any other the server sent).
fn numbers(opcounters: &mongo::Opcounters) -> BTreeMap<String, f64> {
    let Ok(Value::Object(fields)) = serde_json::to_value(opcounters) else { return BTreeMap::new() };
    fields.into_iter().filter_map(|(name, value)| Some((name, value.as_f64()?))).collect()
}

#[cfg(any(test, feature = "test-support"))]
pub mod samples {
    //! A trimmed `/diagnostics` answer of orders-mongo as it really looks.
    use serde_json::{Value, json};

    pub fn mongo(count: i64, j: Value, database: &str) -> Value {
        json!({
            "backend": "mongodb",
            "server": {"version": "6.0.5", "topology": {"kind": "standalone"}},
            "settings": {
                "database": database,
                "write_concern": {"sent_with_every_write": {"w": "majority", "j": j}},
                "journal": {"startup_options": {"enabled": true},
                            "wiredtiger_log": {"log_sync_operations": 10, "log_bytes_written": 1000}},
                "pool": {"max_pool_size_per_server": 16}
            },
            "collection": {"count": count, "size": count * 600, "storageSize": count * 200, "totalIndexSize": count * 50,
                           "indexSizes": {"_id_": count * 20, "orders_items": count * 30}},
            "replication": {"role": "standalone", "write_concern": {"w": "majority", "j": j, "source": "sent with every write"},
                            "acknowledged_by": 1, "write_waits_for": "this one server (a standalone: majority is itself)"},
            "opcounters": {"insert": 5, "query": 7, "update": 0, "delete": 0, "getmore": 0, "command": 100},
            "product_query": {"stages": ["LIMIT", "FETCH", "IXSCAN"], "index_names": ["orders_items"]}
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn mongo_figures_are_read_from_their_sections() {
        let s = MongoSnapshot::from_json(&samples::mongo(5000, json!(true), "orders"));
        assert_eq!((s.count, s.write_j, s.write_w.as_deref()), (Some(5000.0), Some(true), Some("majority")));
        assert_eq!(s.journal_bytes, Some(1000.0));
        assert_eq!(s.plan(), "LIMIT → FETCH → IXSCAN on orders_items");
        assert_eq!(MongoSnapshot::from_json(&samples::mongo(1, json!(null), "x")).write_j, None);
    }
}
