//! PostgreSQL's explaining figures of a run, from its `/diagnostics` (or the runner's samples)
//! before, during and after it and the write requests orders-pg was sent: WAL bytes per write
//! request (finding F2), HOT share of updates (F3), sequential scans and the rows they read, the
//! largest GIN pending list seen and the product query's plans (F1), table/TOAST/index growth.
//! The WAL position is server-wide: activity of other databases on the same server counts too.

use super::snapshot::PgSnapshot;
use crate::figures::{diff, float, growth_map, max_of};
use orders_bench_model::explain::{Growth, PendingMerge, PgExplain, per_write};
use orders_pg::diagnostics::TableCounters;

/// Where the GIN pending list was shorter than at the poll before (the polls in time order).
fn pending_merges(polled: &[(f64, PgSnapshot)]) -> Vec<PendingMerge> {
    polled
        .windows(2)
        .filter_map(|pair| {
            let [(from_s, earlier), (to_s, later)] = pair else { return None };
            let (before, after) = (earlier.pending_pages?, later.pending_pages?);
            (after < before).then_some(PendingMerge {
                from_s: *from_s,
                to_s: *to_s,
                pages_before: before,
                pages_after: after,
            })
        })
        .collect()
}

pub fn pg(before: &PgSnapshot, polled: &[(f64, PgSnapshot)], after: &PgSnapshot, write_requests: u64) -> PgExplain {
    let counter = |of: fn(&TableCounters) -> Option<i64>| diff(after.counter(of), before.counter(of));
    let all = || std::iter::once(before).chain(polled.iter().map(|(_, s)| s)).chain(std::iter::once(after));
    let (updates, hot_updates, seq_scans, seq_tup_read) =
        (counter(|t| t.n_tup_upd), counter(|t| t.n_tup_hot_upd), counter(|t| t.seq_scan), counter(|t| t.seq_tup_read));
    let wal_bytes = diff(after.wal_bytes, before.wal_bytes);
    let mut generic_plans_seen: Vec<String> = Vec::new();
    for snapshot in all() {
        let shape = snapshot.generic_plan.nodes.join(" → ");
        if !shape.is_empty() && !generic_plans_seen.contains(&shape) {
            generic_plans_seen.push(shape);
        }
    }
    PgExplain {
        write_requests,
        wal_bytes,
        wal_bytes_per_write: per_write(wal_bytes, write_requests),
        wal_records: None,
        wal_records_per_write: None,
        wal_fpi: None,
        wal_fpi_per_write: None,
        wal_flushes: None,
        inserts: counter(|t| t.n_tup_ins),
        updates,
        hot_updates,
        hot_share: match (hot_updates, updates) {
            (Some(hot), Some(all)) if all > 0.0 => Some(hot / all),
            _ => None,
        },
        seq_scans,
        seq_tup_read,
        rows_per_seq_scan: match (seq_tup_read, seq_scans) {
            (Some(rows), Some(scans)) if scans > 0.0 => Some(rows / scans),
            _ => None,
        },
        idx_scans: counter(|t| t.idx_scan),
        max_pending_pages: max_of(all().map(|s| s.pending_pages)),
        max_pending_tuples: max_of(all().map(|s| s.pending_tuples)),
        pending_merges: pending_merges(polled),
        dead_tuples_after: after.counter(|t| t.n_dead_tup),
        table: Growth::of(before.table_bytes, after.table_bytes),
        toast: Growth::of(before.toast_bytes, after.toast_bytes),
        indexes: Growth::of(before.indexes_bytes, after.indexes_bytes),
        index: growth_map(&before.index_bytes, &after.index_bytes),
        generic_plan_before: before.generic_plan.clone(),
        generic_plan_after: after.generic_plan.clone(),
        custom_plan_after: after.custom_plan.clone(),
        generic_plans_seen,
        product_generic_plans: after.product_generic_plans,
        product_custom_plans: after.product_custom_plans,
        pool_generic_plans: float(after.pool_plans.product_generic_plans),
        pool_custom_plans: float(after.pool_plans.product_custom_plans),
        pool_connections_using_generic: after.pool_plans.connections_using_generic.map(|n| n as f64),
        pool_connections_read: after.pool_plans.connections_read.map(|n| n as f64),
        scans: None,
        settings: after.settings_map(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::postgres::snapshot::samples;
    use serde_json::json;

    #[test]
    fn a_pending_list_found_shorter_than_at_the_poll_before_was_merged_between_the_two() {
        let at = |s: f64, pages: i64| (s, PgSnapshot::from_json(&samples::pg(0, 0, pages, 5000)));
        let polled = [at(3.5, 110), at(7.0, 495), at(10.5, 91), at(14.0, 230), at(17.5, 230), at(21.0, 12)];
        let merges = pending_merges(&polled);
        assert_eq!(merges.len(), 2, "{merges:?}");
        assert_eq!(
            (merges[0].from_s, merges[0].to_s, merges[0].pages_before, merges[0].pages_after),
            (7.0, 10.5, 495.0, 91.0)
        );
        assert!(merges[0].within(7.0, 10.5) && !merges[0].within(10.5, 14.0) && !merges[0].within(3.5, 7.0));
        assert_eq!(merges[1].to_s, 21.0);
        assert!(pending_merges(&polled[..2]).is_empty(), "a list that only grew was never merged");
    }

    #[test]
    fn deltas_rates_and_the_largest_pending_list_seen() {
        let before = PgSnapshot::from_json(&samples::pg(2, 1_000_000, 0, 5000));
        let polled = [(2.0, PgSnapshot::from_json(&samples::pg(5, 1_200_000, 40, 5100)))];
        let mut after_json = samples::pg(12, 1_500_000, 3, 5200);
        after_json["table"]["n_tup_upd"] = json!(400);
        after_json["table"]["n_tup_hot_upd"] = json!(100);
        after_json["product_query"]["generic_plan"]["nodes"] = json!(["Limit", "Seq Scan on orders"]);
        let after = PgSnapshot::from_json(&after_json);
        let e = pg(&before, &polled, &after, 250);
        assert_eq!(e.wal_bytes, Some(500_000.0));
        assert_eq!(e.wal_bytes_per_write, Some(2000.0));
        assert_eq!((e.seq_scans, e.rows_per_seq_scan), (Some(10.0), Some(1000.0)));
        assert_eq!(e.max_pending_pages, Some(40.0), "seen only while polling");
        assert_eq!(e.hot_share, Some(0.25));
        assert_eq!(e.table.delta(), Some(8192.0 * 200.0 / 8.0));
        assert_eq!(
            e.generic_plans_seen,
            ["Limit → Bitmap Heap Scan → Bitmap Index Scan on orders_items", "Limit → Seq Scan on orders"]
        );
    }

    #[test]
    fn no_writes_give_no_per_write_figure_and_no_updates_no_hot_share() {
        let s = PgSnapshot::from_json(&samples::pg(0, 10, 0, 5));
        let e = pg(&s, &[], &s, 0);
        assert_eq!((e.wal_bytes_per_write, e.hot_share), (None, None));
    }
}
