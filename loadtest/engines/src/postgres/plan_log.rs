//! Attributing every sequential scan of a repeat to the plan that ran it. Before the load,
//! `enable` turns on `auto_explain` (JSON, with parameters) at the threshold on the round's
//! database and ends its sessions so the pools reconnect with it; `position` notes where the
//! server's JSON log stands. After the load, `read` takes what was written since (through
//! `pg_read_binary_file`, or on the droplets the deployment's `orders_bench_read_log`), and
//! `attribute` sorts the plans: a scan of `orders` by the product search's generic plan (its
//! filter reads `$1`), by a custom plan, or by another statement. Only statements over the
//! threshold are logged, so the log costs the round next to nothing.

use crate::PlanLog;
use crate::databases::pg_session;
use crate::postgres::admin::LogAccess;
use anyhow::{Context, Result};
use async_trait::async_trait;
use orders_bench_model::explain::EngineExplain;
use orders_bench_model::plans::ScanAttribution;
use serde_json::Value;
use std::collections::BTreeMap;

/// Where the server's JSON log stood.
#[derive(Debug, Clone)]
pub struct Position {
    file: String,
    offset: i64,
    database: String,
    /// How this log can be read, decided once.
    access: LogAccess,
}

/// The plan log of one database, as `Backend::plan_log` hands it to a repeat.
pub struct DatabasePlanLog {
    database_url: String,
    threshold_ms: f64,
    from: Option<Position>,
}

impl DatabasePlanLog {
    /// Turns the log on for the database of `database_url` (`enable`).
    pub async fn enable(database_url: &str, threshold_ms: f64) -> Result<Self> {
        let threshold_ms = enable(database_url, threshold_ms).await?;
        Ok(Self { database_url: database_url.to_owned(), threshold_ms, from: None })
    }
}

#[async_trait]
impl PlanLog for DatabasePlanLog {
    fn threshold_ms(&self) -> f64 {
        self.threshold_ms
    }

    async fn mark(&mut self) -> Result<()> {
        self.from = Some(position(&self.database_url).await?);
        Ok(())
    }

    async fn add_scans(&self, figures: &mut EngineExplain) {
        let read = match &self.from {
            Some(from) => read(&self.database_url, from, self.threshold_ms).await,
            None => Err(anyhow::anyhow!("the log's position was not noted before the load")),
        };
        let mut scans = read.unwrap_or_else(|error| ScanAttribution::failed(self.threshold_ms, format!("{error:#}")));
        if let EngineExplain::Pg(pg) = figures {
            scans.unattributed = pg.seq_scans.map(|counted| counted - scans.seq_scans() as f64);
            pg.scans = Some(scans);
        }
    }
}

/// The most of the log one repeat reads (a plan is about 1.5 KiB).
const MAX_READ: i64 = 256 << 20;

/// Turns the plan log on for the database of `database_url` (ending its sessions) and returns its
/// threshold; when the server logs plans for every session already (the droplets' configuration),
/// that is left as it is and its own threshold returned.
pub async fn enable(database_url: &str, threshold_ms: f64) -> Result<f64> {
    let (client, _connection) = pg_session(database_url).await?;
    if let Some(server) = crate::postgres::admin::server_plan_threshold_ms(&client).await? {
        return Ok(server);
    }
    let name: String = client.query_one("SELECT current_database()", &[]).await?.get(0);
    crate::postgres::admin::log_slow_plans(&client, &name, threshold_ms)
        .await
        .context("turning on auto_explain for the round's database (needs a superuser)")?;
    Ok(threshold_ms)
}

/// Where the JSON log stands now.
pub async fn position(database_url: &str) -> Result<Position> {
    let (client, _connection) = pg_session(database_url).await?;
    let database: String = client.query_one("SELECT current_database()", &[]).await?.get(0);
    let access = crate::postgres::admin::log_access(&client).await?;
    let (file, offset) = crate::postgres::admin::json_log_position(&client, access)
        .await?
        .context("the server writes no JSON log (log_destination with jsonlog, logging_collector = on)")?;
    Ok(Position { file, offset, database, access })
}

/// What the log gained since `from`, sorted by plan.
pub async fn read(database_url: &str, from: &Position, threshold_ms: f64) -> Result<ScanAttribution> {
    let (client, _connection) = pg_session(database_url).await?;
    let mut bytes = Vec::new();
    let now = crate::postgres::admin::json_log_position(&client, from.access).await?;
    let files: Vec<(String, i64)> = match (now, from.access) {
        // The log moved on to a new file: the rest of the old one, then the new one; where only
        // the current log can be read, the old one's tail is lost (the count says what was seen).
        (Some((file, _)), LogAccess::ServerFiles) if file != from.file => {
            vec![(from.file.clone(), from.offset), (file, 0)]
        }
        (Some((file, _)), LogAccess::CurrentLogOnly) if file != from.file => vec![(file, 0)],
        _ => vec![(from.file.clone(), from.offset)],
    };
    for (file, offset) in files {
        let chunk = crate::postgres::admin::read_server_file(&client, from.access, &file, offset, MAX_READ)
            .await
            .with_context(|| format!("reading the server log {file} (needs a superuser or pg_read_server_files)"))?;
        bytes.extend_from_slice(&chunk);
    }
    Ok(attribute(&bytes, &from.database, threshold_ms))
}

