//! The figures of one `/diagnostics` answer that explain a result, read into types: for
//! PostgreSQL the table counters, WAL position, GIN pending list, relation sizes, the product
//! query's plans and the effective settings; for MongoDB the opcounters, journal (WiredTiger log)
//! counters, collection and index sizes, the product query's plan and the write concern.

use super::{number, strings, text};
use crate::model::explain::Plan;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PgSnapshot {
    pub wal_bytes: Option<f64>,
    /// `pg_stat_user_tables` counters of `orders` by name (seq_scan, n_tup_hot_upd, ...).
    pub table: BTreeMap<String, f64>,
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
    pub settings: BTreeMap<String, String>,
}

impl PgSnapshot {
    pub fn from_json(v: &Value) -> Self {
        let map = |pointer: &str| -> BTreeMap<String, f64> {
            v.pointer(pointer)
                .and_then(Value::as_object)
                .map(|o| o.iter().filter_map(|(k, x)| Some((k.clone(), x.as_f64()?))).collect())
                .unwrap_or_default()
        };
        let plan = |name: &str| Plan {
            nodes: strings(v, &format!("/product_query/{name}/nodes")),
            total_cost: number(v, &format!("/product_query/{name}/total_cost")),
        };
        let product_statement = text(v, "/product_query/statement");
        let prepared = v.pointer("/prepared_statements").and_then(Value::as_array).and_then(|statements| {
            statements.iter().find(|s| product_statement.is_some() && text(s, "/statement") == product_statement)
        });
        let settings = v
            .pointer("/settings")
            .and_then(Value::as_object)
            .map(|o| o.iter().filter_map(|(k, x)| Some((k.clone(), text(x, "")?))).collect())
            .unwrap_or_default();
        let mut snapshot = Self {
            wal_bytes: number(v, "/wal/bytes"),
            table: map("/table"),
            pending_pages: number(v, "/gin_index/pending_pages"),
            pending_tuples: number(v, "/gin_index/pending_tuples"),
            table_bytes: number(v, "/sizes/table_bytes"),
            toast_bytes: number(v, "/sizes/toast_bytes"),
            indexes_bytes: number(v, "/sizes/indexes_bytes"),
            index_bytes: map("/sizes/index_bytes"),
            generic_plan: plan("generic_plan"),
            custom_plan: plan("custom_plan"),
            product_generic_plans: prepared.and_then(|p| number(p, "/generic_plans")),
            product_custom_plans: prepared.and_then(|p| number(p, "/custom_plans")),
            settings,
        };
        if let Some(fastupdate) = text(v, "/gin_index/fastupdate") {
            snapshot.settings.insert("gin_fastupdate".into(), fastupdate);
        }
        if let Some(version) = text(v, "/server_version") {
            snapshot.settings.insert("server_version".into(), version);
        }
        snapshot
    }

    pub fn counter(&self, name: &str) -> Option<f64> {
        self.table.get(name).copied()
    }

    pub fn setting(&self, name: &str) -> &str {
        self.settings.get(name).map_or("?", String::as_str)
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
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
}

impl MongoSnapshot {
    pub fn from_json(v: &Value) -> Self {
        let map = |pointer: &str| -> BTreeMap<String, f64> {
            v.pointer(pointer)
                .and_then(Value::as_object)
                .map(|o| o.iter().filter_map(|(k, x)| Some((k.clone(), x.as_f64()?))).collect())
                .unwrap_or_default()
        };
        Self {
            opcounters: map("/opcounters"),
            journal_bytes: number(v, "/settings/journal/wiredtiger_log/log_bytes_written"),
            journal_syncs: number(v, "/settings/journal/wiredtiger_log/log_sync_operations"),
            count: number(v, "/collection/count"),
            data_bytes: number(v, "/collection/size"),
            storage_bytes: number(v, "/collection/storageSize"),
            index_bytes_total: number(v, "/collection/totalIndexSize"),
            index_bytes: map("/collection/indexSizes"),
            cache_bytes: number(v, "/wiredtiger_cache/bytes_currently_in_cache"),
            plan_stages: strings(v, "/product_query/stages"),
            plan_indexes: strings(v, "/product_query/index_names"),
            database: text(v, "/settings/database"),
            version: text(v, "/server/version"),
            topology: text(v, "/server/topology/kind"),
            write_w: text(v, "/settings/write_concern/sent_with_every_write/w"),
            write_j: v.pointer("/settings/write_concern/sent_with_every_write/j").and_then(Value::as_bool),
            journal_enabled: v.pointer("/settings/journal/startup_options/enabled").and_then(Value::as_bool),
            pool_size: number(v, "/settings/pool/max_pool_size_per_server"),
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
        assert_eq!(s.counter("seq_scan"), Some(3.0));
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
        assert_eq!((s.wal_bytes, s.table.len()), (None, 0));
        assert_eq!(s.generic_plan.describe(), "not reported");
    }
}
