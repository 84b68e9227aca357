//! The orders collection's part of `/diagnostics`: its `$collStats` storage figures and the
//! product query's winning plan (`explain`), stage and index names flattened. Apart from the
//! server-wide figures because these are read from the collection (the bench reads the same
//! storage figures itself through `coll_stats`).

use super::{Section, command, number};
use crate::error::describe;
use crate::indexes::COLLECTION;
use mongodb::bson::{Bson, Document, doc};
use mongodb::{Collection, Database};
use serde::{Deserialize, Serialize};
use serde_json::{Number, Value};
use std::collections::BTreeMap;

/// The product whose query plan is explained (any id gives the same plan shape).
const EXPLAINED_PRODUCT: i64 = 1;

/// `$collStats` storage statistics of the orders collection, under the server's names.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct CollectionStats {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub count: Option<Number>,
    /// Uncompressed BSON bytes of the documents.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<Number>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub avg_obj_size: Option<Number>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub storage_size: Option<Number>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub free_storage_size: Option<Number>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nindexes: Option<Number>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total_index_size: Option<Number>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total_size: Option<Number>,
    /// Bytes per index, by name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub index_sizes: Option<BTreeMap<String, Number>>,
}

/// The winning plan of the product query, with its stage and index names flattened.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ProductQuery {
    pub command: Value,
    pub stages: Vec<String>,
    pub index_names: Vec<String>,
    pub rejected_plans: usize,
    pub winning_plan: Value,
}

/// `$collStats` storage statistics from its `storageStats` document.
pub fn storage_stats(storage: &Document) -> CollectionStats {
    let figure = |key: &str| number(storage.get(key));
    CollectionStats {
        count: figure("count"),
        size: figure("size"),
        avg_obj_size: figure("avgObjSize"),
        storage_size: figure("storageSize"),
        free_storage_size: figure("freeStorageSize"),
        nindexes: figure("nindexes"),
        total_index_size: figure("totalIndexSize"),
        total_size: figure("totalSize"),
        index_sizes: storage
            .get_document("indexSizes")
            .ok()
            .map(|sizes| sizes.iter().filter_map(|(name, size)| Some((name.clone(), number(Some(size))?))).collect()),
    }
}

pub(super) async fn collection_stats(orders: &Collection<Document>) -> Section<CollectionStats> {
    match coll_stats(orders).await {
        Ok(Some(storage)) => Section::Read(storage_stats(&storage)),
        Ok(None) => Section::Refused { error: "$collStats returned no storageStats".into() },
        Err(error) => Section::Refused { error: describe(&error) },
    }
}

/// The winning plan of the product query (`find({"items.product_id": N}).limit(10)`), with the
/// stage names and index names of the plan tree flattened so `IXSCAN` on `orders_items` is easy
/// to see (and to test).
pub(super) async fn product_query_plan(db: &Database) -> Section<ProductQuery> {
    let find = doc! {"find": COLLECTION, "filter": {"items.product_id": EXPLAINED_PRODUCT}, "limit": 10_i64};
    let explained = match command(db, doc! {"explain": find.clone(), "verbosity": "queryPlanner"}).await {
        Ok(explained) => explained,
        Err(error) => return Section::Refused { error },
    };
    let Ok(planner) = explained.get_document("queryPlanner") else {
        return Section::Refused { error: "explain returned no queryPlanner".into() };
    };
    let winning = planner.get("winningPlan").cloned().unwrap_or(Bson::Null);
    let (mut stages, mut indexes) = (Vec::new(), Vec::new());
    walk_plan(&winning, &mut stages, &mut indexes);
    Section::Read(ProductQuery {
        command: Bson::Document(find).into_relaxed_extjson(),
        stages,
        index_names: indexes,
        rejected_plans: planner.get_array("rejectedPlans").map(Vec::len).unwrap_or(0),
        winning_plan: winning.into_relaxed_extjson(),
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

/// The `storageStats` of `$collStats`; `None` when the stage returned nothing.
pub async fn coll_stats(orders: &Collection<Document>) -> Result<Option<Document>, mongodb::error::Error> {
    let stats: Vec<Document> =
        futures_util::TryStreamExt::try_collect(orders.aggregate([doc! {"$collStats": {"storageStats": {}}}]).await?)
            .await?;
    Ok(stats.first().and_then(|s| s.get_document("storageStats").ok()).cloned())
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
}