/// How one logged plan ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    GenericScan,
    CustomScan(Option<u64>),
    OtherScan,
    GenericIndex,
    CustomIndex,
    Other,
}

/// The product id in `'[{"product_id": 17}]'`-like text.
fn product_in(text: &str) -> Option<u64> {
    let after = &text[text.find("product_id")? + "product_id".len()..];
    let digits: String = after.chars().skip_while(|c| !c.is_ascii_digit()).take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// Every node of a plan tree, outermost first.
fn nodes(plan: &Value) -> Vec<&Value> {
    let mut out = vec![plan];
    let mut index = 0;
    while index < out.len() {
        let node = out[index];
        out.extend(node["Plans"].as_array().into_iter().flatten());
        index += 1;
    }
    out
}

fn classify(explained: &Value) -> Kind {
    let text = explained["Query Text"].as_str().unwrap_or_default();
    let product_search = text.contains("doc->'items' @>");
    let all = nodes(&explained["Plan"]);
    let seq_scan = all
        .iter()
        .find(|n| n["Node Type"].as_str() == Some("Seq Scan") && n["Relation Name"].as_str() == Some("orders"));
    let condition = |n: &&Value| {
        n["Filter"].as_str().or(n["Recheck Cond"].as_str()).or(n["Index Cond"].as_str()).map(str::to_owned)
    };
    let containment = all.iter().filter_map(condition).find(|c| c.contains("@>")).unwrap_or_default();
    let generic = containment.contains("$1");
    match (product_search, seq_scan, generic) {
        (true, Some(_), true) => Kind::GenericScan,
        (true, Some(_), false) => Kind::CustomScan(product_in(&containment)),
        (false, Some(_), _) => Kind::OtherScan,
        (true, None, true) => Kind::GenericIndex,
        (true, None, false) => Kind::CustomIndex,
        (false, None, _) => Kind::Other,
    }
}

/// The plan JSON of an `auto_explain` message (`duration: 13.3 ms  plan:\n{...}`).
fn logged_plan(message: &str) -> Option<Value> {
    let (head, plan) = message.split_once("plan:")?;
    head.trim_start().starts_with("duration:").then(|| serde_json::from_str(plan.trim()).ok())?
}

/// Sorts the plans that `auto_explain` logged for `database` in these JSON log lines.
pub fn attribute(log: &[u8], database: &str, threshold_ms: f64) -> ScanAttribution {
    let mut result = ScanAttribution { threshold_ms, ..ScanAttribution::default() };
    let mut products: BTreeMap<u64, u64> = BTreeMap::new();
    for line in log.split(|b| *b == b'\n') {
        let Ok(record) = serde_json::from_slice::<Value>(line) else { continue };
        if record["dbname"].as_str() != Some(database) {
            continue;
        }
        let Some(plan) = record["message"].as_str().and_then(logged_plan) else { continue };
        result.plans_logged += 1;
        match classify(&plan) {
            Kind::GenericScan => result.generic_seq_scans += 1,
            Kind::CustomScan(product) => {
                result.custom_seq_scans += 1;
                if let Some(product) = product {
                    *products.entry(product).or_default() += 1;
                }
            }
            Kind::OtherScan => result.other_seq_scans += 1,
            Kind::GenericIndex => result.generic_index_plans += 1,
            Kind::CustomIndex => result.custom_index_plans += 1,
            Kind::Other => {}
        }
    }
    let mut ranked: Vec<(u64, u64)> = products.into_iter().collect();
    ranked.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    ranked.truncate(10);
    result.custom_scan_products = ranked;
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn line(database: &str, plan: Value) -> String {
        let message = format!("duration: 13.359 ms  plan:\n{}", serde_json::to_string_pretty(&plan).expect("json"));
        json!({"timestamp": "2026-12-04 10:00:00.000 UTC", "dbname": database, "error_severity": "LOG", "message": message})
            .to_string()
    }

    fn search(filter_of_scan: &str, parameters: &str) -> Value {
        json!({
            "Query Text": "SELECT doc FROM orders WHERE doc->'items' @> $1 LIMIT 10",
            "Query Parameters": parameters,
            "Plan": {"Node Type": "Limit", "Plans": [
                {"Node Type": "Seq Scan", "Relation Name": "orders", "Filter": filter_of_scan}
            ]}
        })
    }

    fn bitmap(condition: &str) -> Value {
        json!({
            "Query Text": "SELECT doc FROM orders WHERE doc->'items' @> $1 LIMIT 10",
            "Plan": {"Node Type": "Limit", "Plans": [
                {"Node Type": "Bitmap Heap Scan", "Relation Name": "orders", "Recheck Cond": condition, "Plans": [
                    {"Node Type": "Bitmap Index Scan", "Index Name": "orders_items", "Index Cond": condition}
                ]}
            ]}
        })
    }

    #[test]
    fn generic_and_custom_scans_other_statements_and_other_databases_are_told_apart() {
        let generic = search("((doc -> 'items'::text) @> $1)", "$1 = '[{\"product_id\": 98}]'");
        let custom = search("((doc -> 'items'::text) @> '[{\"product_id\": 680}]'::jsonb)", "");
        let count = json!({"Query Text": "SELECT count(*) FROM orders", "Plan": {"Node Type": "Aggregate", "Plans": [
            {"Node Type": "Seq Scan", "Relation Name": "orders"}]}});
        let log = [
            line("orders_demo", generic.clone()),
            line("orders_demo", generic.clone()),
            line("orders_demo", custom.clone()),
            line("orders_demo", custom),
            line("orders_demo", count),
            line("orders_demo", bitmap("((doc -> 'items'::text) @> $1)")),
            line("orders_demo", bitmap("((doc -> 'items'::text) @> '[{\"product_id\": 5}]'::jsonb)")),
            line("another_database", generic),
            "not json".to_owned(),
            json!({"dbname": "orders_demo", "message": "checkpoint complete"}).to_string(),
        ]
        .join("\n");
        let result = attribute(log.as_bytes(), "orders_demo", 5.0);
        assert_eq!(result.plans_logged, 7);
        assert_eq!(result.generic_seq_scans, 2, "F1's scans: the generic plan's filter reads $1");
        assert_eq!(result.custom_seq_scans, 2, "a custom plan's scan is not F1");
        assert_eq!(result.other_seq_scans, 1);
        assert_eq!((result.generic_index_plans, result.custom_index_plans), (1, 1));
        assert_eq!(result.custom_scan_products, [(680, 2)]);
    }

    #[test]
    fn products_are_read_from_the_containment() {
        assert_eq!(product_in("((doc -> 'items'::text) @> '[{\"product_id\": 680}]'::jsonb)"), Some(680));
        assert_eq!(product_in("((doc -> 'items'::text) @> $1)"), None);
    }
}

/// The hook as a round uses it, against a database of the test's own on the local stack.
#[cfg(test)]
mod hook_tests {
    use crate::Backend as _;
    use crate::databases::pg_session;
    use crate::hybrid::Hybrid;
    use crate::postgres::Postgres;
    use orders_bench_model::explain::{EngineExplain, PgExplain};

    /// Only orders-pg's jsonb layout keeps a plan log (its figures are where S1's scans are
    /// attributed); the hybrid layout on the same engine has none to turn on.
    #[tokio::test]
    async fn orders_pgs_plan_log_attributes_a_scan_of_its_own_database_and_the_hybrid_keeps_none() {
        let url = orders_pg::testing::fresh_database().await;
        orders_pg::PgStore::connect(&orders_pg::PgConfig::with_url(url.clone())).await.expect("migrate");
        assert!(Hybrid::new(&url).plan_log(0.0).await.is_none(), "the hybrid keeps no plan log");
        let mut log = match Postgres::at(&url).plan_log(0.0).await {
            Some(Ok(log)) => log,
            Some(Err(error)) => panic!("turning the plan log on: {error:#}"),
            None => panic!("orders-pg keeps a plan log"),
        };
        log.mark().await.expect("the log's position");
        let (client, _connection) = pg_session(&url).await.expect("a new session, which logs its plans");
        client.simple_query("SET enable_indexscan = off; SET enable_bitmapscan = off").await.expect("set");
        client.simple_query("SELECT doc FROM orders WHERE doc->>'status' = 'shipped'").await.expect("a scan");
        let mut seen = 0;
        for _ in 0..50 {
            let mut figures = EngineExplain::Pg(Box::new(PgExplain { seq_scans: Some(1.0), ..PgExplain::default() }));
            log.add_scans(&mut figures).await;
            let scans = figures.as_pg().and_then(|pg| pg.scans.clone()).expect("scans in the figures");
            assert_eq!(scans.error, None);
            seen = scans.other_seq_scans;
            if seen >= 1 {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        assert_eq!(seen, 1, "the scan of another statement, logged on its database");
    }
}
