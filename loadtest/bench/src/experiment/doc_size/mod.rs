//! `experiment doc-size`: what a document's size costs one small change (study S2's finding F2,
//! S4's WAL figure, S1's finding F3 on 40-item orders). Per size (documents of about 1 KB, 10 KB
//! and 100 KB, the note making up the difference, and 40-item orders): S2's closed loop of status
//! updates (its clients as fast as they can, several runs), then a staircase of status updates
//! and one of reads by id, each on freshly reloaded data. The writes carry `Prefer:
//! return=minimal` when every service honours it, so a 100 KB update is not also a 100 KB
//! response. Per size: maximum rates, WAL bytes, records and full-page images per update, HOT
//! share, table/TOAST/index growth, MongoDB's journal and storage, bytes on disk per order; and
//! log-log charts of bytes written and throughput against the size, the study's beside ours.
//!
//! The hybrid layout (`pgh`, measured by default) runs the same loops and staircases at the same
//! moment, on the same data set in a database of its own on a server of its own: S2's counter in
//! a column of its own, held against S2's column figures (`hybrid`), with the price of joining the
//! columns back into every read shown by the read staircase.

mod charts;
mod hybrid;
mod rows;

use super::Ctx;
use super::closed_loop::{Run as ClosedRun, Work};
use super::figures::RoundFigures;
use super::output::{Outcome, RoundRef};
use super::rounds::{self, Data, RoundPlan};
use super::studies;
use super::variant;
use crate::experiment::engine::Target;
use anyhow::{Result, bail};
use orders_bench_model::stats::median;
use orders_bench_report::doc::Block;
use orders_bench_report::format::{self, NONE};
use orders_dataset::Profile;
use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct DocSize {
    pub key: &'static str,
    pub label: &'static str,
    /// Size of the whole order as JSON the note makes up to; `None`: no note.
    pub target_bytes: Option<u64>,
    pub items: u32,
    /// Index into S2's sizes (1, 10, 100 KB).
    pub s2: Option<usize>,
}

pub const SIZES: [DocSize; 4] = [
    DocSize { key: "1k", label: "1 KB", target_bytes: Some(1_000), items: 3, s2: Some(0) },
    DocSize { key: "10k", label: "10 KB", target_bytes: Some(10_000), items: 3, s2: Some(1) },
    DocSize { key: "100k", label: "100 KB", target_bytes: Some(100_000), items: 3, s2: Some(2) },
    DocSize { key: "40items", label: "40 items", target_bytes: None, items: 40, s2: None },
];

/// The sizes named in `only` (all when empty), in their order.
pub fn select(only: &[String], allowed: &[DocSize]) -> Result<Vec<DocSize>> {
    if let Some(unknown) = only.iter().find(|k| !allowed.iter().any(|s| s.key == k.as_str())) {
        let known: Vec<&str> = allowed.iter().map(|s| s.key).collect();
        bail!("--sizes: no size \"{unknown}\" here (known: {})", known.join(", "));
    }
    Ok(allowed.iter().filter(|s| only.is_empty() || only.iter().any(|o| o == s.key)).copied().collect())
}

