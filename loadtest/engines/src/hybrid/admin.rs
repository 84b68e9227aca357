//! The statements the bench runner (`orders-bench`) sends to the hybrid layout besides the
//! service's own, built from its SQL macros (`orders_pg_hybrid::order_json!`): seeding (the orders'
//! JSON copied into a staging table, then split into the columns, the document and `order_items`
//! by the same expressions the service's insert uses), the prewarm of both tables, the data's
//! fingerprint (of the API's JSON, so equal to orders-pg's for the same orders). What is the same
//! as orders-pg's (counts, `CHECKPOINT`, snapshots, sessions) and the one-query sample of both
//! layouts' figures the runner takes from `crate::postgres::admin`.

use tokio_postgres::{Client, Error, GenericClient};

/// Holds both tables for the whole load; a staging table for the copied JSON, dropped at commit.
pub fn lock_for_load(maintenance_work_mem: &str) -> String {
    format!(
        "LOCK TABLE orders, order_items IN ACCESS EXCLUSIVE MODE; SET LOCAL maintenance_work_mem = '{maintenance_work_mem}'; \
         CREATE TEMP TABLE staging (id bigint, doc jsonb) ON COMMIT DROP"
    )
}

pub const TRUNCATE: &str = "TRUNCATE orders, order_items";

/// Streams `(id, doc)` rows in the binary format into the staging table (orders-pg's format).
pub const COPY_STAGING: &str = "COPY staging (id, doc) FROM STDIN (FORMAT binary)";

/// The staged orders into the layout: the hot fields typed, the rest of the document as the
/// service's insert stores it (`sql::INSERT_ORDER`), one `order_items` row per distinct product.
pub const SPLIT_STAGING: &str = concat!(
    "INSERT INTO orders (id, customer_id, status, updated_at, doc) \
     SELECT id, (doc->'customer'->>'id')::bigint, doc->>'status', (doc->>'updated_at')::timestamptz, ",
    orders_pg_hybrid::rest_of!("doc"),
    " FROM staging; \
     INSERT INTO order_items (order_id, product_id) \
     SELECT DISTINCT s.id, (item->>'product_id')::bigint FROM staging s, jsonb_array_elements(s.doc->'items') AS item"
);

/// After the load's commit: frozen and analysed, so neither the first reads (hint bits) nor an
/// autovacuum rewrite the tables during a round (rows inserted by `INSERT`, unlike orders-pg's
/// `COPY ... FREEZE`, are not frozen).
pub const VACUUM_ANALYZE: &str = "VACUUM (FREEZE, ANALYZE) orders, order_items";

/// Heap, TOAST and indexes of both tables, bytes.
pub async fn total_size(client: &impl GenericClient) -> Result<i64, Error> {
    let row = client
        .query_one("SELECT (pg_total_relation_size('orders') + pg_total_relation_size('order_items'))::bigint", &[])
        .await?;
    Ok(row.get(0))
}

/// Loads every page of both tables and their indexes into shared buffers (`pg_prewarm`, created
/// here when missing); returns the pages read.
pub async fn prewarm(client: &Client) -> Result<i64, Error> {
    client.batch_execute("CREATE EXTENSION IF NOT EXISTS pg_prewarm").await?;
    let row = client
        .query_one(
            "SELECT coalesce(sum(pg_prewarm(c.oid)), 0)::bigint FROM pg_class c
             WHERE c.oid IN ('orders'::regclass, 'order_items'::regclass)
                OR c.oid IN (SELECT indexrelid FROM pg_index WHERE indrelid IN ('orders'::regclass, 'order_items'::regclass))",
            &[],
        )
        .await?;
    Ok(row.get(0))
}

/// A digest of every order in id order (of each id and the API's JSON text, columns joined back)
/// and their number: the same as `crate::postgres::admin::fingerprint` for the same orders.
pub async fn fingerprint(client: &Client) -> Result<(String, i64), Error> {
    let sql = concat!(
        "SELECT coalesce(md5(string_agg(md5(id::text || ':' || (",
        orders_pg_hybrid::order_json!(),
        ")::text), '' ORDER BY id)), ''), count(*) FROM orders"
    );
    let row = client.query_one(sql, &[]).await?;
    Ok((row.get(0), row.get(1)))
}
