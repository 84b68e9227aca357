//! `/diagnostics` for MongoDB: what a reader needs to explain a benchmark result without a shell on
//! the server. Everything is read back from the server (`buildInfo`, `hello`, `serverStatus`,
//! `getCmdLineOpts`, `getDefaultRWConcern`, `getParameter`, `$collStats`, `explain`), except the
//! write concern the driver attaches to every write and its TLS setting, which only the client knows. A section the server refuses (a
//! command a standalone or a restricted user cannot run) reports its error instead of failing the
//! whole report; only an unreachable server fails it. The orders collection's own figures
//! (`$collStats`, the product query's plan) are in `collection`.

use crate::config::acknowledgment_text;
use crate::error::{describe, store_error};
use crate::indexes::COLLECTION;
pub use crate::replication::{SentWriteConcern, WriteAck};
pub use crate::section::Section;
use crate::section::section;
use mongodb::bson::{Bson, Document, doc};
use mongodb::options::Acknowledgment;
use mongodb::{Collection, Database};
use orders_core::StoreError;
use serde::{Deserialize, Serialize};
use serde_json::{Number, Value};
use std::collections::BTreeMap;

mod collection;
pub use collection::{CollectionStats, ProductQuery, coll_stats, storage_stats};
use collection::{collection_stats, product_query_plan};

/// What `GET /diagnostics` answers (before the HTTP layer adds `pool`). The service serializes it
/// and the bench runner deserializes it (and fills a few sections itself from its own
/// connection), so a renamed field breaks the build of both rather than leaving a figure silently
/// "not reported". Every field is optional and absent ones are left out, so an older service's
/// report still parses. Figures are the server's numbers as it sent them (integer or not).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Diagnostics {
    /// `mongodb`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backend: Option<String>,
    /// Who read the figures when it was not the service (`orders-bench` for the runner's samples).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// Why the figures are missing, when they are.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server: Option<Server>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub settings: Option<Settings>,
    /// The member written to and what a write waits for (`replication`), from `hello`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replication: Option<Section<crate::replication::Replication>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub collection: Option<Section<CollectionStats>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub opcounters: Option<Section<Opcounters>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wiredtiger_cache: Option<Section<CacheFigures>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub product_query: Option<Section<ProductQuery>>,
    /// Where reads go: `MONGODB_URI`'s read preference and the member that answers it (`crate::reads`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reads: Option<crate::reads::Reads>,
    /// Whether the connections are encrypted, and what the server says of it (`crate::tls`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls: Option<crate::tls::Tls>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Server {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub git_version: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub topology: Option<Section<Topology>>,
    /// The storage engine's name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub storage_engine: Option<Section<Value>>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Topology {
    /// `standalone`, `replica set <name>` or `sharded (mongos)`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    pub is_writable_primary: Option<bool>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Settings {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub database: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub collection: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub write_concern: Option<WriteConcerns>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub journal: Option<Journal>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pool: Option<PoolSettings>,
    /// The service's limits (`POOL_TIMEOUT_MS`, the request timeout as `maxTimeMS`, the server
    /// selection timeout in effect).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pool_timeout_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_time_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_selection_timeout_ms: Option<u64>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct WriteConcerns {
    /// What the driver attaches to every write of the service.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sent_with_every_write: Option<SentWriteConcern>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_default: Option<Section<DefaultWriteConcern>>,
}

/// `getDefaultRWConcern`'s answer, as the server wrote it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct DefaultWriteConcern {
    pub default_write_concern: Value,
    pub default_write_concern_source: Value,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Journal {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub startup_options: Option<Section<JournalOptions>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wiredtiger_log: Option<Section<LogFigures>>,
}

/// The `storage.journal` start-up options (absent: the default, on).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct JournalOptions {
    #[serde(rename = "storage.journal")]
    pub storage_journal: Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
}

/// WiredTiger journal (log) statistics: `log_sync_operations` grows with every `j: true` write.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LogFigures {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log_sync_operations: Option<Number>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log_bytes_written: Option<Number>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log_flush_operations: Option<Number>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PoolSettings {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_pool_size_per_server: Option<u32>,
}

