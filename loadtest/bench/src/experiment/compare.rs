//! Our figure beside the study's, row by row, with a verdict a reader can check by eye. Absolute
//! rates depend on the hardware, so rates are compared as PostgreSQL / MongoDB ratios; bytes,
//! shares and factors directly. A ratio or factor on the study's side of 1 (the same database
//! ahead, a slowdown still a slowdown) and within a factor of two of the study's is
//! **reproduced**, further off **same direction**; on the other side, or a tie (within 5% of 1),
//! **not reproduced**. Bytes within a factor of two are reproduced. A claim without a number is judged by
//! its direction or by whether the mechanism was seen.

use super::studies::{Figure, Reference};
use orders_bench_report::doc::Block;
use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Reproduced,
    SameDirection,
    NotReproduced,
    /// The study gives no figure for this row (it named the variant without measuring it).
    NoStudyFigure,
    /// We have no figure (the run did not measure it, or it was skipped).
    NotMeasured,
    /// Staircases that did not tell the two rates apart (both targets first failed at the same
    /// step, or one target's ranges under two settings overlap): the ratio says nothing about the
    /// study's claim.
    Inconclusive,
}

impl Verdict {
    pub fn text(self) -> &'static str {
        match self {
            Self::Reproduced => "reproduced",
            Self::SameDirection => "same direction, different size",
            Self::NotReproduced => "NOT reproduced",
            Self::NoStudyFigure => "no study figure",
            Self::NotMeasured => "not measured here",
            Self::Inconclusive => "inconclusive: the staircase did not tell the rates apart",
        }
    }
}

/// One row of an experiment's table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    pub finding: String,
    /// What ran: variant, mix, document size.
    pub workload: String,
    pub ours: String,
    /// The number the verdict compared (a ratio, bytes, a share, a factor), when there is one.
    pub ours_value: Option<f64>,
    pub study: String,
    pub study_id: String,
    pub study_setup: String,
    pub verdict: Verdict,
    /// Set when the row ran with unequal durability on purpose (experiment `durability`).
    pub unfair: bool,
}

impl Comparison {
    pub fn new(reference: &Reference, workload: impl Into<String>, ours: impl Into<String>) -> Self {
        Self {
            finding: reference.finding.into(),
            workload: workload.into(),
            ours: ours.into(),
            ours_value: None,
            study: match reference.figure {
                // Numbers the workload column already explains.
                Figure::Rates { .. }
                | Figure::PgRate { .. }
                | Figure::Bytes { .. }
                | Figure::Share { .. }
                | Figure::SeqScans { .. }
                | Figure::PendingList { .. }
                | Figure::FailedFirstStep => reference.figure.text(),
                _ => format!("{}: {}", reference.figure.text(), reference.claim),
            },
            study_id: reference.id.into(),
            study_setup: reference.setup.short.into(),
            verdict: Verdict::NotMeasured,
            unfair: false,
        }
    }

    /// Judged by a number of ours against the reference's figure (see `judge`).
    pub fn judged(mut self, reference: &Reference, ours: Option<f64>) -> Self {
        self.ours_value = ours;
        self.verdict = judge(&reference.figure, ours);
        self
    }

    /// For a row judged by staircases: when they did not tell the two rates apart (two targets
    /// that first failed at the same step, the first one included, where there is no ratio at
    /// all; or one target's repeats under two settings whose ranges overlap), the verdict is
    /// inconclusive.
    pub fn staircase(mut self, not_told_apart: bool) -> Self {
        if not_told_apart && self.verdict != Verdict::NoStudyFigure {
            self.verdict = Verdict::Inconclusive;
        }
        self
    }

    pub fn unfair(mut self, unfair: bool) -> Self {
        self.unfair = unfair;
        self
    }
}

/// A ratio this close to 1 says neither database was ahead (measurement noise is larger).
fn tie(ratio: f64) -> bool {
    (ratio - 1.0).abs() < 0.05
}

fn within_two(ours: f64, theirs: f64) -> bool {
    ours > 0.0 && theirs > 0.0 && ours <= theirs * 2.0 && ours >= theirs / 2.0
}

