//! The figures an experiment reads from one round (`RoundResult`, every repeat), as medians over
//! the repeats: maximum passing rates and their ratio, the fairness gate's verdict, and per target
//! the mechanism figures (sequential scans, pending list, plans, WAL and its flushes, HOT share,
//! growth per 1,000 writes, journal, bytes on disk, CPU per 1,000 requests). Growth and bytes
//! are per write so that rounds of different lengths and rates compare. The hybrid layout, when
//! it ran, gets its rate and PostgreSQL figures beside orders-pg's (`pgh`, `pgh_figures`); the
//! ratio stays PostgreSQL jsonb / MongoDB, the studies' comparison.

use crate::experiment::engine::Target;
use orders_bench_model::explain::{Growth, MongoExplain, PgExplain, per_write};
use orders_bench_model::plans::{PlanProbe, ScanAttribution};
use orders_bench_model::result::RoundResult;
use orders_bench_model::stats::median;
use orders_bench_model::verdict::RateSummary;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What the runner measured around a repeat, beside `run_round`'s own figures.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct RepeatExtras {
    /// Bytes on disk per order of the data set, as the seeder measured them.
    pub pg_disk_per_order: Option<f64>,
    pub mongo_disk_per_order: Option<f64>,
    pub pgh_disk_per_order: Option<f64>,
}

