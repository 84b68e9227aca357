//! The indexes of the `orders` collection, as written in `migrations/mongo/indexes.json` (a
//! `createIndexes` command a DBA can also run by hand) and compiled into the binary. `apply` sends
//! them at start-up; `createIndexes` is a no-op for an index that already exists with the same name
//! and key, and an error (stopping start-up) when one exists with the same name but another key.

use crate::error::describe;
use mongodb::bson::{Bson, Document};
use mongodb::options::IndexOptions;
use mongodb::{Collection, IndexModel};

/// The migration file, read at compile time.
pub const SPEC: &str = include_str!("../../../migrations/mongo/indexes.json");

/// The collection every order lives in.
pub const COLLECTION: &str = "orders";

/// The file is not the `createIndexes` command this code expects.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("migrations/mongo/indexes.json: {0}")]
pub struct SpecError(String);

/// The index models of the migration file; each index has a `name` and a `key`, and may have
/// `unique` and a `partialFilterExpression` (the `Idempotency-Key` index); any other option is an
/// error, so none in the file can be silently ignored.
pub fn index_models() -> Result<Vec<IndexModel>, SpecError> {
    // Deserialising straight into a BSON document keeps the key order, which an index key needs.
    let command: Document = serde_json::from_str(SPEC).map_err(|error| SpecError(error.to_string()))?;
    let collection = command.get_str("createIndexes").map_err(|_| SpecError("needs \"createIndexes\"".into()))?;
    if collection != COLLECTION {
        return Err(SpecError(format!("creates indexes on `{collection}`, but the orders live in `{COLLECTION}`")));
    }
    if let Some(key) = command.keys().find(|key| !matches!(key.as_str(), "createIndexes" | "indexes")) {
        return Err(SpecError(format!("unexpected field `{key}`")));
    }
    let indexes = command.get_array("indexes").map_err(|_| SpecError("needs an \"indexes\" array".into()))?;
    indexes.iter().map(index_model).collect()
}

fn index_model(spec: &Bson) -> Result<IndexModel, SpecError> {
    let spec = spec.as_document().ok_or_else(|| SpecError("each index must be an object".into()))?;
    if let Some(key) =
        spec.keys().find(|key| !matches!(key.as_str(), "name" | "key" | "unique" | "partialFilterExpression"))
    {
        return Err(SpecError(format!("unexpected index option `{key}`")));
    }
    let name = spec.get_str("name").map_err(|_| SpecError("each index needs a \"name\"".into()))?;
    let keys = spec.get_document("key").map_err(|_| SpecError(format!("index {name} needs a \"key\" object")))?;
    let keys: Document =
        keys.iter().map(|(field, kind)| Ok((field.clone(), key_kind(name, field, kind)?))).collect::<Result<_, _>>()?;
    let unique = match spec.get("unique") {
        None => None,
        Some(Bson::Boolean(unique)) => Some(*unique),
        Some(other) => return Err(SpecError(format!("index {name}: `unique` must be true or false, not {other}"))),
    };
    let partial = match spec.get("partialFilterExpression") {
        None => None,
        Some(Bson::Document(filter)) => Some(filter.clone()),
        Some(other) => {
            return Err(SpecError(format!("index {name}: `partialFilterExpression` must be an object, not {other}")));
        }
    };
    let options =
        IndexOptions::builder().name(name.to_owned()).unique(unique).partial_filter_expression(partial).build();
    Ok(IndexModel::builder().keys(keys).options(options).build())
}

/// `1`/`-1` as the Int32 the shell and the server use (JSON parsing may give an Int64), or an
/// index type such as `"hashed"`.
fn key_kind(name: &str, field: &str, kind: &Bson) -> Result<Bson, SpecError> {
    match kind {
        Bson::Int32(1 | -1) | Bson::String(_) => Ok(kind.clone()),
        Bson::Int64(direction @ (1 | -1)) => Ok(Bson::Int32(if *direction == 1 { 1 } else { -1 })),
        other => Err(SpecError(format!("index {name}: key `{field}` must be 1, -1 or an index type, not {other}"))),
    }
}

/// Creates the indexes that are missing; returns their names.
pub async fn apply(orders: &Collection<Document>) -> Result<Vec<String>, ApplyError> {
    let models = index_models()?;
    let created = orders.create_indexes(models).await.map_err(ApplyError::Server)?;
    Ok(created.index_names)
}

#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    #[error(transparent)]
    Spec(#[from] SpecError),
    #[error("createIndexes failed: {}", describe(.0))]
    Server(mongodb::error::Error),
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys_and_directions(model: &IndexModel) -> Vec<(String, i32)> {
        model.keys.iter().map(|(key, value)| (key.clone(), value.as_i32().unwrap_or(0))).collect()
    }

    #[test]
    fn the_migration_file_holds_the_indexes_of_the_design_in_key_order() {
        let models = index_models().expect("the spec parses");
        let names: Vec<_> = models.iter().map(|m| m.options.as_ref().and_then(|o| o.name.clone())).collect();
        let expected = ["orders_customer", "orders_items", "orders_idempotency_key"].map(|n| Some(n.to_owned()));
        assert_eq!(names, expected);
        assert_eq!(keys_and_directions(&models[0]), [("customer.id".to_owned(), 1), ("_id".to_owned(), -1)]);
        assert_eq!(keys_and_directions(&models[1]), [("items.product_id".to_owned(), 1)]);
        let keyed = models[2].options.as_ref().expect("options");
        assert_eq!(keyed.unique, Some(true));
        let filter = keyed.partial_filter_expression.as_ref().expect("partial: documents without a key stay out");
        assert_eq!(filter.get_document("idempotency_key").map(|f| f.contains_key("$exists")), Ok(true));
        assert_eq!(models[0].options.as_ref().and_then(|o| o.unique), None, "the others stay plain");
    }
}
