//! The figures of one orders-pg `/diagnostics` answer that explain a result, read from its typed
//! report (`orders_pg::diagnostics::Diagnostics`): the table counters, WAL position, GIN pending
//! list, relation sizes, the product query's plans and the effective settings. An answer that does
//! not parse (an error page, a report of another shape) gives empty figures.

use crate::figures::{as_text_map, float, runtime};
use orders_bench_model::explain::Plan;
use orders_pg::diagnostics::{self as pg, TableCounters};
use serde_json::Value;
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

#[cfg(any(test, feature = "test-support"))]
pub mod samples {
    //! A trimmed `/diagnostics` answer of orders-pg as it really looks.
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
            "replication": {"server_addr": "127.0.0.1", "server_port": 55432, "in_recovery": false,
                            "synchronous_standby_names": "", "synchronous_commit": "on", "standbys": [],
                            "commit_waits_for": "the WAL flush on this server only"},
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
    fn a_missing_section_gives_empty_figures_not_an_error() {
        let s = PgSnapshot::from_json(&json!({"backend": "postgres"}));
        assert_eq!((s.wal_bytes, s.table.seq_scan), (None, None));
        assert_eq!(s.generic_plan.describe(), "not reported");
    }
}
