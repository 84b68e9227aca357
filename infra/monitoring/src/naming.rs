//! Percona's naming of `serverStatus` and `replSetGetStatus`, so that a dashboard written against
//! Percona's `mongodb_exporter` (its default diagnostic-data collector) reads this exporter
//! unchanged. The rules are those of Percona's `exporter/metrics.go`: every number's path has its
//! prefix shortened (`serverStatus.wiredTiger.` to `ss_wt_`, `replSetGetStatus.` to `rs_`, ...),
//! every run of other characters than letters, digits and `_` becomes one `_`, and `mongodb_` goes
//! in front: `serverStatus.wiredTiger.log.log bytes written` is `mongodb_ss_wt_log_log_bytes_written`.
//! The members of some documents become a label of one metric instead (`opcounters.insert` is
//! `mongodb_ss_opcounters{legacy_op_type="insert"}`), a few names are folded so afterwards
//! (`mongodb_ss_opLatencies_latency{op_type="reads"}`), and each document of an array (`members`)
//! is told apart by `member_idx` (its `host` or `name`) and `member_state` (its `stateStr`).
//! Strings and other non-numbers are left out, as Percona leaves them out; booleans are 0 or 1,
//! dates milliseconds.

use mongodb::bson::{Bson, Document};

const EXPORTER_PREFIX: &str = "mongodb_";

/// Shorter prefixes, most specific first (Percona's `prefixes`, the `serverStatus` ones).
const PREFIXES: [(&str, &str); 5] = [
    ("serverStatus.wiredTiger.transaction", "ss_wt_txn"),
    ("serverStatus.wiredTiger", "ss_wt"),
    ("serverStatus.queues.execution", "ss_wt_concurrentTransactions"),
    ("serverStatus", "ss"),
    ("replSetGetStatus", "rs"),
];

/// Documents whose members become one labelled metric (Percona's `nodeToPDMetrics`, the
/// `serverStatus` ones): the path of the document, and the label its member names go in.
const LABELLED: [(&str, &str); 14] = [
    ("serverStatus.asserts.", "assert_type"),
    ("serverStatus.connections.", "conn_type"),
    ("serverStatus.globalLock.currentQueue.", "count_type"),
    ("serverStatus.metrics.commands.", "cmd_name"),
    ("serverStatus.metrics.cursor.open.", "csr_type"),
    ("serverStatus.metrics.document.", "doc_op_type"),
    ("serverStatus.opLatencies.", "op_type"),
    ("serverStatus.opReadConcernCounters.", "concern_type"),
    ("serverStatus.opcounters.", "legacy_op_type"),
    ("serverStatus.opcountersRepl.", "legacy_op_type"),
    ("serverStatus.transactions.commitTypes.", "commit_type"),
    ("serverStatus.wiredTiger.concurrentTransactions.", "txn_rw_type"),
    ("serverStatus.queues.execution.", "txn_rw_type"),
    ("serverStatus.wiredTiger.perf.", "perf_bucket"),
];

/// Names folded into a labelled one after naming (Percona's `specialConversions`): a metric whose
/// name is `prefix_<suffix>` with a listed suffix becomes `name{label="<value>"}`.
struct Fold {
    name: &'static str,
    prefix: &'static str,
    label: &'static str,
    suffixes: &'static [(&'static str, &'static str)],
}

const FOLDS: [Fold; 5] = [
    Fold {
        name: "mongodb_ss_opLatencies_ops",
        prefix: "mongodb_ss_opLatencies",
        label: "op_type",
        suffixes: &[
            ("commands_ops", "commands"),
            ("reads_ops", "reads"),
            ("transactions_ops", "transactions"),
            ("writes_ops", "writes"),
        ],
    },
    Fold {
        name: "mongodb_ss_opLatencies_latency",
        prefix: "mongodb_ss_opLatencies",
        label: "op_type",
        suffixes: &[
            ("commands_latency", "commands"),
            ("reads_latency", "reads"),
            ("transactions_latency", "transactions"),
            ("writes_latency", "writes"),
        ],
    },
    Fold {
        name: "mongodb_ss_wt_concurrentTransactions_out",
        prefix: "mongodb_ss_wt_concurrentTransactions",
        label: "txn_rw",
        suffixes: &[("read_out", "read"), ("write_out", "write")],
    },
    Fold {
        name: "mongodb_ss_wt_concurrentTransactions_available",
        prefix: "mongodb_ss_wt_concurrentTransactions",
        label: "txn_rw",
        suffixes: &[("read_available", "read"), ("write_available", "write")],
    },
    Fold {
        name: "mongodb_ss_wt_concurrentTransactions_totalTickets",
        prefix: "mongodb_ss_wt_concurrentTransactions",
        label: "txn_rw",
        suffixes: &[("read_totalTickets", "read"), ("write_totalTickets", "write")],
    },
];

