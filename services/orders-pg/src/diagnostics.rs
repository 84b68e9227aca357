//! `/diagnostics` for Postgres: what the server reports, read on a pooled connection (so session
//! settings are the ones requests run with): version, effective settings, the GIN index's pending
//! list, `pg_stat_user_tables` counters, relation sizes, the WAL position, the product search's
//! plan counts over the pooled connections and its generic and custom plans, and whether the session
//! is encrypted (`pg_stat_ssl`). Its parts are public:
//! orders-pg-hybrid builds its report from the same readers.
//!
//! The report is the typed `Diagnostics`: the service serializes it and the bench runner
//! deserializes it, so a renamed field breaks the build of both rather than leaving a figure
//! silently "not reported". Every field is optional, so an older service's report still parses.

use crate::config::{PgConfig, setting_name};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use tokio_postgres::{Client, SimpleQueryMessage};

/// Settings read back with `current_setting`, as the server applies them to this session.
const SETTINGS: &[&str] = &[
    "plan_cache_mode",
    "synchronous_commit",
    "statement_timeout",
    "fsync",
    "full_page_writes",
    "wal_level",
    "shared_buffers",
    "work_mem",
    "max_connections",
    "jit",
    "shared_preload_libraries",
];

/// The product search as a request with the default limit runs it.
fn product_query(config: &PgConfig) -> &'static str {
    crate::sql::orders_by_product(config.limit_mode, orders_core::Limit::PRODUCT_DEFAULT).text
}

/// What `GET /diagnostics` answers (before the HTTP layer adds `pool`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Diagnostics {
    /// `postgres`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backend: Option<String>,
    /// How the orders are laid out: `jsonb` (orders-pg: the whole order in one document) or
    /// `hybrid` (orders-pg-hybrid: hot fields in typed columns, product ids in `order_items`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub layout: Option<String>,
    /// Who read the figures when it was not the service (`orders-bench` for the runner's samples).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// Why the figures are missing, when they are.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_version: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub settings: Option<Settings>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gin_index: Option<GinIndex>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub table: Option<TableCounters>,
    /// The hybrid layout's `order_items` (product ids), counted like `table`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub items_table: Option<TableCounters>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sizes: Option<Sizes>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wal: Option<Wal>,
    /// The member the pooled connection is on and what a commit waits for (`replication`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replication: Option<crate::replication::Replication>,
    /// Which pool the reads use and, with `READ_DATABASE_URL`, the server it is on (`pools`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reads: Option<crate::replication::Reads>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prepared_statements: Option<Vec<PreparedStatement>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub product_query: Option<ProductQuery>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pool_plans: Option<PoolPlans>,
    /// Whether the connection this report was read on is encrypted, as the server sees it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls: Option<ConnectionTls>,
}

/// This backend's row of `pg_stat_ssl`: the server's own word on whether the session it serves
/// (a pooled connection, so one like every request's) runs over TLS.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ConnectionTls {
    /// `pg_stat_ssl.ssl`: true when the session is encrypted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ssl: Option<bool>,
    /// The TLS version and cipher, when encrypted (`TLSv1.3`, `TLS_AES_256_GCM_SHA384`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cipher: Option<String>,
}

/// `pg_stat_ssl` of this session's own backend.
pub async fn connection_tls(client: &Client) -> Result<ConnectionTls, tokio_postgres::Error> {
    let row = client
        .query_one(
            "SELECT ssl, version, cipher FROM pg_catalog.pg_stat_ssl WHERE pid = pg_catalog.pg_backend_pid()",
            &[],
        )
        .await?;
    Ok(ConnectionTls { ssl: row.get(0), version: row.get(1), cipher: row.get(2) })
}

/// The product search's plan-cache counters summed over every pooled connection that was idle
/// when `/diagnostics` asked, read one at a time (after a run, when nothing is in flight, that is
/// all of them): how
/// many times its prepared statements (one per distinct limit) ran a generic and a custom plan
/// since each connection opened. Unprepared statements leave no counters.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PoolPlans {
    /// Connections the pool held.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub connections_open: Option<u64>,
    /// Connections whose counters are summed here.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub connections_read: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub product_generic_plans: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub product_custom_plans: Option<i64>,
    /// Connections whose product statements have run at least one generic plan.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub connections_using_generic: Option<u64>,
}

