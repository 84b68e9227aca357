//! The commands the bench runner (`orders-bench`) sends to MongoDB besides the service's own:
//! the seeding checks and the `fsync` checkpoint after a load, `$collStats` sizes, exact document
//! counts, and the two-command sample of the figures `/diagnostics` reports while a run is
//! measured. They live beside the service's own BSON so that everything this engine is asked is
//! in one crate, and a third backend gets a module of the same shape. The service's `/diagnostics`
//! shares `coll_stats`; the rest is the runner's alone.

use crate::diagnostics::{self, CollectionStats, Diagnostics, Journal, LogFigures, Section, Settings};
use crate::indexes::COLLECTION;
use futures_util::TryStreamExt;
use mongodb::bson::{Bson, Document, doc};
use mongodb::error::Error;
use mongodb::{Collection, Database};
use serde_json::{Number, Value};

pub async fn ping(db: &Database) -> Result<(), Error> {
    db.run_command(doc! {"ping": 1}).await.map(drop)
}

/// Whether the collection holds any document.
pub async fn holds_orders(orders: &Collection<Document>) -> Result<bool, Error> {
    Ok(orders.find_one(doc! {}).await?.is_some())
}

pub async fn count_orders(orders: &Collection<Document>) -> Result<u64, Error> {
    orders.count_documents(doc! {}).await
}

/// `fsync`: makes WiredTiger write a checkpoint (needs the right to run it on `admin`).
pub async fn checkpoint(db: &Database) -> Result<(), Error> {
    db.client().database("admin").run_command(doc! {"fsync": 1}).await.map(drop)
}

/// The `storageStats` of `$collStats`; `None` when the stage returned nothing.
pub async fn coll_stats(orders: &Collection<Document>) -> Result<Option<Document>, Error> {
    let stats: Vec<Document> =
        orders.aggregate([doc! {"$collStats": {"storageStats": {}}}]).await?.try_collect().await?;
    Ok(stats.first().and_then(|s| s.get_document("storageStats").ok()).cloned())
}

/// The figures of `/diagnostics` a run is explained by, in two commands: `serverStatus` without
/// its largest sections (opcounters, WiredTiger log) and `$collStats` of the orders (document
/// count and sizes). `source` is left for the caller to name.
pub async fn sample(db: &Database) -> Result<Diagnostics, Error> {
    let status = db
        .run_command(doc! {"serverStatus": 1, "repl": 0, "metrics": 0, "locks": 0, "network": 0, "tcmalloc": 0})
        .await?;
    let log = |name: &str| number(&status, &["wiredTiger", "log", name]);
    let storage = coll_stats(&db.collection::<Document>(COLLECTION)).await?.unwrap_or_default();
    let figure = |name: &str| number(&storage, &[name]);
    Ok(Diagnostics {
        opcounters: Some(Section::Read(diagnostics::opcounters(&status))),
        settings: Some(Settings {
            journal: Some(Journal {
                wiredtiger_log: Some(Section::Read(LogFigures {
                    log_bytes_written: log("log bytes written"),
                    log_sync_operations: log("log sync operations"),
                    ..LogFigures::default()
                })),
                ..Journal::default()
            }),
            ..Settings::default()
        }),
        collection: Some(Section::Read(CollectionStats {
            count: figure("count"),
            size: figure("size"),
            storage_size: figure("storageSize"),
            total_index_size: figure("totalIndexSize"),
            ..CollectionStats::default()
        })),
        ..Diagnostics::default()
    })
}

/// The number at `path` in `document`, as the server sent it.
fn number(document: &Document, path: &[&str]) -> Option<Number> {
    let (last, parents) = path.split_last()?;
    let mut current = document;
    for key in parents {
        current = current.get_document(key).ok()?;
    }
    match current.get(*last).cloned().map(Bson::into_relaxed_extjson) {
        Some(Value::Number(number)) => Some(number),
        _ => None,
    }
}