/// `ours` is what the figure compares: PG/MongoDB for rates, bytes, a 0..1 share, a factor, the
/// sequential scans the generic plan ran for `SeqScans`, the longest pending list over the length
/// at which the generic plan turns into a sequential scan for `PendingList`, 1/0 for a direction or
/// a first-step failure (1: PostgreSQL was faster / failed its first step).
pub fn judge(figure: &Figure, ours: Option<f64>) -> Verdict {
    if matches!(figure, Figure::NotMeasured) {
        return Verdict::NoStudyFigure;
    }
    let Some(ours) = ours.filter(|v| v.is_finite()) else { return Verdict::NotMeasured };
    // A ratio or factor must first be on the study's side of 1; within 5% of 1 it is a tie, which
    // shows no direction (near 1, "within a factor of two" alone would accept either side).
    let directional = |ours: f64, theirs: f64| {
        let same_side = !tie(ours) && (ours > 1.0) == (theirs > 1.0);
        if !same_side {
            Verdict::NotReproduced
        } else if within_two(ours, theirs) {
            Verdict::Reproduced
        } else {
            Verdict::SameDirection
        }
    };
    let yes_no = |yes: bool| if yes { Verdict::Reproduced } else { Verdict::NotReproduced };
    match *figure {
        Figure::Rates { pg, mongo } => directional(ours, pg / mongo),
        Figure::Factor { value } => directional(ours, value),
        Figure::Bytes { value } => {
            if within_two(ours, value) {
                Verdict::Reproduced
            } else {
                Verdict::NotReproduced
            }
        }
        // A share of zero is matched by a small share, not by a factor of it.
        Figure::Share { value: 0.0 } => yes_no(ours < 0.01),
        Figure::Share { value } => yes_no((ours - value).abs() < 0.1),
        // The generic plan must have run sequential scans: how much of the table a scan reads
        // says nothing (ten of ~30 evenly spread matches is a third of it for any plan).
        Figure::SeqScans { .. } => yes_no(ours > 0.0),
        // The pending list must have grown to where the probe's generic plan is a sequential
        // scan (`ours`: the longest list seen / that length).
        Figure::PendingList { .. } => yes_no(ours >= 1.0),
        Figure::PgRate { pg_faster, .. } | Figure::Direction { pg_faster } => {
            yes_no(!tie(ours) && (ours > 1.0) == pg_faster)
        }
        Figure::FailedFirstStep => {
            if ours >= 1.0 {
                Verdict::Reproduced
            } else if ours > 0.0 {
                Verdict::SameDirection
            } else {
                Verdict::NotReproduced
            }
        }
        Figure::Seen => yes_no(ours > 0.0),
        Figure::NotMeasured => Verdict::NoStudyFigure,
    }
}

pub const HEADER: [&str; 6] = ["finding", "workload", "ours", "study", "study setup", "verdict"];

pub fn table(rows: &[Comparison]) -> Block {
    Block::Table {
        header: HEADER.iter().map(|h| (*h).to_owned()).collect(),
        rows: rows
            .iter()
            .map(|c| {
                let workload = if c.unfair { format!("**UNFAIR** {}", c.workload) } else { c.workload.clone() };
                vec![
                    c.finding.clone(),
                    workload,
                    c.ours.clone(),
                    c.study.clone(),
                    c.study_setup.clone(),
                    c.verdict.text().into(),
                ]
            })
            .collect(),
    }
}