impl PoolPlans {
    /// Adds one connection's counters (`generic`, `custom`).
    pub fn add(&mut self, (generic, custom): (i64, i64)) {
        self.connections_read = Some(self.connections_read.unwrap_or(0) + 1);
        self.product_generic_plans = Some(self.product_generic_plans.unwrap_or(0) + generic);
        self.product_custom_plans = Some(self.product_custom_plans.unwrap_or(0) + custom);
        let using = u64::from(generic > 0);
        self.connections_using_generic = Some(self.connections_using_generic.unwrap_or(0) + using);
    }
}

/// The effective settings of the session (`current_setting`), and the client's own choices that
/// Postgres cannot report.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Settings {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plan_cache_mode: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub synchronous_commit: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub statement_timeout: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fsync: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub full_page_writes: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wal_level: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shared_buffers: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub work_mem: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_connections: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub jit: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shared_preload_libraries: Option<String>,
    /// `prepared` or `unprepared`: how the service sends its statements.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub statement_mode: Option<String>,
    /// `literal` or `parameter`: how the product search carries its limit (`PG_LIMIT_MODE`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit_mode: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pool_size: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pool_timeout_ms: Option<u64>,
}

/// The GIN index on the items: its options and its pending list (`pgstatginindex`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct GinIndex {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reloptions: Option<Vec<String>>,
    /// `on` or `off` (on when the index has no explicit setting).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fastupdate: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pending_pages: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pending_tuples: Option<i64>,
}

/// `pg_stat_user_tables` counters of a table (`orders`, or the hybrid layout's `order_items`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TableCounters {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seq_scan: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seq_tup_read: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idx_scan: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub n_tup_ins: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub n_tup_upd: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub n_tup_hot_upd: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub n_live_tup: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub n_dead_tup: Option<i64>,
}

impl TableCounters {
    /// The counters from a row holding them from column `first` on, in the order `seq_scan,
    /// seq_tup_read, idx_scan, n_tup_ins, n_tup_upd, n_tup_hot_upd, n_live_tup, n_dead_tup`.
    pub fn from_row(row: &tokio_postgres::Row, first: usize) -> Self {
        let at = |i: usize| Some(row.get::<_, i64>(first + i));
        Self {
            seq_scan: at(0),
            seq_tup_read: at(1),
            idx_scan: at(2),
            n_tup_ins: at(3),
            n_tup_upd: at(4),
            n_tup_hot_upd: at(5),
            n_live_tup: at(6),
            n_dead_tup: at(7),
        }
    }
}

/// Relation sizes, bytes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Sizes {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub table_bytes: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub toast_bytes: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub indexes_bytes: Option<i64>,
    /// Per index, by name.
    pub index_bytes: BTreeMap<String, i64>,
}

/// The current WAL position, and the bytes written since `0/0`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Wal {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lsn: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes: Option<i64>,
}

/// A statement prepared on this connection and the plans it has used.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PreparedStatement {
    pub statement: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub generic_plans: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub custom_plans: Option<i64>,
}

/// The product query and its two plans.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ProductQuery {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub statement: Option<String>,
    pub generic_plan: ExplainedPlan,
    pub custom_plan: ExplainedPlan,
}

/// One plan: its node types outermost first, its cost and the whole `EXPLAIN` output.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ExplainedPlan {
    pub nodes: Vec<String>,
    pub total_cost: Option<f64>,
    pub plan: Value,
}

impl Diagnostics {
    /// The prepared statement of the product query, when this connection holds it.
    pub fn product_statement(&self) -> Option<&PreparedStatement> {
        let statement = self.product_query.as_ref()?.statement.as_ref()?;
        self.prepared_statements.as_ref()?.iter().find(|s| &s.statement == statement)
    }
}

pub async fn collect(client: &Client, config: &PgConfig) -> Result<Diagnostics, tokio_postgres::Error> {
    let statements: Vec<&str> = crate::sql::REQUEST_STATEMENTS.iter().map(|s| s.text).collect();
    Ok(Diagnostics {
        backend: Some("postgres".into()),
        layout: Some("jsonb".into()),
        server_version: Some(server_version(client).await?),
        settings: Some(settings(client, config).await?),
        gin_index: Some(gin_index(client).await?),
        table: Some(table_counters(client, "orders").await?),
        sizes: Some(sizes(client).await?),
        wal: Some(wal(client).await?),
        prepared_statements: Some(prepared_statements(client, &statements, crate::sql::PRODUCT_SEARCH).await?),
        product_query: Some(product_plans(client, product_query(config), JSONB_PRODUCT).await?),
        replication: Some(crate::replication::read(client).await?),
        tls: Some(connection_tls(client).await?),
        ..Diagnostics::default()
    })
}