/// One number of the document, named.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub name: String,
    /// The document path it came from (the metric's help text, as Percona writes it).
    pub help: String,
    pub labels: Vec<(String, String)>,
    pub value: f64,
    /// Percona types a metric whose member name ends in "count" as a counter, the rest untyped.
    pub counter: bool,
}

/// Every number of a `serverStatus` answer as a named sample.
pub fn server_status_samples(status: &Document) -> Vec<Sample> {
    let mut samples = Vec::new();
    walk("serverStatus.", status, &[], &mut samples);
    samples
}

/// Every number of a `replSetGetStatus` answer as a named sample: `mongodb_rs_myState`, and per
/// member `mongodb_rs_members_optimeDate{member_idx="host:port",member_state="SECONDARY"}` etc.
pub fn replica_set_samples(status: &Document) -> Vec<Sample> {
    let mut samples = Vec::new();
    walk("replSetGetStatus.", status, &[], &mut samples);
    samples
}

/// Percona's `prometheusize`: the metric name of a document path.
pub fn metric_name(path: &str) -> String {
    let mut name = path.to_owned();
    for (long, short) in PREFIXES {
        if let Some(rest) = path.strip_prefix(long).filter(|rest| rest.starts_with('.')) {
            name = format!("{short}{rest}");
            break;
        }
    }
    // Runs of anything but [a-zA-Z0-9_] become one "_"; then one trailing "_" goes, runs of "_"
    // become one and one leading "_" goes (in that order, as in Percona's code).
    let mut replaced = String::with_capacity(name.len());
    let mut in_run = false;
    for c in name.chars() {
        if c.is_ascii_alphanumeric() || c == '_' {
            replaced.push(c);
            in_run = false;
        } else if !in_run {
            replaced.push('_');
            in_run = true;
        }
    }
    if replaced.ends_with('_') {
        replaced.pop();
    }
    let mut collapsed = String::with_capacity(replaced.len());
    for c in replaced.chars() {
        if !(c == '_' && collapsed.ends_with('_')) {
            collapsed.push(c);
        }
    }
    let trimmed = collapsed.strip_prefix('_').unwrap_or(&collapsed);
    format!("{EXPORTER_PREFIX}{trimmed}")
}

fn walk(prefix: &str, document: &Document, labels: &[(String, String)], samples: &mut Vec<Sample>) {
    for (key, value) in document {
        match value {
            Bson::Document(inner) => {
                let path = format!("{prefix}{key}");
                if !is_histogram_path(&path) {
                    walk(&format!("{path}."), inner, labels, samples);
                }
            }
            Bson::Array(items) => {
                let path = format!("{prefix}{key}");
                if !is_histogram_path(&path) {
                    walk_array(&format!("{path}."), items, labels, samples);
                }
            }
            other => {
                if let Some(number) = as_number(other) {
                    samples.push(fold(sample(prefix, key, number, labels)));
                }
            }
        }
    }
}

/// Percona's `processSlice`: every document of the array under the same names, told apart by
/// `member_idx` (`name`, or `host` where there is one) and `member_state` (`stateStr`), which a
/// document keeps from the one before it when it has no such member.
fn walk_array(prefix: &str, items: &[Bson], inherited: &[(String, String)], samples: &mut Vec<Sample>) {
    let mut labels = inherited.to_vec();
    for item in items {
        let Bson::Document(document) = item else { continue };
        let identity = document.get_str("host").or_else(|_| document.get_str("name"));
        if let Ok(identity) = identity {
            set_label(&mut labels, "member_idx", identity);
        }
        if let Ok(state) = document.get_str("stateStr") {
            set_label(&mut labels, "member_state", state);
        }
        walk(prefix, document, &labels, samples);
    }
}