/// "2 reproduced, 1 same direction, 1 NOT reproduced, 2 without a study figure".
pub fn tally(rows: &[Comparison]) -> String {
    let count = |v: Verdict| rows.iter().filter(|c| c.verdict == v).count();
    let parts: Vec<String> = [
        (Verdict::Reproduced, "reproduced"),
        (Verdict::SameDirection, "same direction, different size"),
        (Verdict::NotReproduced, "NOT reproduced"),
        (Verdict::Inconclusive, "inconclusive (the staircase did not tell the rates apart)"),
        (Verdict::NoStudyFigure, "without a study figure"),
        (Verdict::NotMeasured, "not measured here"),
    ]
    .into_iter()
    .filter(|(v, _)| count(*v) > 0)
    .map(|(v, words)| format!("{} {words}", count(v)))
    .collect();
    parts.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::studies::{S1_HOT_40_ITEMS, S1_PENDING, S1_SEQ_SCANS, S1_SHOP_DEFAULTS, S2_UPDATES, S2_WAL};

    #[test]
    fn ratios_within_two_reproduce_the_same_side_of_one_keeps_the_direction() {
        let at_100kb = &S2_UPDATES[2].figure; // 375 / 984 = 0.38
        assert_eq!(judge(at_100kb, Some(0.5)), Verdict::Reproduced);
        assert_eq!(judge(at_100kb, Some(0.1)), Verdict::SameDirection);
        assert_eq!(judge(at_100kb, Some(1.2)), Verdict::NotReproduced);
        assert_eq!(judge(at_100kb, None), Verdict::NotMeasured);
        assert_eq!(judge(&S2_UPDATES[0].figure, Some(0.9)), Verdict::NotReproduced, "PG ahead in S2 at 1 KB");
        assert_eq!(judge(&S2_UPDATES[1].figure, Some(1.0)), Verdict::NotReproduced, "a tie has no direction");
        assert_eq!(judge(&S2_UPDATES[0].figure, Some(1.004)), Verdict::NotReproduced, "within 5% of 1: a tie");
        assert_eq!(judge(&S2_UPDATES[0].figure, Some(1.2)), Verdict::SameDirection);
        assert_eq!(judge(&S2_UPDATES[1].figure, Some(0.8)), Verdict::NotReproduced, "within 2× of 1.39, wrong side");
    }

    #[test]
    fn bytes_shares_scans_and_first_steps() {
        assert_eq!(judge(&S2_WAL[2].figure, Some(30_000.0)), Verdict::Reproduced);
        assert_eq!(judge(&S2_WAL[2].figure, Some(200_000.0)), Verdict::NotReproduced);
        assert_eq!(judge(&S1_HOT_40_ITEMS.figure, Some(0.0)), Verdict::Reproduced);
        assert_eq!(judge(&S1_HOT_40_ITEMS.figure, Some(0.4)), Verdict::NotReproduced);
        // Sequential scans run by the generic plan: any is F1's mechanism, none is not.
        assert_eq!(judge(&S1_SEQ_SCANS.figure, Some(12.0)), Verdict::Reproduced);
        assert_eq!(judge(&S1_SEQ_SCANS.figure, Some(0.0)), Verdict::NotReproduced);
        // The longest pending list over the length at which the generic plan is a Seq Scan.
        assert_eq!(judge(&S1_PENDING.figure, Some(2.5)), Verdict::Reproduced);
        assert_eq!(judge(&S1_PENDING.figure, Some(0.4)), Verdict::NotReproduced, "a short list is not enough");
        assert_eq!(judge(&S1_SHOP_DEFAULTS.figure, Some(1.0)), Verdict::Reproduced);
        assert_eq!(judge(&S1_SHOP_DEFAULTS.figure, Some(0.5)), Verdict::SameDirection);
        assert_eq!(judge(&S1_SHOP_DEFAULTS.figure, Some(0.0)), Verdict::NotReproduced);
    }

    #[test]
    fn unfair_rows_say_so_in_the_table() {
        let row =
            Comparison::new(&S2_UPDATES[2], "status 100 KB", "PG 1 / MongoDB 2").judged(&S2_UPDATES[2], Some(0.5));
        let Block::Table { rows, header } = table(&[row.clone().unfair(true), row]) else { panic!("a table") };
        assert_eq!(header.len(), 6);
        assert!(rows[0][1].starts_with("**UNFAIR**"));
        assert!(!rows[1][1].contains("UNFAIR"));
        assert_eq!(rows[1][5], "reproduced");
        assert!(rows[1][4].starts_with("S2: PG 17"), "{}", rows[1][4]);
    }
}
