//! `/diagnostics` for MongoDB: what a reader needs to explain a benchmark result without a shell on
//! the server. Everything is read back from the server (`buildInfo`, `hello`, `serverStatus`,
//! `getCmdLineOpts`, `getDefaultRWConcern`, `$collStats`, `explain`), except the write concern the
//! driver attaches to every write, which only the client knows. A section the server refuses (a
//! command a standalone or a restricted user cannot run) reports its error instead of failing the
//! whole report; only an unreachable server fails it.

use crate::config::acknowledgment_text;
use crate::error::{describe, store_error};
use crate::indexes::COLLECTION;
use futures_util::TryStreamExt;
use mongodb::bson::{Bson, Document, doc};
use mongodb::options::Acknowledgment;
use mongodb::{Collection, Database};
use orders_core::StoreError;
use serde_json::{Value, json};

/// The product whose query plan is explained (any id gives the same plan shape).
const EXPLAINED_PRODUCT: i64 = 1;

/// WiredTiger cache statistics reported, under snake_case names.
const CACHE_FIGURES: &[(&str, &str)] = &[
    ("bytes_currently_in_cache", "bytes currently in the cache"),
    ("maximum_bytes_configured", "maximum bytes configured"),
    ("tracked_dirty_bytes_in_cache", "tracked dirty bytes in the cache"),
    ("pages_read_into_cache", "pages read into cache"),
    ("pages_written_from_cache", "pages written from cache"),
    ("bytes_read_into_cache", "bytes read into cache"),
    ("bytes_written_from_cache", "bytes written from cache"),
];

/// WiredTiger journal (log) statistics: `log_sync_operations` grows with every `j: true` write.
const LOG_FIGURES: &[(&str, &str)] = &[
    ("log_sync_operations", "log sync operations"),
    ("log_bytes_written", "log bytes written"),
    ("log_flush_operations", "log flush operations"),
];

const STORAGE_FIGURES: &[&str] =
    &["count", "size", "avgObjSize", "storageSize", "freeStorageSize", "nindexes", "totalIndexSize", "totalSize"];

pub async fn collect(db: &Database, orders: &Collection<Document>, max_pool_size: u32) -> Result<Value, StoreError> {
    let build_info = db.run_command(doc! {"buildInfo": 1}).await.map_err(store_error)?;
    let admin = db.client().database("admin");
    let hello = command(db, doc! {"hello": 1}).await;
    let server_status = command(db, doc! {"serverStatus": 1}).await;
    let cmd_line = command(&admin, doc! {"getCmdLineOpts": 1}).await;
    let default_rw = command(&admin, doc! {"getDefaultRWConcern": 1}).await;
    Ok(json!({
        "backend": "mongodb",
        "server": {
            "version": build_info.get_str("version").unwrap_or("unknown"),
            "git_version": build_info.get_str("gitVersion").unwrap_or("unknown"),
            "topology": section(&hello, topology),
            "storage_engine": section(&server_status, |s| json(s.get_document("storageEngine").ok().and_then(|e| e.get("name")))),
        },
        "settings": {
            "database": db.name(),
            "collection": COLLECTION,
            "write_concern": {
                "sent_with_every_write": write_concern(orders),
                "server_default": section(&default_rw, |d| json!({
                    "defaultWriteConcern": json(d.get("defaultWriteConcern")),
                    "defaultWriteConcernSource": json(d.get("defaultWriteConcernSource")),
                })),
            },
            "journal": journal(&cmd_line, &server_status),
            "pool": {"max_pool_size_per_server": max_pool_size},
        },
        "collection": collection_stats(orders).await,
        "opcounters": section(&server_status, |s| json(s.get("opcounters"))),
        "wiredtiger_cache": section(&server_status, |s| wired_tiger(s, "cache", CACHE_FIGURES)),
        "product_query": product_query_plan(db).await,
    }))
}

/// Runs a command; a refusal becomes its message (the report shows it in place of the section).
async fn command(db: &Database, command: Document) -> Result<Document, String> {
    db.run_command(command).await.map_err(|error| describe(&error))
}

fn section(result: &Result<Document, String>, read: impl Fn(&Document) -> Value) -> Value {
    match result {
        Ok(document) => read(document),
        Err(error) => json!({"error": error}),
    }
}

fn json(value: Option<&Bson>) -> Value {
    value.cloned().map_or(Value::Null, Bson::into_relaxed_extjson)
}

fn topology(hello: &Document) -> Value {
    let kind = if hello.get_str("msg") == Ok("isdbgrid") {
        "sharded (mongos)".to_owned()
    } else if let Ok(set) = hello.get_str("setName") {
        format!("replica set {set}")
    } else {
        "standalone".to_owned()
    };
    json!({"kind": kind, "is_writable_primary": json(hello.get("isWritablePrimary"))})
}

/// The driver attaches this to every write of the service (`w` and `j` of the collection).
fn write_concern(orders: &Collection<Document>) -> Value {
    let Some(concern) = orders.write_concern() else {
        return json!({"w": null, "j": null, "note": "none set: the server default applies"});
    };
    let w = match &concern.w {
        Some(Acknowledgment::Nodes(nodes)) => json!(nodes),
        Some(other) => json!(acknowledgment_text(other)),
        None => Value::Null,
    };
    json!({"w": w, "j": concern.journal})
}