fn set_label(labels: &mut Vec<(String, String)>, name: &str, value: &str) {
    match labels.iter_mut().find(|(k, _)| k == name) {
        Some(label) => value.clone_into(&mut label.1),
        None => labels.push((name.to_owned(), value.to_owned())),
    }
}

/// Percona leaves histogram sections out unless asked for them.
fn is_histogram_path(path: &str) -> bool {
    path == "histograms" || path.contains(".histograms.") || path.ends_with(".histograms")
}

fn as_number(value: &Bson) -> Option<f64> {
    match value {
        Bson::Double(v) => Some(*v),
        Bson::Int32(v) => Some(f64::from(*v)),
        Bson::Int64(v) => Some(*v as f64),
        Bson::Boolean(v) => Some(f64::from(u8::from(*v))),
        Bson::DateTime(v) => Some(v.timestamp_millis() as f64),
        Bson::Timestamp(v) => Some(f64::from(v.time)),
        Bson::Decimal128(v) => v.to_string().parse().ok(),
        _ => None,
    }
}

fn sample(prefix: &str, member: &str, value: f64, labels: &[(String, String)]) -> Sample {
    let counter = member.to_lowercase().ends_with("count");
    let mut labels = labels.to_vec();
    match LABELLED.iter().find(|(path, _)| *path == prefix) {
        Some((path, label)) => {
            labels.push(((*label).to_owned(), member.to_owned()));
            Sample { name: metric_name(prefix), help: path.trim_end_matches('.').to_owned(), labels, value, counter }
        }
        None => Sample {
            name: metric_name(&format!("{prefix}{member}")),
            help: format!("{prefix}{member}"),
            labels,
            value,
            counter,
        },
    }
}

fn fold(sample: Sample) -> Sample {
    for rule in &FOLDS {
        let Some(suffix) = sample.name.strip_prefix(rule.prefix) else { continue };
        let suffix = suffix.strip_prefix('_').unwrap_or(suffix);
        if let Some((_, value)) = rule.suffixes.iter().find(|(s, _)| *s == suffix) {
            let mut labels = sample.labels.clone();
            labels.push((rule.label.to_owned(), (*value).to_owned()));
            return Sample { name: rule.name.to_owned(), help: rule.name.to_owned(), labels, ..sample };
        }
    }
    sample
}

#[cfg(test)]
mod tests {
    use super::*;
    use mongodb::bson::doc;

