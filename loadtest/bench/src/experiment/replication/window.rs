//! A write window's figures per acknowledged write, one engine at a time: the log it wrote (WAL
//! from the primary's position and `pg_stat_wal`; oplog entries' `$bsonSize`), what the primary
//! sent each standby (`sent_lsn`), each member's bytes on the wire and CPU time; and the same
//! members' traffic while idle, so that a reader can see what the window's figures owe to
//! heartbeats.

use super::counters::{Oplog, Sample};
use serde::Serialize;
use std::collections::BTreeMap;

/// One engine's figures over a window, per acknowledged write.
#[derive(Debug, Clone, Default, Serialize)]
pub struct PerWrite {
    pub writes: u64,
    pub seconds: f64,
    /// WAL bytes (the primary's position) or oplog bytes (every entry of the window).
    pub log_bytes: Option<f64>,
    /// PostgreSQL: WAL records and full-page images; MongoDB: entries on the orders collection and
    /// their bytes.
    pub log_records: Option<f64>,
    pub full_page_images: Option<f64>,
    pub orders_entry_bytes: Option<f64>,
    /// PostgreSQL: what the primary sent each standby (`sent_lsn` delta).
    pub sent_to: BTreeMap<String, f64>,
    /// Member → bytes it sent and received on the wire.
    pub wire_sent: BTreeMap<String, f64>,
    pub wire_received: BTreeMap<String, f64>,
    /// Member → CPU milliseconds.
    pub cpu_ms: BTreeMap<String, f64>,
}

impl PerWrite {
    /// What the standbys received on the wire per write, together.
    pub fn standbys_received(&self, primary: Option<&str>) -> Option<f64> {
        let standbys: Vec<f64> =
            self.wire_received.iter().filter(|(m, _)| Some(m.as_str()) != primary).map(|(_, b)| *b).collect();
        (!standbys.is_empty()).then(|| standbys.iter().sum())
    }

    /// What the members together used, CPU milliseconds per write.
    pub fn cpu_total(&self) -> Option<f64> {
        (!self.cpu_ms.is_empty()).then(|| self.cpu_ms.values().sum())
    }
}

/// Members whose name says they are of the engine (`pg1`, `mongo2`; `pg`, `mongo` for single
/// servers); the bridge's other ports (`root`, `etcd`, `br0`) are neither's.
fn of_engine(member: &str, postgres: bool) -> bool {
    member.starts_with(if postgres { "pg" } else { "mongo" })
}

fn deltas(
    before: &BTreeMap<String, f64>,
    after: &BTreeMap<String, f64>,
    keep: impl Fn(&str) -> bool,
) -> BTreeMap<String, f64> {
    after.iter().filter(|(k, _)| keep(k)).filter_map(|(k, a)| Some((k.clone(), a - before.get(k)?))).collect()
}

fn scaled(map: BTreeMap<String, f64>, by: f64) -> BTreeMap<String, f64> {
    map.into_iter().map(|(k, v)| (k, v * by)).collect()
}

/// PostgreSQL's figures between `before` and `after` for `writes` acknowledged writes.
pub fn postgres(before: &Sample, after: &Sample, writes: u64) -> PerWrite {
    let per = 1.0 / writes.max(1) as f64;
    let mut w = engine_common(before, after, writes, true);
    w.log_bytes = Some((after.wal_lsn - before.wal_lsn) * per);
    w.log_records = Some((after.wal_records - before.wal_records) * per);
    w.full_page_images = Some((after.wal_fpi - before.wal_fpi) * per);
    w.sent_to = scaled(deltas(&before.sent, &after.sent, |_| true), per);
    w
}

/// MongoDB's figures: `oplog` holds the entries written in the window (none on a standalone).
pub fn mongo(before: &Sample, after: &Sample, oplog: Option<&Oplog>, writes: u64) -> PerWrite {
    let per = 1.0 / writes.max(1) as f64;
    let mut w = engine_common(before, after, writes, false);
    if let Some(o) = oplog {
        w.log_bytes = Some(o.all_bytes * per);
        w.log_records = Some(o.all_entries * per);
        w.orders_entry_bytes = (o.orders_entries > 0.0).then(|| o.orders_bytes / o.orders_entries);
    }
    w
}