/// Journaling as the server runs it: the `storage.journal` start-up options (absent means the
/// default, on; MongoDB 6.1+ cannot turn it off) and the WiredTiger log counters.
fn journal(cmd_line: &Result<Document, String>, server_status: &Result<Document, String>) -> Value {
    let options = section(cmd_line, |opts| {
        let journal = opts
            .get_document("parsed")
            .and_then(|p| p.get_document("storage"))
            .and_then(|s| s.get_document("journal"))
            .ok();
        let enabled = journal.and_then(|j| j.get_bool("enabled").ok()).unwrap_or(true);
        json!({"storage.journal": journal.map(|j| Bson::Document(j.clone()).into_relaxed_extjson()), "enabled": enabled})
    });
    json!({
        "startup_options": options,
        "wiredtiger_log": section(server_status, |s| wired_tiger(s, "log", LOG_FIGURES)),
    })
}

fn wired_tiger(server_status: &Document, group: &str, figures: &[(&str, &str)]) -> Value {
    let Ok(stats) = server_status.get_document("wiredTiger").and_then(|w| w.get_document(group)) else {
        return json!({"error": format!("serverStatus has no wiredTiger.{group} section")});
    };
    figures
        .iter()
        .map(|(name, key)| ((*name).to_owned(), json(stats.get(*key))))
        .collect::<serde_json::Map<_, _>>()
        .into()
}

async fn collection_stats(orders: &Collection<Document>) -> Value {
    let stats: Result<Vec<Document>, _> = match orders.aggregate([doc! {"$collStats": {"storageStats": {}}}]).await {
        Ok(cursor) => cursor.try_collect().await,
        Err(error) => Err(error),
    };
    let stats = match stats {
        Ok(stats) => stats,
        Err(error) => return json!({"error": describe(&error)}),
    };
    let Some(storage) = stats.first().and_then(|s| s.get_document("storageStats").ok()) else {
        return json!({"error": "$collStats returned no storageStats"});
    };
    let mut report: serde_json::Map<String, Value> =
        STORAGE_FIGURES.iter().map(|key| ((*key).to_owned(), json(storage.get(*key)))).collect();
    report.insert("indexSizes".into(), json(storage.get("indexSizes")));
    report.into()
}

/// The winning plan of the product query (`find({"items.product_id": N}).limit(10)`), with the
/// stage names and index names of the plan tree flattened so `IXSCAN` on `orders_items` is easy
/// to see (and to test).
async fn product_query_plan(db: &Database) -> Value {
    let find = doc! {"find": COLLECTION, "filter": {"items.product_id": EXPLAINED_PRODUCT}, "limit": 10_i64};
    let explained = match command(db, doc! {"explain": find.clone(), "verbosity": "queryPlanner"}).await {
        Ok(explained) => explained,
        Err(error) => return json!({"error": error}),
    };
    let Ok(planner) = explained.get_document("queryPlanner") else {
        return json!({"error": "explain returned no queryPlanner"});
    };
    let winning = planner.get("winningPlan").cloned().unwrap_or(Bson::Null);
    let (mut stages, mut indexes) = (Vec::new(), Vec::new());
    walk_plan(&winning, &mut stages, &mut indexes);
    json!({
        "command": Bson::Document(find).into_relaxed_extjson(),
        "stages": stages,
        "index_names": indexes,
        "rejected_plans": planner.get_array("rejectedPlans").map(Vec::len).unwrap_or(0),
        "winning_plan": winning.into_relaxed_extjson(),
    })
}

/// Collects `stage` and `indexName` in pre-order through `inputStage`, `inputStages` and any other
/// nesting (such as the `queryPlan` of a slot-based plan).
fn walk_plan(plan: &Bson, stages: &mut Vec<String>, indexes: &mut Vec<String>) {
    match plan {
        Bson::Document(node) => {
            if let Ok(stage) = node.get_str("stage") {
                stages.push(stage.to_owned());
            }
            if let Ok(index) = node.get_str("indexName") {
                indexes.push(index.to_owned());
            }
            node.values().for_each(|child| walk_plan(child, stages, indexes));
        }
        Bson::Array(children) => children.iter().for_each(|child| walk_plan(child, stages, indexes)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_stages_are_flattened_in_order_through_nested_inputs() {
        let plan = Bson::Document(doc! {
            "queryPlan": {
                "stage": "LIMIT",
                "inputStage": {
                    "stage": "FETCH",
                    "inputStage": {"stage": "IXSCAN", "indexName": "orders_items", "keyPattern": {"items.product_id": 1}},
                },
            },
            "slotBasedPlan": {"stages": "[1] limit 10"},
        });
        let (mut stages, mut indexes) = (Vec::new(), Vec::new());
        walk_plan(&plan, &mut stages, &mut indexes);
        assert_eq!(stages, ["LIMIT", "FETCH", "IXSCAN"]);
        assert_eq!(indexes, ["orders_items"]);
    }

    #[test]
    fn a_refused_section_reports_the_error_in_its_place() {
        let refused: Result<Document, String> = Err("not supported on a standalone".into());
        assert_eq!(section(&refused, |_| Value::Null), json!({"error": "not supported on a standalone"}));
    }
}