    fn find<'a>(samples: &'a [Sample], name: &str, labels: &[(&str, &str)]) -> Option<&'a Sample> {
        samples.iter().find(|s| {
            s.name == name && s.labels.iter().map(|(k, v)| (k.as_str(), v.as_str())).eq(labels.iter().copied())
        })
    }

    #[test]
    fn paths_are_named_as_percona_names_them() {
        // The examples of Percona's README and tests.
        assert_eq!(metric_name("serverStatus.wiredTiger.log.log bytes written"), "mongodb_ss_wt_log_log_bytes_written");
        assert_eq!(
            metric_name("serverStatus.wiredTiger.cache.bytes currently in the cache"),
            "mongodb_ss_wt_cache_bytes_currently_in_the_cache"
        );
        assert_eq!(
            metric_name("serverStatus.wiredTiger.transaction.transaction checkpoints"),
            "mongodb_ss_wt_txn_transaction_checkpoints"
        );
        assert_eq!(metric_name("serverStatus.opcounters."), "mongodb_ss_opcounters");
        assert_eq!(
            metric_name("serverStatus.metrics.queryExecutor.collectionScans.total"),
            "mongodb_ss_metrics_queryExecutor_collectionScans_total"
        );
        // Odd characters: runs become one "_", the trailing one goes, no leading one is left.
        assert_eq!(
            metric_name("serverStatus.wiredTiger.cache.pages (evicted) / s "),
            "mongodb_ss_wt_cache_pages_evicted_s"
        );
        assert_eq!(metric_name("serverStatus.$dollar"), "mongodb_ss_dollar");
        // A prefix only counts up to a dot: serverStatusX is not serverStatus.
        assert_eq!(metric_name("serverStatusX.a"), "mongodb_serverStatusX_a");
    }

    #[test]
    fn documents_of_counters_become_one_labelled_metric() {
        let status = doc! {
            "opcounters": {"insert": 4_i32, "query": 2118_i64, "command": 67923.0},
            "metrics": {"document": {"inserted": 7_i64}, "queryExecutor": {"collectionScans": {"total": 3_i64}}},
            "wiredTiger": {
                "log": {"log bytes written": 2_620_800_i64, "log sync operations": 26_i64},
                "transaction": {"transaction checkpoints": 4_i32},
                "concurrentTransactions": {"read": {"out": 1_i32, "available": 127_i32}},
            },
            "opLatencies": {"reads": {"latency": 5_i64, "ops": 2_i64, "histogram": []}},
            "host": "a string is left out",
            "uptimeMillis": 1_i64,
            "connections": {"current": 3_i32},
        };
        let samples = server_status_samples(&status);
        let value = |name: &str, labels: &[(&str, &str)]| find(&samples, name, labels).map(|s| s.value);
        assert_eq!(value("mongodb_ss_opcounters", &[("legacy_op_type", "insert")]), Some(4.0));
        assert_eq!(value("mongodb_ss_opcounters", &[("legacy_op_type", "query")]), Some(2118.0));
        assert_eq!(value("mongodb_ss_opcounters", &[("legacy_op_type", "command")]), Some(67923.0));
        assert_eq!(value("mongodb_ss_metrics_document", &[("doc_op_type", "inserted")]), Some(7.0));
        assert_eq!(value("mongodb_ss_metrics_queryExecutor_collectionScans_total", &[]), Some(3.0));
        assert_eq!(value("mongodb_ss_wt_log_log_bytes_written", &[]), Some(2_620_800.0));
        assert_eq!(value("mongodb_ss_wt_log_log_sync_operations", &[]), Some(26.0));
        assert_eq!(value("mongodb_ss_wt_txn_transaction_checkpoints", &[]), Some(4.0));
        assert_eq!(value("mongodb_ss_wt_concurrentTransactions_out", &[("txn_rw", "read")]), Some(1.0));
        assert_eq!(value("mongodb_ss_wt_concurrentTransactions_available", &[("txn_rw", "read")]), Some(127.0));
        assert_eq!(value("mongodb_ss_opLatencies_latency", &[("op_type", "reads")]), Some(5.0));
        assert_eq!(value("mongodb_ss_opLatencies_ops", &[("op_type", "reads")]), Some(2.0));
        assert_eq!(value("mongodb_ss_connections", &[("conn_type", "current")]), Some(3.0));
        assert_eq!(value("mongodb_ss_uptimeMillis", &[]), Some(1.0));
        assert!(samples.iter().all(|s| !s.name.contains("host")), "strings are left out");
        assert_eq!(samples.len(), 14, "{samples:#?}");
    }

    #[test]
    fn members_named_count_are_counters_and_other_values_convert() {
        let status = doc! {"metrics": {"cursor": {"timedOutCount": 2_i64, "open": {"total": 1_i32}}}, "ok": true};
        let samples = server_status_samples(&status);
        let timed_out = find(&samples, "mongodb_ss_metrics_cursor_timedOutCount", &[]).expect("timedOutCount");
        assert!(timed_out.counter);
        let open = find(&samples, "mongodb_ss_metrics_cursor_open", &[("csr_type", "total")]).expect("open");
        assert!(!open.counter);
        assert_eq!(find(&samples, "mongodb_ss_ok", &[]).map(|s| s.value), Some(1.0));
    }

    #[test]
    fn replica_set_members_are_named_as_the_rs_section_with_member_labels() {
        use mongodb::bson::{DateTime, Timestamp};
        let member = |name: &str, state: &str, millis: i64, extra: Document| {
            let mut member = doc! {
                "_id": 0_i32, "name": name, "health": 1.0, "state": if state == "PRIMARY" { 1_i32 } else { 2_i32 },
                "stateStr": state,
                "optime": {"ts": Timestamp { time: (millis / 1000) as u32, increment: 3 }, "t": 2_i64},
                "optimeDate": DateTime::from_millis(millis),
            };
            member.extend(extra);
            member
        };
        let status = doc! {
            "set": "rs0",
            "date": DateTime::from_millis(1_700_000_009_000),
            "myState": 2_i32,
            "optimes": {"lastCommittedOpTime": {"ts": Timestamp { time: 1_700_000_008, increment: 1 }, "t": 2_i64}},
            "members": [
                member("198.18.42.11:27017", "PRIMARY", 1_700_000_008_000, doc! {"self": false, "pingMs": 1_i64}),
                member("198.18.42.12:27017", "SECONDARY", 1_700_000_006_000, doc! {"self": true}),
                "not a document is left out",
            ],
            "ok": 1.0,
        };
        let samples = replica_set_samples(&status);
        let value = |name: &str, labels: &[(&str, &str)]| find(&samples, name, labels).map(|s| s.value);
        let primary = [("member_idx", "198.18.42.11:27017"), ("member_state", "PRIMARY")];
        let secondary = [("member_idx", "198.18.42.12:27017"), ("member_state", "SECONDARY")];
        assert_eq!(value("mongodb_rs_myState", &[]), Some(2.0));
        assert_eq!(value("mongodb_rs_ok", &[]), Some(1.0));
        assert_eq!(value("mongodb_rs_date", &[]), Some(1_700_000_009_000.0));
        assert_eq!(value("mongodb_rs_optimes_lastCommittedOpTime_ts", &[]), Some(1_700_000_008.0));
        assert_eq!(value("mongodb_rs_members_optimeDate", &primary), Some(1_700_000_008_000.0));
        assert_eq!(value("mongodb_rs_members_optimeDate", &secondary), Some(1_700_000_006_000.0));
        assert_eq!(value("mongodb_rs_members_state", &primary), Some(1.0));
        assert_eq!(value("mongodb_rs_members_state", &secondary), Some(2.0));
        assert_eq!(value("mongodb_rs_members_optime_ts", &secondary), Some(1_700_000_006.0));
        assert_eq!(value("mongodb_rs_members_optime_t", &primary), Some(2.0));
        assert_eq!(value("mongodb_rs_members_pingMs", &primary), Some(1.0));
        assert_eq!(value("mongodb_rs_members_self", &secondary), Some(1.0));
        assert_eq!(value("mongodb_rs_members_health", &secondary), Some(1.0));
        let helps: Vec<&str> =
            samples.iter().filter(|s| s.name == "mongodb_rs_members_optimeDate").map(|s| s.help.as_str()).collect();
        assert_eq!(helps, ["replSetGetStatus.members.optimeDate"; 2]);
        assert!(samples.iter().all(|s| s.name.starts_with("mongodb_rs_")), "{samples:#?}");
        assert_eq!(samples.len(), 5 + 2 * 6 + 3, "{samples:#?}");
    }

    #[test]
    fn a_member_identified_by_host_keeps_it_over_its_name() {
        let status = doc! {"members": [
            {"name": "by-name:1", "host": "by-host:2", "stateStr": "ARBITER", "state": 7_i32},
            {"name": "second:3", "state": 8_i32},
        ]};
        let samples = replica_set_samples(&status);
        let labels: Vec<Vec<(String, String)>> = samples.iter().map(|s| s.labels.clone()).collect();
        let pair = |k: &str, v: &str| (k.to_owned(), v.to_owned());
        assert_eq!(
            labels,
            [
                vec![pair("member_idx", "by-host:2"), pair("member_state", "ARBITER")],
                vec![pair("member_idx", "second:3"), pair("member_state", "ARBITER")],
            ],
            "a member without stateStr keeps the label of the one before it, as in Percona's processSlice"
        );
    }
}