/// Note bytes that make an order of `size` about its target size as JSON.
pub fn data_for(size: &DocSize, orders: u64) -> Result<Data> {
    let Some(target) = size.target_bytes else { return Ok(Data { items: size.items, note_bytes: 0 }) };
    let per_ten = (orders / 10).max(1);
    let profile = Profile {
        seed: 1,
        orders,
        customers: per_ten,
        products: per_ten.max(u64::from(size.items)),
        items: size.items,
        note_bytes: 0,
    };
    let base = profile.approx_doc_bytes()?;
    // The note is a JSON string: `,"note":"..."` adds 10 bytes besides its text.
    let note = target.saturating_sub(base + 10);
    Ok(Data { items: size.items, note_bytes: u32::try_from(note)? })
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct ClosedSummary {
    pub runs: Vec<ClosedRun>,
    /// Median requests/s over the runs.
    pub pg: Option<f64>,
    pub mongo: Option<f64>,
    pub pg_p95_ms: Option<f64>,
    pub mongo_p95_ms: Option<f64>,
    /// The hybrid layout's, when it ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pgh: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pgh_p95_ms: Option<f64>,
}

impl ClosedSummary {
    pub fn of(runs: Vec<ClosedRun>) -> Self {
        let of = |target: Target, f: fn(&super::closed_loop::TargetRun) -> Option<f64>| {
            median(&runs.iter().filter_map(|r| r.targets.get(target.name()).and_then(f)).collect::<Vec<_>>())
        };
        Self {
            pg: of(Target::Pg, |t| Some(t.per_second)),
            mongo: of(Target::Mongo, |t| Some(t.per_second)),
            pg_p95_ms: of(Target::Pg, |t| t.p95_ms),
            mongo_p95_ms: of(Target::Mongo, |t| t.p95_ms),
            pgh: of(Target::Pgh, |t| Some(t.per_second)),
            pgh_p95_ms: of(Target::Pgh, |t| t.p95_ms),
            runs,
        }
    }

    /// The hybrid's median rate over orders-pg's (jsonb) and over MongoDB's.
    pub fn hybrid_over(&self, target: Target) -> Option<f64> {
        let base = match target {
            Target::Pg => self.pg,
            Target::Mongo => self.mongo,
            Target::Pgh => return None,
        };
        self.pgh.zip(base).filter(|(_, b)| *b > 0.0).map(|(h, b)| h / b)
    }

    /// The slower of PostgreSQL's and MongoDB's median rates (0 when one is missing), around which
    /// a staircase is placed: as without the hybrid, so its staircases are theirs, and the
    /// hybrid's maximum is a lower bound where it passes every step.
    pub fn slower(&self) -> f64 {
        self.pg.zip(self.mongo).map_or(0.0, |(p, m)| p.min(m))
    }

    pub fn ratio(&self) -> Option<f64> {
        self.pg.zip(self.mongo).filter(|(_, m)| *m > 0.0).map(|(p, m)| p / m)
    }

    pub fn text(&self, unit: &str) -> String {
        let plan = self.runs.first().map(|r| r.plan);
        format!(
            "closed loop PG {} / MongoDB {} {unit}/s = {}{}",
            format::opt_count(self.pg),
            format::opt_count(self.mongo),
            self.ratio().map_or(NONE.into(), |r| format!("{r:.2}")),
            plan.map_or(String::new(), |p| format!(
                " ({} clients × {} s × {} runs)",
                p.clients,
                p.seconds.as_secs_f64(),
                self.runs.len()
            ))
        )
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct SizeResult {
    pub size: DocSize,
    pub items: u32,
    pub note_bytes: u32,
    pub approx_doc_bytes: u64,
    pub closed_loop: ClosedSummary,
    pub status: Option<RoundFigures>,
    pub read: Option<RoundFigures>,
}

pub async fn run(ctx: &mut Ctx, only: &[String]) -> Result<Outcome> {
    let sizes = select(only, &SIZES)?;
    let variant = variant::both_wait();
    let hybrid = ctx.measures(Target::Pgh);
    let mut results = Vec::new();
    let mut refs = Vec::new();
    for size in &sizes {
        let data = data_for(size, ctx.scale.orders)?;
        let Some(urls) = ctx.use_variant(&variant).await? else { break };
        let minimal = ctx.minimal();
        let manifest = rounds::reload(ctx, data).await?;
        let runs =
            rounds::closed_loop(ctx, &urls, Work::Status, ctx.scale.closed_runs, ctx.scale.closed_seconds, minimal)
                .await?;
        let closed = ClosedSummary::of(runs);
        let status_stairs = ctx.scale.staircase(closed.slower());
        let read_stairs = rounds::placed_staircase(ctx, &urls, Work::Read, false).await?;
        let mut result = SizeResult {
            size: *size,
            items: data.items,
            note_bytes: data.note_bytes,
            approx_doc_bytes: manifest.approx_doc_bytes,
            closed_loop: closed,
            status: None,
            read: None,
        };
        for (mix, staircase, minimal) in [("status", status_stairs, minimal), ("read", read_stairs, false)] {
            let plan = RoundPlan {
                variant: &variant,
                name: format!("{mix} {}", size.label),
                dir: rounds::folder(&[size.key, mix]),
                mix,
                data,
                staircase,
                minimal,
                prefill: 0,
            };
            let Some(measured) = rounds::measure(ctx, &plan).await? else { break };
            refs.push(RoundRef { name: plan.name.clone(), variant: variant.label.into(), dir: plan.dir.clone() });
            if mix == "status" {
                result.status = Some(measured.figures);
            } else {
                result.read = Some(measured.figures);
            }
        }
        results.push(result);
    }
    let mut comparisons = rows::comparisons(&results);
    let mut details = vec![Block::Heading(2, "Per size".into()), rows::detail_table(&results)];
    let mut statements = Vec::new();
    if hybrid {
        comparisons.extend(results.iter().flat_map(hybrid::rows));
        details.extend(hybrid::details(&results));
        statements.extend(hybrid::statements(&results));
    }
    Ok(Outcome {
        title: "Experiment doc-size: one small change in a big document (S2 F2, S4, S1 F3)".into(),
        summary: format!(
            "Per size ({}): {} closed-loop run(s) of status updates ({} clients per target, as fast as they can, {} s; \
             S2's way), then a staircase of status updates and one of reads by id, each on reloaded data, both \
             services at the same moment, both waiting for the disk. The API has no one-field read, so the reads \
             return the whole order. A jsonb update writes a new version of the whole document (and every index \
             entry): S2 saw its WAL and its time grow with the size, MongoDB's much less.{}",
            sizes.iter().map(|s| s.label).collect::<Vec<_>>().join(", "),
            ctx.scale.closed_runs,
            ctx.scale.clients,
            ctx.scale.closed_seconds.as_secs_f64(),
            if hybrid { hybrid::SUMMARY } else { "" },
        ),
        statements,
        setups: vec![studies::S2, studies::S2_BOTH_WAIT, studies::S1_BIG, studies::S4, studies::S3, studies::S1],
        comparisons,
        details,
        charts: charts::charts(&results),
        variants: serde_json::to_value(&results)?,
        rounds: refs,
        extra: serde_json::Map::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notes_make_up_the_target_size() {
        for size in &SIZES[..3] {
            let data = data_for(size, 1000).expect("data");
            let profile =
                Profile { seed: 1, orders: 1000, customers: 100, products: 100, items: 3, note_bytes: data.note_bytes };
            let bytes = profile.approx_doc_bytes().expect("size") as f64;
            let target = size.target_bytes.expect("target") as f64;
            assert!((bytes - target).abs() / target < 0.03, "{}: {bytes} for {target}", size.key);
        }
        assert_eq!(data_for(&SIZES[3], 1000).expect("data"), Data { items: 40, note_bytes: 0 });
    }

    #[test]
    fn sizes_are_chosen_by_key() {
        let chosen = select(&["100k".into(), "1k".into()], &SIZES).expect("sizes");
        assert_eq!(chosen.iter().map(|s| s.key).collect::<Vec<_>>(), ["1k", "100k"]);
        assert!(select(&["2k".into()], &SIZES).is_err());
    }
}
