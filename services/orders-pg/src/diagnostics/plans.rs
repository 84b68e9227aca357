//! The product search's plans, part of `/diagnostics`: the plan-cache counters of its prepared
//! statements (on this connection, and summed over the pool) and its generic and custom plans from
//! `EXPLAIN`. Apart from the rest of the report because these are what study S1 reads, and
//! orders-pg-hybrid reads its own search's plans with the same functions.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_postgres::{Client, SimpleQueryMessage};

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
