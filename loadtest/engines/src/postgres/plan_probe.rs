//! The planner probe: before a round loads anything, what PostgreSQL's planner does with the
//! product search on a copy of the round's data, in seconds. On a scratch database made from the
//! data set's snapshot (a template copy, so the round's own database and sessions are untouched),
//! with the round's GIN options and autovacuum off, it inserts copies of existing orders in
//! growing batches (`STEPS`), and after each batch reads the pending list, the generic plan of
//! the `LIMIT 10` statement (S1's form) and of `LIMIT $2`, the custom plans of the products a
//! round searches, and which plan a newly prepared statement keeps after `EXECUTIONS`
//! executions, for both forms. It also times a sequential scan that finds ten of a product's
//! orders, which sets the plan log's threshold. The scratch database is dropped afterwards.

use crate::databases::{pg_session, with_database};
use crate::postgres::admin;
use anyhow::{Context, Result};
use orders_bench_model::plans::{PlanProbe, ProbeRow};
use serde_json::Value;
use std::time::Instant;
use tokio_postgres::types::Type;
use tokio_postgres::{Client, SimpleQueryMessage};

/// Orders inserted before each look, cumulative.
const STEPS: [u64; 6] = [0, 250, 500, 1_000, 2_000, 4_000];
/// Executions of each prepared statement in a new session (the plan cache decides after five).
const EXECUTIONS: u64 = 20;
const LITERAL: &str = "SELECT doc FROM orders WHERE doc->'items' @> $1 LIMIT 10";
const PARAMETER: &str = "SELECT doc FROM orders WHERE doc->'items' @> $1 LIMIT $2";

/// Where the probe works.
pub struct Source<'a> {
    /// A connection URL to another database of the server (`postgres`).
    pub admin_url: &'a str,
    /// The database to copy: the data set's snapshot (no sessions on it).
    pub template: &'a str,
    /// The round's database, whose GIN options the copy takes.
    pub database_url: &'a str,
    pub orders: u64,
    pub products: u64,
}

/// The products a probe searches: spread over the whole range, like a round's uniform draws.
fn products(count: u64, products: u64) -> Vec<u64> {
    (0..count).map(|n| 1 + (n * 7919) % products.max(1)).collect()
}

fn containment(product: u64) -> serde_json::Value {
    serde_json::json!([{ "product_id": product }])
}

/// The probe on a copy of the snapshot `label` of the database at `database_url`, made on its own
/// server.
pub async fn on_snapshot(database_url: &str, label: &str, orders: u64, products: u64) -> PlanProbe {
    let (admin_url, template) = (with_database(database_url, "postgres"), super::template(database_url, label));
    run(&Source { admin_url: &admin_url, template: &template, database_url, orders, products }).await
}

/// Runs the probe; a failure is recorded in the result, not returned.
pub async fn run(source: &Source<'_>) -> PlanProbe {
    let began = Instant::now();
    let scratch = format!("{}_probe", source.template);
    let mut probe = match probe(source, &scratch).await {
        Ok(probe) => probe,
        Err(error) => PlanProbe { orders: source.orders, error: Some(format!("{error:#}")), ..PlanProbe::default() },
    };
    if let Ok((client, _connection)) = pg_session(source.admin_url).await {
        let _ = client.batch_execute(&format!("DROP DATABASE IF EXISTS \"{scratch}\" WITH (FORCE)")).await;
    }
    probe.seconds = began.elapsed().as_secs_f64();
    probe
}

fn scratch_url(database_url: &str, scratch: &str) -> String {
    with_database(database_url, scratch)
}

async fn probe(source: &Source<'_>, scratch: &str) -> Result<PlanProbe> {
    let options = {
        let (client, _connection) = pg_session(source.database_url).await?;
        admin::index_options(&client, "orders_items").await?
    };
    {
        let (admin_client, _connection) = pg_session(source.admin_url).await?;
        admin::restore_database(&admin_client, scratch, source.template)
            .await
            .with_context(|| format!("copying {} for the planner probe", source.template))?;
    }
    let url = scratch_url(source.database_url, scratch);
    let (client, _connection) = pg_session(&url).await?;
    admin::set_index_options(&client, "orders_items", &options).await?;
    client.batch_execute("ALTER TABLE orders SET (autovacuum_enabled = off)").await?;
    let fastupdate = options
        .iter()
        .find_map(|o| o.strip_prefix("fastupdate="))
        .map_or("on", |v| if v == "off" || v == "false" { "off" } else { "on" })
        .to_owned();
    let searched = products(EXECUTIONS, source.products);
    let mut probe = PlanProbe {
        orders: source.orders,
        fastupdate,
        seq_scan_ms: seq_scan_ms(&client, &searched[..3]).await.ok(),
        ..PlanProbe::default()
    };
    let mut inserted = 0;
    for target in STEPS {
        if target > inserted {
            insert_copies(&client, source.orders, inserted, target - inserted).await?;
            inserted = target;
        }
        let row = look(&client, &url, inserted, &searched).await?;
        if probe.switch_after_inserts.is_none() && row.literal_switched_to_seq_scan() {
            probe.switch_after_inserts = Some(inserted);
        }
        probe.rows.push(row);
    }
    Ok(probe)
}

