//! The figures of one `/diagnostics` answer that explain a result, read from the services' typed
//! reports (`orders_pg::diagnostics::Diagnostics`, `orders_mongo::diagnostics::Diagnostics`): for
//! PostgreSQL the table counters, WAL position, GIN pending list, relation sizes, the product
//! query's plans and the effective settings; for MongoDB the opcounters, journal (WiredTiger log)
//! counters, collection and index sizes, the product query's plan and the write concern. An answer
//! that does not parse (an error page, a report of another shape) gives empty figures.

use orders_bench_model::explain::Plan;
use orders_mongo::diagnostics::{self as mongo, Section};
use orders_pg::diagnostics::{self as pg, TableCounters};
use serde::Serialize;
use serde_json::{Number, Value};
use std::collections::BTreeMap;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct PgSnapshot {
    pub wal_bytes: Option<f64>,
    /// `pg_stat_user_tables` counters of `orders`.
    pub table: TableCounters,
    pub pending_pages: Option<f64>,
    pub pending_tuples: Option<f64>,
    pub table_bytes: Option<f64>,
    pub toast_bytes: Option<f64>,
    pub indexes_bytes: Option<f64>,
    pub index_bytes: BTreeMap<String, f64>,
    pub generic_plan: Plan,
    pub custom_plan: Plan,
    /// Plan counts of the prepared product statement on the connection that answered.
    pub product_generic_plans: Option<f64>,
    pub product_custom_plans: Option<f64>,
    /// The product search's plan counts over every pooled connection read (`pool_plans`).
    pub pool_plans: pg::PoolPlans,
    pub settings: pg::Settings,
    pub gin_fastupdate: Option<String>,
    pub server_version: Option<String>,
    /// The service's own runtime (`runtime`).
    pub runtime: Option<String>,
}

/// The service's tokio runtime as its `/diagnostics` reports it (`"runtime": {"flavor":
/// "current_thread", "worker_threads": 1}`), in words: `current_thread, 1 worker thread`.
fn runtime(v: &Value) -> Option<String> {
    let runtime = v.get("runtime")?;
    let flavor = runtime.get("flavor")?.as_str()?;
    let threads = runtime.get("worker_threads")?.as_u64()?;
    Some(format!("{flavor}, {threads} worker thread{}", if threads == 1 { "" } else { "s" }))
}

/// An integer figure as the explaining arithmetic uses it.
fn float(value: Option<i64>) -> Option<f64> {
    value.map(|v| v as f64)
}

/// A server's figure (integer or not) as a float.
fn figure(value: Option<&Number>) -> Option<f64> {
    value.and_then(Number::as_f64)
}

/// A struct's fields by their serialized names, with their values as text (numbers and booleans
/// written out, absent ones left out): the settings as `result.json` records them.
fn as_text_map(value: &impl Serialize) -> BTreeMap<String, String> {
    let Ok(Value::Object(fields)) = serde_json::to_value(value) else { return BTreeMap::new() };
    fields
        .into_iter()
        .filter_map(|(name, value)| match value {
            Value::Null => None,
            Value::String(text) => Some((name, text)),
            other => Some((name, other.to_string())),
        })
        .collect()
}

impl PgSnapshot {
    pub fn from_json(v: &Value) -> Self {
        let snapshot = Self::from(&serde_json::from_value::<pg::Diagnostics>(v.clone()).unwrap_or_default());
        Self { runtime: runtime(v), ..snapshot }
    }

    pub fn from(d: &pg::Diagnostics) -> Self {
        let plan = |explained: Option<&pg::ExplainedPlan>| Plan {
            nodes: explained.map(|p| p.nodes.clone()).unwrap_or_default(),
            total_cost: explained.and_then(|p| p.total_cost),
        };
        let product = d.product_query.as_ref();
        let prepared = d.product_statement();
        let (gin, sizes) = (d.gin_index.as_ref(), d.sizes.as_ref());
        Self {
            wal_bytes: float(d.wal.as_ref().and_then(|w| w.bytes)),
            table: d.table.clone().unwrap_or_default(),
            pending_pages: float(gin.and_then(|g| g.pending_pages)),
            pending_tuples: float(gin.and_then(|g| g.pending_tuples)),
            table_bytes: float(sizes.and_then(|s| s.table_bytes)),
            toast_bytes: float(sizes.and_then(|s| s.toast_bytes)),
            indexes_bytes: float(sizes.and_then(|s| s.indexes_bytes)),
            index_bytes: sizes
                .map(|s| s.index_bytes.iter().map(|(name, bytes)| (name.clone(), *bytes as f64)).collect())
                .unwrap_or_default(),
            generic_plan: plan(product.map(|p| &p.generic_plan)),
            custom_plan: plan(product.map(|p| &p.custom_plan)),
            product_generic_plans: float(prepared.and_then(|p| p.generic_plans)),
            product_custom_plans: float(prepared.and_then(|p| p.custom_plans)),
            pool_plans: d.pool_plans.clone().unwrap_or_default(),
            settings: d.settings.clone().unwrap_or_default(),
            gin_fastupdate: gin.and_then(|g| g.fastupdate.clone()),
            server_version: d.server_version.clone(),
            runtime: None,
        }
    }