impl RepeatExtras {
    fn disk_per_order(&self, target: Target) -> Option<f64> {
        match target {
            Target::Pg => self.pg_disk_per_order,
            Target::Mongo => self.mongo_disk_per_order,
            Target::Pgh => self.pgh_disk_per_order,
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PgFigures {
    pub seq_scans_per_10s: Option<f64>,
    pub rows_per_seq_scan: Option<f64>,
    /// Rows per sequential scan / orders in the table.
    pub seq_scan_table_share: Option<f64>,
    pub max_pending_pages: Option<f64>,
    pub max_pending_tuples: Option<f64>,
    /// Every shape of the product query's generic plan seen (`Limit → Seq Scan`, ...).
    pub generic_plans_seen: Vec<String>,
    pub generic_plan: String,
    pub generic_cost: Option<f64>,
    pub custom_plan: String,
    pub custom_cost: Option<f64>,
    /// Generic / custom plans the product search ran over every pooled connection, summed over
    /// the repeats, and the most connections of a repeat that used a generic one.
    pub generic_plans_used: Option<f64>,
    pub custom_plans_used: Option<f64>,
    pub connections_using_generic: Option<f64>,
    /// Which plan ran each sequential scan (the plan log), summed over the repeats.
    pub scans: Option<ScanAttribution>,
    /// The round's planner probe.
    pub probe: Option<PlanProbe>,
    pub wal_bytes_per_write: Option<f64>,
    pub wal_records_per_write: Option<f64>,
    pub wal_fpi_per_write: Option<f64>,
    pub wal_flushes_per_write: Option<f64>,
    pub hot_share: Option<f64>,
    pub table_growth_per_1k_writes: Option<f64>,
    pub toast_growth_per_1k_writes: Option<f64>,
    pub index_growth_per_1k_writes: Option<f64>,
    pub gin_growth_per_1k_writes: Option<f64>,
    pub disk_per_order: Option<f64>,
    /// CPU seconds of PostgreSQL and orders-pg per 1,000 requests.
    pub cpu_per_1k: Option<f64>,
    pub settings: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MongoFigures {
    pub journal_bytes_per_write: Option<f64>,
    pub journal_syncs_per_write: Option<f64>,
    pub storage_growth_per_1k_writes: Option<f64>,
    pub index_growth_per_1k_writes: Option<f64>,
    pub disk_per_order: Option<f64>,
    pub cpu_per_1k: Option<f64>,
    pub settings: BTreeMap<String, String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RoundFigures {
    pub name: String,
    pub mix: String,
    /// The round's folder, relative to the experiment's.
    pub dir: String,
    pub start_rate: u32,
    pub repeats: usize,
    pub pg: Option<RateSummary>,
    pub mongo: Option<RateSummary>,
    /// The hybrid layout's, when it ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pgh: Option<RateSummary>,
    /// PostgreSQL / MongoDB of the median maximum rates; 0 when PostgreSQL failed its first step.
    pub ratio: Option<f64>,
    /// Every repeat passed the fairness gate.
    pub fair: bool,
    pub mismatches: Vec<String>,
    pub prefer_minimal: bool,
    /// Median seconds k6 ran.
    pub run_seconds: Option<f64>,
    pub writes: Option<f64>,
    pub pg_figures: PgFigures,
    pub mongo_figures: MongoFigures,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pgh_figures: Option<PgFigures>,
    /// What limited each target where it first failed (load generator, service, database, not CPU).
    pub limits: BTreeMap<String, Vec<String>>,
}

fn med<T>(items: &[T], f: impl Fn(&T) -> Option<f64>) -> Option<f64> {
    median(&items.iter().filter_map(f).collect::<Vec<_>>())
}

fn per_1k(growth: &Growth, writes: u64) -> Option<f64> {
    (writes > 0).then(|| growth.delta().map(|d| d / writes as f64 * 1000.0)).flatten()
}

/// CPU seconds per 1,000 requests of `target`'s database and service together.
fn cpu_per_1k(round: &RoundResult, target: Target) -> Option<f64> {
    median(
        &round
            .repeats
            .iter()
            .filter_map(|r| {
                let of = |name: &str| r.cpu.components.iter().find(|c| c.name == name).and_then(|c| c.per_1k_requests);
                Some(of(target.database())? + of(target.service())?)
            })
            .collect::<Vec<_>>(),
    )
}

/// PostgreSQL / MongoDB of the median maximum rates; none when both never failed (the staircase
/// ended before either database did, so the ratio says nothing).
pub fn ratio(pg: Option<&RateSummary>, mongo: Option<&RateSummary>) -> Option<f64> {
    let (pg, mongo) = (pg?, mongo?);
    (mongo.median > 0.0 && !(pg.lower_bound && mongo.lower_bound)).then(|| pg.median / mongo.median)
}

/// The figures of PostgreSQL target `target` (orders-pg's jsonb or the hybrid layout).
fn pg_figures(round: &RoundResult, target: Target, extras: &[RepeatExtras], orders: Option<f64>) -> PgFigures {
    let pg: Vec<(&PgExplain, f64)> =
        round.repeats.iter().filter_map(|r| Some((r.explain.pg_of(target.name())?, r.run_seconds))).collect();
    let explains: Vec<&PgExplain> = pg.iter().map(|(e, _)| *e).collect();
    let mut generic_plans_seen: Vec<String> = Vec::new();
    for plan in explains.iter().flat_map(|e| e.generic_plans_seen.iter()) {
        if !generic_plans_seen.contains(plan) {
            generic_plans_seen.push(plan.clone());
        }
    }
    let last = explains.last();
    let flushes: Vec<f64> = explains.iter().filter_map(|e| per_write(e.wal_flushes, e.write_requests)).collect();
    PgFigures {
        seq_scans_per_10s: med(&pg, |(e, s)| Some(e.seq_scans? / s.max(1e-9) * 10.0)),
        rows_per_seq_scan: med(&explains, |e| e.rows_per_seq_scan),
        seq_scan_table_share: med(&explains, |e| Some(e.rows_per_seq_scan? / orders?)),
        max_pending_pages: explains.iter().filter_map(|e| e.max_pending_pages).reduce(f64::max),
        max_pending_tuples: explains.iter().filter_map(|e| e.max_pending_tuples).reduce(f64::max),
        generic_plans_seen,
        generic_plan: last.map(|e| e.generic_plan_after.nodes.join(" → ")).unwrap_or_default(),
        generic_cost: med(&explains, |e| e.generic_plan_after.total_cost),
        custom_plan: last.map(|e| e.custom_plan_after.nodes.join(" → ")).unwrap_or_default(),
        custom_cost: med(&explains, |e| e.custom_plan_after.total_cost),
        generic_plans_used: explains.iter().filter_map(|e| e.pool_generic_plans).reduce(|a, b| a + b),
        custom_plans_used: explains.iter().filter_map(|e| e.pool_custom_plans).reduce(|a, b| a + b),
        connections_using_generic: explains.iter().filter_map(|e| e.pool_connections_using_generic).reduce(f64::max),
        scans: ScanAttribution::sum(explains.iter().filter_map(|e| e.scans.as_ref())),
        probe: round.plan_probe.clone(),
        wal_bytes_per_write: med(&explains, |e| e.wal_bytes_per_write),
        wal_records_per_write: med(&explains, |e| e.wal_records_per_write),
        wal_fpi_per_write: med(&explains, |e| e.wal_fpi_per_write),
        wal_flushes_per_write: median(&flushes),
        hot_share: med(&explains, |e| e.hot_share),
        table_growth_per_1k_writes: med(&explains, |e| per_1k(&e.table, e.write_requests)),
        toast_growth_per_1k_writes: med(&explains, |e| per_1k(&e.toast, e.write_requests)),
        index_growth_per_1k_writes: med(&explains, |e| per_1k(&e.indexes, e.write_requests)),
        gin_growth_per_1k_writes: med(&explains, |e| per_1k(e.index.get("orders_items")?, e.write_requests)),
        disk_per_order: med(extras, |x| x.disk_per_order(target)),
        cpu_per_1k: cpu_per_1k(round, target),
        settings: last.map(|e| e.settings.clone()).unwrap_or_default(),
    }
}

fn mongo_figures(round: &RoundResult, extras: &[RepeatExtras]) -> MongoFigures {
    let explains: Vec<&MongoExplain> =
        round.repeats.iter().filter_map(|r| r.explain.mongo_of(Target::Mongo.name())).collect();
    MongoFigures {
        journal_bytes_per_write: med(&explains, |e| e.journal_bytes_per_write),
        journal_syncs_per_write: med(&explains, |e| per_write(e.journal_syncs, e.write_requests)),
        storage_growth_per_1k_writes: med(&explains, |e| per_1k(&e.storage, e.write_requests)),
        index_growth_per_1k_writes: med(&explains, |e| per_1k(&e.indexes, e.write_requests)),
        disk_per_order: med(extras, |x| x.mongo_disk_per_order),
        cpu_per_1k: cpu_per_1k(round, Target::Mongo),
        settings: explains.last().map(|e| e.settings.clone()).unwrap_or_default(),
    }
}

impl RoundFigures {
    pub fn of(round: &RoundResult, dir: &str, extras: &[RepeatExtras], prefer_minimal: bool) -> Self {
        let rate = |target: Target| round.max_rate.get(target.name()).cloned();
        let (pg, mongo) = (rate(Target::Pg), rate(Target::Mongo));
        let ran = |target: Target| round.repeats.iter().any(|r| r.explain.pg_of(target.name()).is_some());
        let orders = round.data_set.as_ref().map(|d| d.orders as f64);
        let mut limits: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for repeat in &round.repeats {
            for (target, limit) in &repeat.cpu.limits {
                limits.entry(target.clone()).or_default().push(limit.kind.words().into());
            }
        }
        Self {
            name: round.name.clone(),
            mix: round.mix.clone(),
            dir: dir.into(),
            start_rate: round.plan.start_rate,
            repeats: round.repeats.len(),
            ratio: ratio(pg.as_ref(), mongo.as_ref()),
            pg,
            mongo,
            pgh: rate(Target::Pgh),
            fair: round.repeats.iter().all(|r| r.fairness.ok),
            mismatches: round.repeats.iter().flat_map(|r| r.fairness.mismatches()).collect(),
            prefer_minimal,
            run_seconds: med(&round.repeats, |r| Some(r.run_seconds)),
            writes: med(&round.repeats, |r| Some(r.explain.pg()?.write_requests as f64)),
            pg_figures: pg_figures(round, Target::Pg, extras, orders),
            mongo_figures: mongo_figures(round, extras),
            pgh_figures: ran(Target::Pgh).then(|| pg_figures(round, Target::Pgh, extras, orders)),
            limits,
        }
    }

    /// PostgreSQL failed the staircase's first step in the median repeat.
    pub fn pg_failed_first_step(&self) -> bool {
        self.pg.as_ref().is_some_and(|s| s.median == 0.0)
    }

    /// "PG 1,200 / MongoDB 900 req/s = 1.33" with `≥` and `<` where a rate is a bound.
    pub fn rates_text(&self) -> String {
        use orders_bench_report::format;
        let rate = |s: Option<&RateSummary>| format::max_rate(s, self.start_rate).replace(" req/s", "");
        let same_step = self.same_step();
        format!(
            "PG {} / MongoDB {} req/s = {}{}",
            rate(self.pg.as_ref()),
            rate(self.mongo.as_ref()),
            self.ratio_text(),
            if same_step { " (both first failed at the same step: see the round's limits)" } else { "" }
        )
    }

    /// The hybrid layout's maximum rate and its factor over orders-pg's jsonb ("hybrid ≥ 600 req/s,
    /// 2.00× jsonb"), when it ran.
    pub fn hybrid_text(&self) -> Option<String> {
        use orders_bench_report::format;
        let pgh = self.pgh.as_ref()?;
        let factor = self.hybrid_factor().map_or(String::new(), |f| {
            let bound = pgh.lower_bound || self.pg.as_ref().is_some_and(|p| p.lower_bound);
            format!(", {}{f:.2}× jsonb", if bound { "~" } else { "" })
        });
        Some(format!("hybrid {}{factor}", format::max_rate(Some(pgh), self.start_rate)))
    }

    /// The hybrid's median maximum rate over orders-pg's; none when neither failed a step (the
    /// staircase ended before either did) or orders-pg failed its first step.
    pub fn hybrid_factor(&self) -> Option<f64> {
        let (pgh, pg) = (self.pgh.as_ref()?, self.pg.as_ref()?);
        (pg.median > 0.0 && !(pgh.lower_bound && pg.lower_bound)).then(|| pgh.median / pg.median)
    }

    /// Both targets first failed at the same step (median of the repeats): on a machine they share
    /// with the load, the machine rather than a database set both limits.
    pub fn same_step(&self) -> bool {
        let pair = self.pg.as_ref().zip(self.mongo.as_ref());
        pair.is_some_and(|(p, m)| p.median == m.median && !p.lower_bound && !m.lower_bound)
    }

    /// "1.33", "~2.00" when a rate is a bound, "?" when neither target failed a step.
    pub fn ratio_text(&self) -> String {
        let bound = [&self.pg, &self.mongo].iter().any(|s| s.as_ref().is_some_and(|s| s.lower_bound));
        match self.ratio {
            Some(0.0) => "0 (PG failed the first step)".into(),
            Some(r) => format!("{}{r:.2}", if bound { "~" } else { "" }),
            None if self.pg.as_ref().zip(self.mongo.as_ref()).is_some_and(|(p, m)| p.lower_bound && m.lower_bound) => {
                "? (neither failed a step)".into()
            }
            None => orders_bench_report::format::NONE.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn growth_per_1k_writes_needs_writes() {
        assert_eq!(per_1k(&Growth::of(Some(1000.0), Some(3000.0)), 500), Some(4000.0));
        assert_eq!(per_1k(&Growth::of(Some(1000.0), Some(3000.0)), 0), None);
    }

    #[test]
    fn a_ratio_needs_a_mongodb_rate() {
        let summary = |median| RateSummary { median, min: 0, max: 0, runs: vec![], lower_bound: false };
        assert_eq!(ratio(Some(&summary(300.0)), Some(&summary(600.0))), Some(0.5));
        assert_eq!(ratio(Some(&summary(0.0)), Some(&summary(600.0))), Some(0.0));
        assert_eq!(ratio(Some(&summary(300.0)), Some(&summary(0.0))), None);
        let bound = |median| RateSummary { lower_bound: true, ..summary(median) };
        assert_eq!(ratio(Some(&bound(300.0)), Some(&bound(300.0))), None, "neither failed: no ratio");
        assert_eq!(ratio(Some(&bound(300.0)), Some(&summary(100.0))), Some(3.0));
    }
}