/// A product for the custom plan of study S1's search: `$1` as a literal.
const JSONB_PRODUCT: &str = "'[{\"product_id\": 1}]'::jsonb";

pub async fn server_version(client: &Client) -> Result<String, tokio_postgres::Error> {
    Ok(client.query_one("SELECT current_setting('server_version')", &[]).await?.get(0))
}

/// The current WAL position.
pub async fn wal(client: &Client) -> Result<Wal, tokio_postgres::Error> {
    let row = client
        .query_one("SELECT pg_current_wal_lsn()::text, pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint", &[])
        .await?;
    Ok(Wal { lsn: Some(row.get(0)), bytes: Some(row.get(1)) })
}

/// The session's effective settings and the client's own choices.
pub async fn settings(client: &Client, config: &PgConfig) -> Result<Settings, tokio_postgres::Error> {
    let rows = client.query("SELECT name, current_setting(name) FROM unnest($1::text[]) AS name", &[&SETTINGS]).await?;
    let setting = |name: &str| rows.iter().find(|row| row.get::<_, &str>(0) == name).map(|row| row.get::<_, String>(1));
    Ok(Settings {
        plan_cache_mode: setting("plan_cache_mode"),
        synchronous_commit: setting("synchronous_commit"),
        statement_timeout: setting("statement_timeout"),
        fsync: setting("fsync"),
        full_page_writes: setting("full_page_writes"),
        wal_level: setting("wal_level"),
        shared_buffers: setting("shared_buffers"),
        work_mem: setting("work_mem"),
        max_connections: setting("max_connections"),
        jit: setting("jit"),
        shared_preload_libraries: setting("shared_preload_libraries"),
        // The statement mode is the client's choice; Postgres cannot report it, so say what we use.
        statement_mode: Some(setting_name(config.statement_mode)),
        limit_mode: Some(setting_name(config.limit_mode)),
        pool_size: Some(u64::from(config.pool_size)),
        pool_timeout_ms: Some(config.limits.pool_timeout.as_millis() as u64),
    })
}

async fn gin_index(client: &Client) -> Result<GinIndex, tokio_postgres::Error> {
    let reloptions: Option<Vec<String>> =
        client.query_one("SELECT reloptions FROM pg_class WHERE oid = 'orders_items'::regclass", &[]).await?.get(0);
    let reloptions = reloptions.unwrap_or_default();
    // fastupdate defaults to on when the index has no explicit setting.
    let fastupdate = reloptions
        .iter()
        .find_map(|option| option.strip_prefix("fastupdate="))
        .map_or("on", |value| if value == "false" || value == "off" { "off" } else { "on" });
    let pending = client
        .query_one("SELECT pending_pages::bigint, pending_tuples::bigint FROM pgstatginindex('orders_items')", &[])
        .await?;
    Ok(GinIndex {
        name: Some("orders_items".into()),
        fastupdate: Some(fastupdate.into()),
        reloptions: Some(reloptions),
        pending_pages: Some(pending.get(0)),
        pending_tuples: Some(pending.get(1)),
    })
}

/// The `pg_stat_user_tables` counters of `table`.
pub async fn table_counters(client: &Client, table: &str) -> Result<TableCounters, tokio_postgres::Error> {
    let row = client
        .query_one(
            "SELECT seq_scan, seq_tup_read, coalesce(idx_scan, 0), n_tup_ins, n_tup_upd, n_tup_hot_upd,
                    n_live_tup, n_dead_tup
             FROM pg_stat_user_tables WHERE relid = $1::text::regclass",
            &[&table],
        )
        .await?;
    Ok(TableCounters::from_row(&row, 0))
}

async fn sizes(client: &Client) -> Result<Sizes, tokio_postgres::Error> {
    let row = client
        .query_one(
            "SELECT pg_relation_size(c.oid),
                    coalesce(pg_total_relation_size(nullif(c.reltoastrelid, 0)), 0),
                    pg_indexes_size(c.oid),
                    pg_relation_size('orders_customer'::regclass),
                    pg_relation_size('orders_items'::regclass),
                    pg_relation_size('orders_pkey'::regclass)
             FROM pg_class c WHERE c.oid = 'orders'::regclass",
            &[],
        )
        .await?;
    Ok(Sizes {
        table_bytes: Some(row.get(0)),
        toast_bytes: Some(row.get(1)),
        indexes_bytes: Some(row.get(2)),
        index_bytes: BTreeMap::from([
            ("orders_customer".into(), row.get(3)),
            ("orders_items".into(), row.get(4)),
            ("orders_pkey".into(), row.get(5)),
        ]),
    })
}

