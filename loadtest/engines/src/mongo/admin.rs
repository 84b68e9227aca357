//! The commands the bench runner (`orders-bench`) sends to MongoDB besides the service's own:
//! the seeding checks and the `fsync` checkpoint after a load, `$collStats` sizes, exact document
//! counts, and the two-command sample of the figures `/diagnostics` reports while a run is
//! measured. The service runs none of them (`coll_stats` is its `/diagnostics`' own, re-exported),
//! so they live with the runner's engines, not in orders-mongo.

use mongodb::bson::{Bson, Document, doc};
use mongodb::error::Error;
use mongodb::{Collection, Database};
use orders_mongo::diagnostics::{self, CollectionStats, Diagnostics, Journal, LogFigures, Section, Settings};
use orders_mongo::indexes::COLLECTION;
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

pub use orders_mongo::diagnostics::coll_stats;

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

/// Feeds every order's BSON bytes, in `_id` order, to `digest`; returns how many there were.
pub async fn fingerprint(orders: &Collection<Document>, mut digest: impl FnMut(&[u8])) -> Result<u64, Error> {
    let mut cursor =
        orders.clone_with_type::<mongodb::bson::RawDocumentBuf>().find(doc! {}).sort(doc! {"_id": 1}).await?;
    let mut count = 0;
    while cursor.advance().await? {
        digest(cursor.current().as_bytes());
        count += 1;
    }
    Ok(count)
}

/// Reads the orders and every index of theirs once, so their pages are in WiredTiger's cache:
/// a scan of the collection, then for each index a count that walks it (hinted).
pub async fn warm(orders: &Collection<Document>) -> Result<(), Error> {
    let mut cursor = orders.find(doc! {}).projection(doc! {"_id": 1, "status": 1}).await?;
    while cursor.advance().await? {}
    for index in orders.list_index_names().await? {
        orders.count_documents(doc! {}).hint(mongodb::options::Hint::Name(index)).await?;
    }
    Ok(())
}

/// Operations running on the server other than this client's own (`currentOp`), as
/// `op: command` lines: index builds, other clients' queries.
pub async fn busy_operations(db: &Database) -> Result<Vec<String>, Error> {
    let report = db.client().database("admin").run_command(doc! {"currentOp": 1, "active": true}).await?;
    let operations = report.get_array("inprog").map(|ops| ops.to_vec()).unwrap_or_default();
    Ok(operations
        .iter()
        .filter_map(Bson::as_document)
        .filter(|op| is_work(op))
        .map(|op| {
            let kind = op.get_str("op").unwrap_or("?");
            let command = op.get_document("command").map(|c| c.keys().next().cloned().unwrap_or_default());
            format!("{kind}: {}", command.unwrap_or_default())
        })
        .collect())
}

/// Whether an operation of `currentOp` is work on the server rather than its own upkeep: the
/// drivers' server monitors hold a `hello` open (awaitable), and in a replica set each secondary
/// tails the primary's oplog with a `getMore` that waits for new entries (replication, not load).
fn is_work(op: &Document) -> bool {
    let command = op.get_document("command").ok();
    let ignored = ["currentOp", "hello", "isMaster", "ismaster"];
    let monitoring = command.is_some_and(|c| ignored.iter().any(|name| c.contains_key(name)));
    let internal = op.get_str("desc").is_ok_and(|d| !d.starts_with("conn"));
    let replication = op.get_str("ns") == Ok("local.oplog.rs");
    !monitoring && !internal && !replication
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secondarys_oplog_tail_and_monitors_are_not_work() {
        let tail = doc! {"desc": "conn12", "op": "getmore", "ns": "local.oplog.rs", "command": {"getMore": 1_i64}};
        let monitor = doc! {"desc": "conn3", "op": "command", "ns": "admin.$cmd", "command": {"hello": 1}};
        let build = doc! {"desc": "conn7", "op": "command", "ns": "db.orders", "command": {"createIndexes": "orders"}};
        let orders = doc! {"desc": "conn9", "op": "getmore", "ns": "db.orders", "command": {"getMore": 1_i64}};
        assert!(!is_work(&tail) && !is_work(&monitor));
        assert!(is_work(&build) && is_work(&orders));
    }
}