/// `count` new orders, copies of existing ones under new ids (so their items fill the GIN
/// pending list the way a round's inserts do).
async fn insert_copies(client: &Client, orders: u64, done: u64, count: u64) -> Result<()> {
    let first = i64::try_from(done + 1).unwrap_or(i64::MAX);
    let last = i64::try_from(done + count).unwrap_or(i64::MAX);
    let offset = i64::try_from(orders.max(1) * 10).unwrap_or(i64::MAX / 2);
    client
        .execute(
            "INSERT INTO orders (id, doc) SELECT id + $3, doc FROM orders WHERE id BETWEEN $1 AND $2",
            &[&first, &last, &offset],
        )
        .await
        .context("inserting the probe's orders")?;
    Ok(())
}

/// The plan of `EXPLAIN (FORMAT JSON, ...) sql` (simple protocol: `$1` may stay unbound).
async fn explain(client: &Client, options: &str, sql: &str) -> Result<Value> {
    let messages = client.simple_query(&format!("EXPLAIN ({options}FORMAT JSON) {sql}")).await?;
    let text = messages
        .iter()
        .find_map(|m| match m {
            SimpleQueryMessage::Row(row) => row.get(0).map(str::to_owned),
            _ => None,
        })
        .context("EXPLAIN returned nothing")?;
    let plans: Value = serde_json::from_str(&text)?;
    Ok(plans[0].clone())
}

/// `Limit → Seq Scan` for a plan tree, and its total cost.
fn shape(explained: &Value) -> (String, Option<f64>) {
    let mut nodes = Vec::new();
    let mut node = &explained["Plan"];
    while let Some(kind) = node["Node Type"].as_str() {
        nodes.push(kind.to_owned());
        node = &node["Plans"][0];
    }
    (nodes.join(" → "), explained["Plan"]["Total Cost"].as_f64())
}

fn with_product(sql: &str, product: u64) -> String {
    sql.replace("$1", &format!("'[{{\"product_id\": {product}}}]'::jsonb"))
}

async fn seq_scan_ms(client: &Client, searched: &[u64]) -> Result<f64> {
    client.batch_execute("SET enable_bitmapscan = off; SET enable_indexscan = off").await?;
    let mut times = Vec::new();
    for product in searched {
        let plan = explain(client, "ANALYZE, ", &with_product(LITERAL, *product)).await?;
        times.extend(plan["Execution Time"].as_f64());
    }
    client.batch_execute("RESET enable_bitmapscan; RESET enable_indexscan").await?;
    times.sort_by(f64::total_cmp);
    times.get(times.len() / 2).copied().context("no timing")
}

/// The plans after `inserted` inserts.
async fn look(client: &Client, url: &str, inserted: u64, searched: &[u64]) -> Result<ProbeRow> {
    let pending = client
        .query_one("SELECT pending_pages::bigint, pending_tuples::bigint FROM pgstatginindex('orders_items')", &[])
        .await?;
    let (generic, generic_cost) = shape(&explain(client, "GENERIC_PLAN, ", LITERAL).await?);
    let (parameter_generic, parameter_generic_cost) = shape(&explain(client, "GENERIC_PLAN, ", PARAMETER).await?);
    let mut costs = Vec::new();
    let mut custom_seq_scans = 0;
    for product in searched {
        let (nodes, cost) = shape(&explain(client, "", &with_product(LITERAL, *product)).await?);
        custom_seq_scans += u64::from(nodes.contains("Seq Scan"));
        costs.extend(cost);
    }
    costs.sort_by(f64::total_cmp);
    let (literal_generic_used, literal_custom_used) = kept(url, LITERAL, false, searched).await?;
    let (parameter_generic_used, parameter_custom_used) = kept(url, PARAMETER, true, searched).await?;
    Ok(ProbeRow {
        inserts: inserted,
        pending_pages: pending.get(0),
        pending_tuples: pending.get(1),
        generic,
        generic_cost,
        custom_cost: costs.get(costs.len() / 2).copied(),
        custom_seq_scans,
        custom_planned: searched.len() as u64,
        literal_generic_used,
        literal_custom_used,
        parameter_generic,
        parameter_generic_cost,
        parameter_generic_used,
        parameter_custom_used,
    })
}

/// A new session prepares `sql` and executes it once per product; returns the generic and custom
/// plans its plan cache used.
async fn kept(url: &str, sql: &str, limit_parameter: bool, searched: &[u64]) -> Result<(i64, i64)> {
    let (session, _connection) = pg_session(url).await?;
    let types: &[Type] = if limit_parameter { &[Type::JSONB, Type::INT8] } else { &[Type::JSONB] };
    let statement = session.prepare_typed(sql, types).await?;
    for product in searched {
        let json = containment(*product);
        if limit_parameter {
            session.query(&statement, &[&json, &10i64]).await?;
        } else {
            session.query(&statement, &[&json]).await?;
        }
    }
    let row = session
        .query_one("SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE statement = $1", &[&sql])
        .await?;
    Ok((row.get(0), row.get(1)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_plan_reads_as_its_node_chain_and_cost() {
        let plan = json!({"Plan": {"Node Type": "Limit", "Total Cost": 126.1, "Plans": [{"Node Type": "Seq Scan"}]}});
        assert_eq!(shape(&plan), ("Limit → Seq Scan".to_owned(), Some(126.1)));
    }

    #[test]
    fn searched_products_are_spread_and_in_range() {
        let list = products(20, 10_000);
        assert_eq!(list.len(), 20);
        assert!(list.iter().all(|p| (1..=10_000).contains(p)));
        assert!(list.windows(2).all(|w| w[0] != w[1]));
        assert_eq!(
            with_product(LITERAL, 7),
            "SELECT doc FROM orders WHERE doc->'items' @> '[{\"product_id\": 7}]'::jsonb LIMIT 10"
        );
    }
}