/// `serverStatus` opcounters (server-wide); any counter a server adds is kept in `other`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Opcounters {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub insert: Option<Number>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub query: Option<Number>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub update: Option<Number>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delete: Option<Number>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub getmore: Option<Number>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<Number>,
    #[serde(flatten)]
    pub other: BTreeMap<String, Value>,
}

/// WiredTiger cache statistics, under snake_case names.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CacheFigures {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes_currently_in_cache: Option<Number>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub maximum_bytes_configured: Option<Number>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tracked_dirty_bytes_in_cache: Option<Number>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pages_read_into_cache: Option<Number>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pages_written_from_cache: Option<Number>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes_read_into_cache: Option<Number>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes_written_from_cache: Option<Number>,
}

pub async fn collect(
    db: &Database,
    orders: &Collection<Document>,
    max_pool_size: u32,
    client_tls: &crate::tls::ClientTls,
) -> Result<Diagnostics, StoreError> {
    let build_info = db.run_command(doc! {"buildInfo": 1}).await.map_err(store_error)?;
    let admin = db.client().database("admin");
    let hello = command(db, doc! {"hello": 1}).await;
    let server_status = command(db, doc! {"serverStatus": 1}).await;
    let cmd_line = command(&admin, doc! {"getCmdLineOpts": 1}).await;
    let default_rw = command(&admin, doc! {"getDefaultRWConcern": 1}).await;
    let tls_mode = command(&admin, doc! {"getParameter": 1, "tlsMode": 1}).await;
    let sent = write_concern(orders);
    let replication = section(&hello, |h| crate::replication::from_hello(h, &sent, default_rw.as_ref().ok()));
    Ok(Diagnostics {
        backend: Some("mongodb".into()),
        source: None,
        error: None,
        server: Some(Server {
            version: Some(build_info.get_str("version").unwrap_or("unknown").into()),
            git_version: Some(build_info.get_str("gitVersion").unwrap_or("unknown").into()),
            topology: Some(section(&hello, topology)),
            storage_engine: Some(section(&server_status, |s| {
                json(s.get_document("storageEngine").ok().and_then(|e| e.get("name")))
            })),
        }),
        settings: Some(Settings {
            database: Some(db.name().into()),
            collection: Some(COLLECTION.into()),
            write_concern: Some(WriteConcerns {
                sent_with_every_write: Some(sent),
                server_default: Some(section(&default_rw, |d| DefaultWriteConcern {
                    default_write_concern: json(d.get("defaultWriteConcern")),
                    default_write_concern_source: json(d.get("defaultWriteConcernSource")),
                })),
            }),
            journal: Some(journal(&cmd_line, &server_status)),
            pool: Some(PoolSettings { max_pool_size_per_server: Some(max_pool_size) }),
            pool_timeout_ms: None,
            max_time_ms: None,
            server_selection_timeout_ms: None,
        }),
        replication: Some(replication),
        reads: Some(crate::reads::read(db, orders).await),
        collection: Some(collection_stats(orders).await),
        opcounters: Some(section(&server_status, opcounters)),
        wiredtiger_cache: Some(flatten(section(&server_status, |s| wired_tiger(s, "cache", cache_figures)))),
        product_query: Some(product_query_plan(db).await),
        tls: Some(crate::tls::report(client_tls, &tls_mode, &server_status)),
    })
}

/// Runs a command; a refusal becomes its message (the report shows it in place of the section).
pub(super) async fn command(db: &Database, command: Document) -> Result<Document, String> {
    db.run_command(command).await.map_err(|error| describe(&error))
}

fn flatten<T>(section: Section<Section<T>>) -> Section<T> {
    match section {
        Section::Read(inner) => inner,
        Section::Refused { error } => Section::Refused { error },
    }
}

fn json(value: Option<&Bson>) -> Value {
    value.cloned().map_or(Value::Null, Bson::into_relaxed_extjson)
}

/// A figure as the server sent it; `None` when absent or not a number.
pub(super) fn number(value: Option<&Bson>) -> Option<Number> {
    match json(value) {
        Value::Number(number) => Some(number),
        _ => None,
    }
}

