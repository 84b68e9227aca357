//! `/diagnostics` for Postgres: what the server reports, read on a pooled connection (so session
//! settings are the ones requests run with): version, effective settings, the GIN index's pending
//! list, `pg_stat_user_tables` counters, relation sizes, the WAL position, the product search's
//! plan counts over the pooled connections and its generic and custom plans, and whether the session
//! is encrypted (`pg_stat_ssl`); the product search's plans are in `plans`. Its parts are public:
//! orders-pg-hybrid builds its report from the same readers.
//!
//! The report is the typed `Diagnostics`: the service serializes it and the bench runner
//! deserializes it, so a renamed field breaks the build of both rather than leaving a figure
//! silently "not reported". Every field is optional, so an older service's report still parses.

use crate::config::{PgConfig, setting_name};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

mod plans;
pub use plans::{
    ExplainedPlan, PoolPlans, PreparedStatement, ProductQuery, prepared_statements, product_plan_counts, product_plans,
};
use tokio_postgres::Client;

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