fn engine_common(before: &Sample, after: &Sample, writes: u64, postgres: bool) -> PerWrite {
    let per = 1.0 / writes.max(1) as f64;
    let keep = |m: &str| of_engine(m, postgres);
    let way = |s: &Sample, sent: bool| -> BTreeMap<String, f64> {
        s.links.iter().map(|(m, (tx, rx))| (m.clone(), if sent { *tx } else { *rx })).collect()
    };
    let seconds = match (before.at, after.at) {
        (Some(b), Some(a)) => a.duration_since(b).as_secs_f64(),
        _ => 0.0,
    };
    PerWrite {
        writes,
        seconds,
        wire_sent: scaled(deltas(&way(before, true), &way(after, true), keep), per),
        wire_received: scaled(deltas(&way(before, false), &way(after, false), keep), per),
        cpu_ms: scaled(deltas(&before.cpu, &after.cpu, keep), per * 1000.0),
        ..PerWrite::default()
    }
}

/// Cores each member used with no load (its cgroup's CPU time over the idle window).
pub fn idle_cores(before: &Sample, after: &Sample) -> BTreeMap<String, f64> {
    let seconds = match (before.at, after.at) {
        (Some(b), Some(a)) => a.duration_since(b).as_secs_f64().max(1e-3),
        _ => return BTreeMap::new(),
    };
    after.cpu.iter().filter_map(|(m, a)| Some((m.clone(), (a - before.cpu.get(m)?) / seconds))).collect()
}

/// Bytes per second each member sent and received with no load (heartbeats, keep-alives,
/// Patroni's and the set's own traffic).
pub fn idle_rates(before: &Sample, after: &Sample) -> BTreeMap<String, f64> {
    let seconds = match (before.at, after.at) {
        (Some(b), Some(a)) => a.duration_since(b).as_secs_f64().max(1e-3),
        _ => return BTreeMap::new(),
    };
    after
        .links
        .iter()
        .filter_map(|(m, (tx, rx))| {
            let (btx, brx) = before.links.get(m)?;
            Some((m.clone(), (tx - btx + rx - brx) / seconds))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(lsn: f64, pg1: (f64, f64), mongo1: (f64, f64), sent: f64) -> Sample {
        Sample {
            wal_lsn: lsn,
            links: [("pg1".to_owned(), pg1), ("mongo1".to_owned(), mongo1), ("root".to_owned(), (1.0, 1.0))].into(),
            sent: [("pg2".to_owned(), sent)].into(),
            ..Sample::default()
        }
    }

    #[test]
    fn figures_are_per_write_and_per_engine() {
        let before = sample(1000.0, (10.0, 20.0), (5.0, 5.0), 900.0);
        let after = sample(5000.0, (4010.0, 420.0), (9.0, 5.0), 4900.0);
        let pg = postgres(&before, &after, 4);
        assert_eq!(pg.log_bytes, Some(1000.0));
        assert_eq!(pg.sent_to["pg2"], 1000.0);
        assert_eq!((pg.wire_sent["pg1"], pg.wire_received["pg1"]), (1000.0, 100.0));
        assert!(!pg.wire_sent.contains_key("mongo1"), "the other engine's members are not PostgreSQL's");
        let oplog = Oplog { orders_entries: 2.0, orders_bytes: 600.0, all_entries: 3.0, all_bytes: 700.0 };
        let mongo = mongo(&before, &after, Some(&oplog), 2);
        assert_eq!((mongo.log_bytes, mongo.orders_entry_bytes), (Some(350.0), Some(300.0)));
        assert_eq!(mongo.wire_sent["mongo1"], 2.0);
        assert!(!mongo.wire_sent.contains_key("pg1") && !mongo.wire_sent.contains_key("root"), "{mongo:?}");
        assert_eq!(mongo.standbys_received(Some("mongo1")), None, "no standby in the sample");
    }
}