fn topology(hello: &Document) -> Topology {
    let kind = if hello.get_str("msg") == Ok("isdbgrid") {
        "sharded (mongos)".to_owned()
    } else if let Ok(set) = hello.get_str("setName") {
        format!("replica set {set}")
    } else {
        "standalone".to_owned()
    };
    Topology { kind: Some(kind), is_writable_primary: hello.get_bool("isWritablePrimary").ok() }
}

/// The driver attaches this to every write of the service (`w` and `j` of the collection).
fn write_concern(orders: &Collection<Document>) -> SentWriteConcern {
    let Some(concern) = orders.write_concern() else {
        return SentWriteConcern { w: None, j: None, note: Some("none set: the server default applies".into()) };
    };
    let w = match &concern.w {
        Some(Acknowledgment::Nodes(nodes)) => Some(WriteAck::Nodes(*nodes)),
        Some(other) => Some(WriteAck::Named(acknowledgment_text(other))),
        None => None,
    };
    SentWriteConcern { w, j: concern.journal, note: None }
}

/// Journaling as the server runs it: the `storage.journal` start-up options (absent means the
/// default, on; MongoDB 6.1+ cannot turn it off) and the WiredTiger log counters.
fn journal(cmd_line: &Result<Document, String>, server_status: &Result<Document, String>) -> Journal {
    let options = section(cmd_line, |opts| {
        let journal = opts
            .get_document("parsed")
            .and_then(|p| p.get_document("storage"))
            .and_then(|s| s.get_document("journal"))
            .ok();
        let enabled = journal.and_then(|j| j.get_bool("enabled").ok()).unwrap_or(true);
        JournalOptions {
            storage_journal: journal.map_or(Value::Null, |j| Bson::Document(j.clone()).into_relaxed_extjson()),
            enabled: Some(enabled),
        }
    });
    Journal {
        startup_options: Some(options),
        wiredtiger_log: Some(flatten(section(server_status, |s| wired_tiger(s, "log", log_figures)))),
    }
}

/// A group of `serverStatus.wiredTiger`, read by `figures` (which looks figures up by the
/// server's names).
fn wired_tiger<T>(server_status: &Document, group: &str, figures: fn(&Document) -> T) -> Section<T> {
    match server_status.get_document("wiredTiger").and_then(|w| w.get_document(group)) {
        Ok(stats) => Section::Read(figures(stats)),
        Err(_) => Section::Refused { error: format!("serverStatus has no wiredTiger.{group} section") },
    }
}

fn cache_figures(stats: &Document) -> CacheFigures {
    let figure = |key: &str| number(stats.get(key));
    CacheFigures {
        bytes_currently_in_cache: figure("bytes currently in the cache"),
        maximum_bytes_configured: figure("maximum bytes configured"),
        tracked_dirty_bytes_in_cache: figure("tracked dirty bytes in the cache"),
        pages_read_into_cache: figure("pages read into cache"),
        pages_written_from_cache: figure("pages written from cache"),
        bytes_read_into_cache: figure("bytes read into cache"),
        bytes_written_from_cache: figure("bytes written from cache"),
    }
}

fn log_figures(stats: &Document) -> LogFigures {
    let figure = |key: &str| number(stats.get(key));
    LogFigures {
        log_sync_operations: figure("log sync operations"),
        log_bytes_written: figure("log bytes written"),
        log_flush_operations: figure("log flush operations"),
    }
}

/// `serverStatus.opcounters`.
pub fn opcounters(server_status: &Document) -> Opcounters {
    match json(server_status.get("opcounters")) {
        Value::Object(counters) => serde_json::from_value(Value::Object(counters)).unwrap_or_default(),
        _ => Opcounters::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_refused_section_reports_the_error_in_its_place() {
        let refused: Result<Document, String> = Err("not supported on a standalone".into());
        let section = section(&refused, |_| Value::Null);
        assert_eq!(serde_json::to_value(&section).expect("json"), json!({"error": "not supported on a standalone"}));
        let read: Section<Topology> = serde_json::from_value(json!({"error": "refused"})).expect("parse");
        assert_eq!(read.read(), None, "an error in place of a section is read as the refusal");
    }
}
