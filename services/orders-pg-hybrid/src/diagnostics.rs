//! `/diagnostics` for the hybrid layout, built from orders-pg's readers into its `Diagnostics`
//! type (so the bench runner reads all three services' reports with one type): `"layout":
//! "hybrid"`, version, effective settings, the counters of `orders` (`table`, where
//! `n_tup_hot_upd` shows the status changes that stayed heap-only) and of `order_items`
//! (`items_table`), the sizes of both tables and their indexes, the WAL position, this
//! connection's prepared statements, both plans of the product search, and orders-pg's
//! `replication` section (the member written to, what a commit waits for), and `tls` (this
//! session's `pg_stat_ssl`). No `gin_index`: this layout has none.

use crate::sql;
use orders_pg::PgConfig;
use orders_pg::diagnostics::{self as pg, Diagnostics, Sizes};
use std::collections::BTreeMap;
use tokio_postgres::Client;

/// The tables of this layout, whose sizes the report adds up.
const TABLES: [&str; 2] = ["orders", "order_items"];

/// A product for the product search's custom plan: `$1` as a literal.
const PRODUCT: &str = "1";

pub async fn collect(client: &Client, config: &PgConfig) -> Result<Diagnostics, tokio_postgres::Error> {
    let statements: Vec<&str> = sql::REQUEST_STATEMENTS.iter().map(|s| s.text).collect();
    let product_search = sql::orders_by_product(config.limit_mode, orders_core::Limit::PRODUCT_DEFAULT).text;
    Ok(Diagnostics {
        backend: Some("postgres".into()),
        layout: Some("hybrid".into()),
        server_version: Some(pg::server_version(client).await?),
        settings: Some(pg::settings(client, config).await?),
        table: Some(pg::table_counters(client, "orders").await?),
        items_table: Some(pg::table_counters(client, "order_items").await?),
        sizes: Some(sizes(client).await?),
        wal: Some(pg::wal(client).await?),
        prepared_statements: Some(pg::prepared_statements(client, &statements, sql::PRODUCT_SEARCH).await?),
        product_query: Some(pg::product_plans(client, product_search, PRODUCT).await?),
        replication: Some(orders_pg::replication::read(client).await?),
        tls: Some(pg::connection_tls(client).await?),
        ..Diagnostics::default()
    })
}

/// Heap, TOAST and index bytes of both tables, and each index by name.
async fn sizes(client: &Client) -> Result<Sizes, tokio_postgres::Error> {
    let totals = client
        .query_one(
            "SELECT coalesce(sum(pg_relation_size(c.oid)), 0)::bigint,
                    coalesce(sum(pg_total_relation_size(nullif(c.reltoastrelid, 0))), 0)::bigint,
                    coalesce(sum(pg_indexes_size(c.oid)), 0)::bigint
             FROM pg_class c WHERE c.oid IN (SELECT to_regclass(name) FROM unnest($1::text[]) AS name)",
            &[&TABLES.as_slice()],
        )
        .await?;
    let indexes = client
        .query(
            "SELECT i.indexrelid::regclass::text, pg_relation_size(i.indexrelid)
             FROM pg_index i WHERE i.indrelid IN (SELECT to_regclass(name) FROM unnest($1::text[]) AS name)",
            &[&TABLES.as_slice()],
        )
        .await?;
    Ok(Sizes {
        table_bytes: Some(totals.get(0)),
        toast_bytes: Some(totals.get(1)),
        indexes_bytes: Some(totals.get(2)),
        index_bytes: indexes.iter().map(|row| (row.get(0), row.get(1))).collect::<BTreeMap<String, i64>>(),
    })
}