    /// One of the table counters, e.g. `counter(|t| t.seq_scan)`.
    pub fn counter(&self, of: fn(&TableCounters) -> Option<i64>) -> Option<f64> {
        float(of(&self.table))
    }

    /// The settings as `result.json` records them, by their names in `/diagnostics`, with the GIN
    /// index's `fastupdate` (`gin_fastupdate`) and the `server_version`.
    pub fn settings_map(&self) -> BTreeMap<String, String> {
        let mut settings = as_text_map(&self.settings);
        if let Some(fastupdate) = &self.gin_fastupdate {
            settings.insert("gin_fastupdate".into(), fastupdate.clone());
        }
        if let Some(version) = &self.server_version {
            settings.insert("server_version".into(), version.clone());
        }
        settings
    }

    #[cfg(test)]
    fn setting(&self, name: &str) -> String {
        self.settings_map().remove(name).unwrap_or_else(|| "?".into())
    }
}

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

#[cfg(test)]
pub mod samples {
    //! Trimmed `/diagnostics` answers of the two services as they really look.
    use serde_json::{Value, json};

    pub fn pg(seq_scan: i64, wal: i64, pending_pages: i64, live: i64) -> Value {
        json!({
            "backend": "postgres",
            "server_version": "18.6",
            "settings": {"plan_cache_mode": "auto", "synchronous_commit": "on", "fsync": "on",
                         "statement_mode": "prepared", "pool_size": 16},
            "gin_index": {"name": "orders_items", "fastupdate": "on", "pending_pages": pending_pages, "pending_tuples": pending_pages * 30},
            "table": {"seq_scan": seq_scan, "seq_tup_read": seq_scan * 1000, "idx_scan": 10, "n_tup_ins": live,
                      "n_tup_upd": 0, "n_tup_hot_upd": 0, "n_live_tup": live, "n_dead_tup": 0},
            "sizes": {"table_bytes": 8192 * live / 8, "toast_bytes": 8192, "indexes_bytes": 4096 * live / 8,
                      "index_bytes": {"orders_customer": 1000, "orders_items": 2000, "orders_pkey": 1000}},
            "wal": {"lsn": "0/1", "bytes": wal},
            "prepared_statements": [
                {"statement": "SELECT doc FROM orders WHERE doc->'items' @> $1 LIMIT $2", "generic_plans": 0, "custom_plans": 7}
            ],
            "product_query": {
                "statement": "SELECT doc FROM orders WHERE doc->'items' @> $1 LIMIT $2",
                "generic_plan": {"nodes": ["Limit", "Bitmap Heap Scan", "Bitmap Index Scan on orders_items"], "total_cost": 628.1},
                "custom_plan": {"nodes": ["Limit", "Bitmap Heap Scan", "Bitmap Index Scan on orders_items"], "total_cost": 56.4}
            }
        })
    }

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
    fn postgres_figures_are_read_from_their_sections() {
        let s = PgSnapshot::from_json(&samples::pg(3, 1_000_000, 12, 5000));
        assert_eq!(s.counter(|t| t.seq_scan), Some(3.0));
        assert_eq!(s.wal_bytes, Some(1_000_000.0));
        assert_eq!(s.pending_pages, Some(12.0));
        assert_eq!(s.index_bytes["orders_items"], 2000.0);
        assert_eq!(s.product_custom_plans, Some(7.0));
        assert_eq!(s.setting("synchronous_commit"), "on");
        assert_eq!(s.setting("pool_size"), "16");
        assert_eq!(s.setting("gin_fastupdate"), "on");
        assert_eq!(
            s.generic_plan.describe(),
            "Limit → Bitmap Heap Scan → Bitmap Index Scan on orders_items (cost 628)"
        );
    }

    #[test]
    fn mongo_figures_are_read_from_their_sections() {
        let s = MongoSnapshot::from_json(&samples::mongo(5000, json!(true), "orders"));
        assert_eq!((s.count, s.write_j, s.write_w.as_deref()), (Some(5000.0), Some(true), Some("majority")));
        assert_eq!(s.journal_bytes, Some(1000.0));
        assert_eq!(s.plan(), "LIMIT → FETCH → IXSCAN on orders_items");
        assert_eq!(MongoSnapshot::from_json(&samples::mongo(1, json!(null), "x")).write_j, None);
    }

    #[test]
    fn a_missing_section_gives_empty_figures_not_an_error() {
        let s = PgSnapshot::from_json(&json!({"backend": "postgres"}));
        assert_eq!((s.wal_bytes, s.table.seq_scan), (None, None));
        assert_eq!(s.generic_plan.describe(), "not reported");
    }
}
