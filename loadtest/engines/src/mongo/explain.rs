//! MongoDB's explaining figures of a run, from its `/diagnostics` before and after it and the
//! write requests orders-mongo was sent: opcounters, journal bytes per write, collection and index
//! growth, the product plan. Opcounters are server-wide.

use super::snapshot::MongoSnapshot;
use crate::figures::{diff, growth_map};
use orders_bench_model::explain::{Growth, MongoExplain, per_write};
use std::collections::BTreeMap;

pub fn mongo(before: &MongoSnapshot, after: &MongoSnapshot, write_requests: u64) -> MongoExplain {
    let journal_bytes = diff(after.journal_bytes, before.journal_bytes);
    let mut settings = BTreeMap::new();
    settings.insert("w".into(), after.write_w.clone().unwrap_or_else(|| "unset".into()));
    settings.insert("j".into(), after.write_j.map_or_else(|| "unset".into(), |j| j.to_string()));
    settings.insert("journal".into(), after.journal_enabled.map_or_else(|| "?".into(), |j| j.to_string()));
    settings.insert("pool_size".into(), after.pool_size.map_or_else(|| "?".into(), |p| format!("{p:.0}")));
    settings.insert("topology".into(), after.topology.clone().unwrap_or_else(|| "?".into()));
    settings.insert("version".into(), after.version.clone().unwrap_or_else(|| "?".into()));
    MongoExplain {
        write_requests,
        opcounters: after
            .opcounters
            .iter()
            .map(|(k, v)| (k.clone(), v - before.opcounters.get(k).copied().unwrap_or(0.0)))
            .collect(),
        journal_bytes,
        journal_bytes_per_write: per_write(journal_bytes, write_requests),
        journal_syncs: diff(after.journal_syncs, before.journal_syncs),
        count: Growth::of(before.count, after.count),
        data: Growth::of(before.data_bytes, after.data_bytes),
        storage: Growth::of(before.storage_bytes, after.storage_bytes),
        indexes: Growth::of(before.index_bytes_total, after.index_bytes_total),
        index: growth_map(&before.index_bytes, &after.index_bytes),
        plan: after.plan(),
        settings,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mongo::snapshot::samples;
    use serde_json::json;

    #[test]
    fn mongo_counters_are_deltas() {
        let before = MongoSnapshot::from_json(&samples::mongo(100, json!(true), "orders"));
        let mut after_json = samples::mongo(150, json!(true), "orders");
        after_json["opcounters"]["insert"] = json!(55);
        after_json["settings"]["journal"]["wiredtiger_log"]["log_bytes_written"] = json!(51_000);
        let e = mongo(&before, &MongoSnapshot::from_json(&after_json), 50);
        assert_eq!(e.opcounters["insert"], 50.0);
        assert_eq!(e.journal_bytes_per_write, Some(1000.0));
        assert_eq!(e.count.delta(), Some(50.0));
        assert_eq!(e.settings["j"], "true");
    }
}