/// This connection's prepared statements among `statements` and those beginning with
/// `product_search`, with their plan counts.
pub async fn prepared_statements(
    client: &Client,
    statements: &[&str],
    product_search: &str,
) -> Result<Vec<PreparedStatement>, tokio_postgres::Error> {
    let rows = client
        .query(
            "SELECT statement, generic_plans, custom_plans FROM pg_prepared_statements
             WHERE statement = ANY($1) OR starts_with(statement, $2) ORDER BY statement",
            &[&statements, &product_search],
        )
        .await?;
    Ok(rows
        .iter()
        .map(|row| PreparedStatement {
            statement: row.get(0),
            generic_plans: Some(row.get(1)),
            custom_plans: Some(row.get(2)),
        })
        .collect())
}

/// This connection's backend pid, and its generic and custom plan counts of the product search
/// (the statements that begin with `product_search`), summed over its prepared statements (one per
/// distinct limit, or the one with `LIMIT $2`).
pub async fn product_plan_counts(
    client: &Client,
    product_search: &str,
) -> Result<(i32, (i64, i64)), tokio_postgres::Error> {
    let row = client
        .query_one(
            "SELECT pg_backend_pid(), coalesce(sum(generic_plans), 0)::bigint, coalesce(sum(custom_plans), 0)::bigint
             FROM pg_prepared_statements WHERE starts_with(statement, $1)",
            &[&product_search],
        )
        .await?;
    Ok((row.get(0), (row.get(1), row.get(2))))
}

/// The plan a prepared statement may switch to after five executions (generic: `$1` unknown,
/// `@>` estimated by a fixed selectivity) and the one it gets for a real product (custom: `$1` is
/// `product`, a literal, and a `$2` limit is 10).
pub async fn product_plans(client: &Client, query: &str, product: &str) -> Result<ProductQuery, tokio_postgres::Error> {
    let generic = explain(client, &format!("EXPLAIN (GENERIC_PLAN, FORMAT JSON) {query}")).await?;
    let custom_sql = query.replace("$1", product).replace("$2", "10");
    let custom = explain(client, &format!("EXPLAIN (FORMAT JSON) {custom_sql}")).await?;
    let explained =
        |plan: Value| ExplainedPlan { nodes: node_types(&plan), total_cost: plan["Plan"]["Total Cost"].as_f64(), plan };
    Ok(ProductQuery { statement: Some(query.into()), generic_plan: explained(generic), custom_plan: explained(custom) })
}

/// Runs an EXPLAIN through the simple query protocol: `EXPLAIN (GENERIC_PLAN)` keeps `$1` and
/// `$2` as placeholders, which the extended protocol would insist on binding.
async fn explain(client: &Client, sql: &str) -> Result<Value, tokio_postgres::Error> {
    let messages = client.simple_query(sql).await?;
    let text = messages.iter().find_map(|message| match message {
        SimpleQueryMessage::Row(row) => row.get(0).map(str::to_owned),
        _ => None,
    });
    let plans: Value = text.and_then(|text| serde_json::from_str(&text).ok()).unwrap_or(Value::Null);
    Ok(plans.get(0).cloned().unwrap_or(Value::Null))
}

/// The plan tree's node types, outermost first, e.g. `["Limit", "Bitmap Heap Scan", "Bitmap Index Scan"]`.
fn node_types(explained: &Value) -> Vec<String> {
    fn walk(node: &Value, out: &mut Vec<String>) {
        if let Some(kind) = node["Node Type"].as_str() {
            let index = node["Index Name"].as_str().map(|name| format!(" on {name}")).unwrap_or_default();
            out.push(format!("{kind}{index}"));
        }
        for child in node["Plans"].as_array().into_iter().flatten() {
            walk(child, out);
        }
    }
    let mut out = Vec::new();
    walk(&explained["Plan"], &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn node_types_walk_the_plan_tree_outermost_first() {
        let plan = json!({"Plan": {"Node Type": "Limit", "Plans": [
            {"Node Type": "Bitmap Heap Scan", "Plans": [{"Node Type": "Bitmap Index Scan", "Index Name": "orders_items"}]}
        ]}});
        assert_eq!(node_types(&plan), ["Limit", "Bitmap Heap Scan", "Bitmap Index Scan on orders_items"]);
    }
}
