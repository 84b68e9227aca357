//! Which plan ran each sequential scan of `orders` during a repeat, as `result.json` records it
//! (`explain.pg.scans`): PostgreSQL's `auto_explain` logged every statement that ran at least
//! `threshold_ms`, and each logged plan that scans `orders` sequentially is counted as the product
//! search's generic plan (its filter still reads `$1`: finding F1), its custom plan (the filter
//! holds the product: the statistics promised that product many matches, so a scan looked cheap),
//! or another statement. `unattributed` are the scans `pg_stat_user_tables` counted that no
//! logged plan explains (faster than the threshold, or on a session opened before logging began).

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ScanAttribution {
    pub threshold_ms: f64,
    /// Plans logged on the round's database while the load ran.
    pub plans_logged: u64,
    /// Sequential scans of `orders` by the product search's generic plan (F1).
    pub generic_seq_scans: u64,
    /// By its custom plans, planned for one product.
    pub custom_seq_scans: u64,
    /// By any other statement.
    pub other_seq_scans: u64,
    /// Product searches logged with an index plan (slow for another reason: the CPU budget's
    /// throttling, queueing), generic and custom.
    pub generic_index_plans: u64,
    pub custom_index_plans: u64,
    /// The products whose custom plans scanned, most scans first (at most ten): `[product, scans]`.
    #[serde(default)]
    pub custom_scan_products: Vec<(u64, u64)>,
    /// Sequential scans `pg_stat_user_tables` counted during the run that no logged plan explains.
    pub unattributed: Option<f64>,
    /// Why the log could not be read, when it could not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl ScanAttribution {
    pub fn failed(threshold_ms: f64, error: String) -> Self {
        Self { threshold_ms, error: Some(error), ..Self::default() }
    }

    pub fn seq_scans(&self) -> u64 {
        self.generic_seq_scans + self.custom_seq_scans + self.other_seq_scans
    }

    /// Sums the repeats' attributions (the products' counts merged), `None` when none has one.
    pub fn sum<'a>(all: impl Iterator<Item = &'a ScanAttribution>) -> Option<ScanAttribution> {
        let mut total: Option<ScanAttribution> = None;
        for one in all {
            let sum =
                total.get_or_insert_with(|| ScanAttribution { threshold_ms: one.threshold_ms, ..Self::default() });
            sum.plans_logged += one.plans_logged;
            sum.generic_seq_scans += one.generic_seq_scans;
            sum.custom_seq_scans += one.custom_seq_scans;
            sum.other_seq_scans += one.other_seq_scans;
            sum.generic_index_plans += one.generic_index_plans;
            sum.custom_index_plans += one.custom_index_plans;
            sum.unattributed = match (sum.unattributed, one.unattributed) {
                (Some(a), Some(b)) => Some(a + b),
                (a, b) => a.or(b),
            };
            for (product, scans) in &one.custom_scan_products {
                match sum.custom_scan_products.iter_mut().find(|(p, _)| p == product) {
                    Some(entry) => entry.1 += scans,
                    None => sum.custom_scan_products.push((*product, *scans)),
                }
            }
            if sum.error.is_none() {
                sum.error.clone_from(&one.error);
            }
        }
        if let Some(sum) = total.as_mut() {
            sum.custom_scan_products.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
            sum.custom_scan_products.truncate(10);
        }
        total
    }
}

/// The planner probe of a round (`orders_bench_engines::postgres::plan_probe`): the product
/// search's plans on a copy of the round's data, before any load, as the GIN pending list grows.
/// It shows whether finding F1 can happen at this table size, from how many inserts on, and what a
/// prepared statement keeps.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PlanProbe {
    pub orders: u64,
    /// `fastupdate` of the copy's GIN index (the variant's).
    pub fastupdate: String,
    /// Median execution time of a sequential scan that finds ten of a product's orders, ms.
    pub seq_scan_ms: Option<f64>,
    pub rows: Vec<ProbeRow>,
    /// The fewest inserts after which a prepared `LIMIT 10` statement's cached generic plan was a
    /// sequential scan; `None`: never in the probe.
    pub switch_after_inserts: Option<u64>,
    /// Seconds the probe took.
    pub seconds: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The plans at one pending list size.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ProbeRow {
    /// Orders inserted into the copy so far.
    pub inserts: u64,
    pub pending_pages: i64,
    pub pending_tuples: i64,
    /// `LIMIT 10` in the text (S1's form): the generic plan and its cost.
    pub generic: String,
    pub generic_cost: Option<f64>,
    /// Custom plans of the products the executions used: median cost, and how many of them were
    /// sequential scans (products the statistics promise many matches).
    pub custom_cost: Option<f64>,
    pub custom_seq_scans: u64,
    pub custom_planned: u64,
    /// A new session's prepared `LIMIT 10` statement after `EXECUTIONS` executions: generic and
    /// custom plans used.
    pub literal_generic_used: i64,
    pub literal_custom_used: i64,
    /// The same with `LIMIT $2`.
    pub parameter_generic: String,
    pub parameter_generic_cost: Option<f64>,
    pub parameter_generic_used: i64,
    pub parameter_custom_used: i64,
}

impl ProbeRow {
    /// The prepared `LIMIT 10` statement ran its generic plan, and that plan scans the table.
    pub fn literal_switched_to_seq_scan(&self) -> bool {
        self.literal_generic_used > 0 && self.generic.contains("Seq Scan")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeats_add_up_and_products_merge() {
        let a = ScanAttribution {
            threshold_ms: 5.0,
            generic_seq_scans: 3,
            custom_scan_products: vec![(7, 2), (9, 1)],
            unattributed: Some(0.0),
            ..ScanAttribution::default()
        };
        let b = ScanAttribution {
            threshold_ms: 5.0,
            custom_seq_scans: 4,
            custom_scan_products: vec![(9, 4)],
            unattributed: Some(2.0),
            ..ScanAttribution::default()
        };
        let sum = ScanAttribution::sum([&a, &b].into_iter()).expect("sum");
        assert_eq!((sum.generic_seq_scans, sum.custom_seq_scans, sum.seq_scans()), (3, 4, 7));
        assert_eq!(sum.custom_scan_products, [(9, 5), (7, 2)]);
        assert_eq!(sum.unattributed, Some(2.0));
        assert!(ScanAttribution::sum(std::iter::empty()).is_none());
    }
}
