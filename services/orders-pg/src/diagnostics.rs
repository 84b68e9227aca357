//! `/diagnostics` for Postgres: what the server reports, read on a pooled connection (so session
//! settings are the ones requests run with): version, effective settings, the GIN index's
//! `fastupdate` and pending list (`pgstatginindex`), `pg_stat_user_tables` counters, relation
//! sizes, the current WAL position, this connection's prepared statements with their generic and
//! custom plan counts, and the generic and custom plans of the product query.

use crate::config::{PgConfig, setting_name};
use serde_json::{Map, Value, json};
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

const PRODUCT_QUERY: &str = crate::sql::ORDERS_BY_PRODUCT.text;

pub async fn collect(client: &Client, config: &PgConfig) -> Result<Value, tokio_postgres::Error> {
    let mut report = Map::new();
    report.insert("backend".into(), json!("postgres"));
    let version: String = client.query_one("SELECT current_setting('server_version')", &[]).await?.get(0);
    report.insert("server_version".into(), json!(version));
    report.insert("settings".into(), settings(client, config).await?);
    report.insert("gin_index".into(), gin_index(client).await?);
    report.insert("table".into(), table_counters(client).await?);
    report.insert("sizes".into(), sizes(client).await?);
    let wal = client
        .query_one("SELECT pg_current_wal_lsn()::text, pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint", &[])
        .await?;
    report.insert("wal".into(), json!({"lsn": wal.get::<_, String>(0), "bytes": wal.get::<_, i64>(1)}));
    report.insert("prepared_statements".into(), prepared_statements(client).await?);
    report.insert("product_query".into(), product_plans(client).await?);
    Ok(Value::Object(report))
}

async fn settings(client: &Client, config: &PgConfig) -> Result<Value, tokio_postgres::Error> {
    let rows = client.query("SELECT name, current_setting(name) FROM unnest($1::text[]) AS name", &[&SETTINGS]).await?;
    let mut settings: Map<String, Value> =
        rows.iter().map(|row| (row.get::<_, String>(0), json!(row.get::<_, String>(1)))).collect();
    // The statement mode is the client's choice; Postgres cannot report it, so say what we use.
    settings.insert("statement_mode".into(), json!(setting_name(config.statement_mode)));
    settings.insert("pool_size".into(), json!(config.pool_size));
    settings.insert("pool_timeout_ms".into(), json!(config.limits.pool_timeout.as_millis() as u64));
    Ok(Value::Object(settings))
}

async fn gin_index(client: &Client) -> Result<Value, tokio_postgres::Error> {
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
    Ok(json!({
        "name": "orders_items",
        "reloptions": reloptions,
        "fastupdate": fastupdate,
        "pending_pages": pending.get::<_, i64>(0),
        "pending_tuples": pending.get::<_, i64>(1),
    }))
}

async fn table_counters(client: &Client) -> Result<Value, tokio_postgres::Error> {
    let row = client
        .query_one(
            "SELECT seq_scan, seq_tup_read, coalesce(idx_scan, 0), n_tup_ins, n_tup_upd, n_tup_hot_upd,
                    n_live_tup, n_dead_tup
             FROM pg_stat_user_tables WHERE relid = 'orders'::regclass",
            &[],
        )
        .await?;
    let names =
        ["seq_scan", "seq_tup_read", "idx_scan", "n_tup_ins", "n_tup_upd", "n_tup_hot_upd", "n_live_tup", "n_dead_tup"];
    Ok(Value::Object(names.iter().enumerate().map(|(i, name)| ((*name).into(), json!(row.get::<_, i64>(i)))).collect()))
}

async fn sizes(client: &Client) -> Result<Value, tokio_postgres::Error> {
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
    Ok(json!({
        "table_bytes": row.get::<_, i64>(0),
        "toast_bytes": row.get::<_, i64>(1),
        "indexes_bytes": row.get::<_, i64>(2),
        "index_bytes": {
            "orders_customer": row.get::<_, i64>(3),
            "orders_items": row.get::<_, i64>(4),
            "orders_pkey": row.get::<_, i64>(5),
        },
    }))
}

async fn prepared_statements(client: &Client) -> Result<Value, tokio_postgres::Error> {
    let rows = client
        .query(
            "SELECT statement, generic_plans, custom_plans FROM pg_prepared_statements
             WHERE statement = ANY($1) ORDER BY statement",
            &[&crate::sql::REQUEST_STATEMENTS.iter().map(|s| s.text).collect::<Vec<_>>()],
        )
        .await?;
    Ok(Value::Array(
        rows.iter()
            .map(|row| {
                json!({
                    "statement": row.get::<_, String>(0),
                    "generic_plans": row.get::<_, i64>(1),
                    "custom_plans": row.get::<_, i64>(2),
                })
            })
            .collect(),
    ))
}

/// The plan a prepared statement may switch to after five executions (generic: `$1` unknown,
/// `@>` estimated by a fixed selectivity) and the one it gets for a real product (custom).
async fn product_plans(client: &Client) -> Result<Value, tokio_postgres::Error> {
    let generic = explain(client, &format!("EXPLAIN (GENERIC_PLAN, FORMAT JSON) {PRODUCT_QUERY}")).await?;
    let custom_sql = PRODUCT_QUERY.replace("$1", "'[{\"product_id\": 1}]'::jsonb").replace("$2", "10");
    let custom = explain(client, &format!("EXPLAIN (FORMAT JSON) {custom_sql}")).await?;
    Ok(json!({
        "statement": PRODUCT_QUERY,
        "generic_plan": {"nodes": node_types(&generic), "total_cost": generic["Plan"]["Total Cost"], "plan": generic},
        "custom_plan": {"nodes": node_types(&custom), "total_cost": custom["Plan"]["Total Cost"], "plan": custom},
    }))
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

    #[test]
    fn node_types_walk_the_plan_tree_outermost_first() {
        let plan = json!({"Plan": {"Node Type": "Limit", "Plans": [
            {"Node Type": "Bitmap Heap Scan", "Plans": [{"Node Type": "Bitmap Index Scan", "Index Name": "orders_items"}]}
        ]}});
        assert_eq!(node_types(&plan), ["Limit", "Bitmap Heap Scan", "Bitmap Index Scan on orders_items"]);
    }
}
