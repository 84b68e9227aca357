//! The published figures the experiments are held against, each with the setup that produced it
//! (versions, hardware, data size, load), in one typed table taken from `docs/studies.md`. A
//! figure the study did not give is not invented: a claim without a number is a `Direction` or a
//! `Seen`, a fix it named but did not measure is `NotMeasured`. A test checks that every number
//! here is quoted in `docs/studies.md`, so the two cannot drift apart.

use serde::Serialize;

/// How a study ran: what its figures depend on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Setup {
    pub study: &'static str,
    /// Versions, hardware and size in a few words, for a table cell.
    pub short: &'static str,
    pub versions: &'static str,
    pub hardware: &'static str,
    pub data: &'static str,
    pub load: &'static str,
}

impl Setup {
    /// The whole setup in one line.
    pub fn line(&self) -> String {
        format!("{}: {}; {}; {}; {}", self.study, self.versions, self.hardware, self.data, self.load)
    }
}

/// What a study reported for one row.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Figure {
    /// Requests or updates per second of both databases: compared through PostgreSQL / MongoDB.
    Rates {
        pg: f64,
        mongo: f64,
    },
    /// PostgreSQL's rate alone, with the claim that it was above MongoDB's (`pg_faster`).
    PgRate {
        pg: f64,
        pg_faster: bool,
    },
    /// A factor such as a slowdown (rate at the small size / rate at the large one).
    Factor {
        value: f64,
    },
    Bytes {
        value: f64,
    },
    /// 0..1.
    Share {
        value: f64,
    },
    /// Sequential scans of `orders` per 10 s and the rows each read, out of the table's rows.
    SeqScans {
        per_10s: f64,
        rows_per_scan: f64,
        table_rows: f64,
    },
    PendingList {
        pages: f64,
        tuples: f64,
    },
    /// PostgreSQL failed the first step of the staircase.
    FailedFirstStep,
    /// Only a direction: PostgreSQL faster than MongoDB (`true`) or slower.
    Direction {
        pg_faster: bool,
    },
    /// A mechanism the study saw, without a number.
    Seen,
    /// The study named it (as a fix, say) but did not measure it.
    NotMeasured,
}

impl Figure {
    /// The figure as the table shows it.
    pub fn text(&self) -> String {
        use orders_bench_report::format::{bytes, count};
        match *self {
            Self::Rates { pg, mongo } => {
                format!("PG {} / MongoDB {} req/s = {:.2}", count(pg), count(mongo), pg / mongo)
            }
            Self::PgRate { pg, pg_faster } => {
                format!("PG {} req/s, {} MongoDB", count(pg), if pg_faster { "above" } else { "below" })
            }
            Self::Factor { value } => format!("{value:.1}×"),
            Self::Bytes { value } => bytes(value),
            Self::Share { value } => format!("{:.0}%", value * 100.0),
            Self::SeqScans { per_10s, rows_per_scan, table_rows } => format!(
                "{} scans per 10 s of ~{} rows each ({:.0}% of the table)",
                count(per_10s),
                count(rows_per_scan),
                rows_per_scan / table_rows * 100.0
            ),
            Self::PendingList { pages, tuples } => format!("{} pages / {} tuples", count(pages), count(tuples)),
            Self::FailedFirstStep => "PG failed its first step".into(),
            Self::Direction { pg_faster } => (if pg_faster { "PG ahead of MongoDB" } else { "MongoDB ahead" }).into(),
            Self::Seen => "seen".into(),
            Self::NotMeasured => "not measured".into(),
        }
    }

    /// The numbers as `docs/studies.md` writes them (for the test that keeps both in step).
    #[cfg(test)]
    fn quoted(&self) -> Vec<String> {
        use orders_bench_report::format::count;
        match *self {
            Self::Rates { pg, mongo } => vec![count(pg), count(mongo)],
            Self::PgRate { pg, .. } => vec![count(pg)],
            // "3.5 KB", "16 KB" where the study rounded; exact byte counts otherwise.
            Self::Bytes { value } if value >= 1000.0 && (value / 100.0).fract() == 0.0 => {
                vec![format!("{} KB", value / 1000.0)]
            }
            Self::Bytes { value } => vec![count(value)],
            Self::Share { value } => vec![format!("{:.0}%", value * 100.0)],
            Self::SeqScans { per_10s, rows_per_scan, .. } => vec![count(per_10s), count(rows_per_scan)],
            Self::PendingList { pages, tuples } => vec![count(pages), count(tuples)],
            _ => Vec::new(),
        }
    }
}

/// One published figure and what it says.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Reference {
    pub id: &'static str,
    pub finding: &'static str,
    pub claim: &'static str,
    pub figure: Figure,
    pub setup: Setup,
}

pub const S1: Setup = Setup {
    study: "S1",
    short: "S1: PG 16+ / MongoDB ?, small droplets, 1M orders × ~600 B, 30 s steps",
    versions: "PostgreSQL 16+ / MongoDB (version not stated), Go services",
    hardware: "small database droplets, app and load droplets 4× larger (sizes not stated)",
    data: "1,000,000 orders of ~600 B",
    load: "k6 arrival-rate staircase, 30 s steps, p95 < 50 ms, 3 repeats (median)",
};

pub const S1_BIG: Setup = Setup {
    short: "S1: PG 16+ / MongoDB ?, small droplets, 1M orders × 40 items (~3.4 KB)",
    data: "1,000,000 orders of 40 items (~3.4 KB, ~1.1 KB stored)",
    ..S1
};

pub const S2: Setup = Setup {
    study: "S2",
    short: "S2: PG 17 (synchronous_commit=off) / MongoDB 8, managed 2 vCPU / 4 GB, 8 clients × 20 s × 5",
    versions: "PostgreSQL 17 / MongoDB 8, managed; PostgreSQL ran synchronous_commit=off (F4)",
    hardware: "2 vCPU / 4 GB each",
    data: "documents of 1, 10 and 100 KB (count not stated)",
    load: "8 clients, closed loop, 20 s, 5 runs",
};

pub const S2_BOTH_WAIT: Setup = Setup {
    short: "S2: PG 17 / MongoDB 8 both waiting, managed 2 vCPU / 4 GB, 100 KB, 8 clients × 20 s × 5",
    versions: "PostgreSQL 17 / MongoDB 8, managed, both waiting for the disk",
    data: "documents of 100 KB (count not stated)",
    ..S2
};

pub const S2_DOCKER: Setup = Setup {
    short: "S2: MongoDB in Docker waiting for nothing vs managed MongoDB 8 (2 vCPU / 4 GB)",
    versions: "MongoDB in local Docker (standalone, no write concern waiting) against managed MongoDB 8",
    hardware: "local machine not stated; managed 2 vCPU / 4 GB",
    data: "document size of this figure not stated",
    ..S2
};

pub const S3: Setup = Setup {
    study: "S3",
    short: "S3: PG 18 / MongoDB 7, 8 CPUs / 16 GB each",
    versions: "PostgreSQL 18 / MongoDB 7, Java runner",
    hardware: "8 CPUs / 16 GB each",
    data: "data size not stated",
    load: "seventeen cases, run lengths not stated",
};

pub const S4: Setup = Setup {
    study: "S4",
    short: "S4: PG 17 alone, hardware not stated, 8 KB documents",
    versions: "PostgreSQL 17 alone (jsonb against columns)",
    hardware: "hardware not stated",
    data: "1,000,000 products; the WAL figure on 8 KB documents",
    load: "one-integer updates",
};

pub const S1_SHOP_DEFAULTS: Reference = Reference {
    id: "s1-shop-defaults",
    finding: "S1 F1",
    claim: "the shop mix failed PostgreSQL at its first step, every pure workload being fine",
    figure: Figure::FailedFirstStep,
    setup: S1,
};

pub const S1_SEQ_SCANS: Reference = Reference {
    id: "s1-seq-scans",
    finding: "S1 F1",
    claim: "seq_scan climbed while product searches matched ~30 rows",
    figure: Figure::SeqScans { per_10s: 82.0, rows_per_scan: 320_000.0, table_rows: 1_000_000.0 },
    setup: S1,
};

pub const S1_PENDING: Reference = Reference {
    id: "s1-pending-list",
    finding: "S1 F1",
    claim: "pgstatginindex showed the fastupdate pending list",
    figure: Figure::PendingList { pages: 124.0, tuples: 4200.0 },
    setup: S1,
};

pub const S1_GENERIC_PLAN: Reference = Reference {
    id: "s1-generic-plan",
    finding: "S1 F1",
    claim: "after five executions the plan cache chose the generic plan (it guesses 10,000 matches): a Seq Scan",
    figure: Figure::Seen,
    setup: S1,
};

pub const S1_SHOP_FASTUPDATE_OFF: Reference = Reference {
    id: "s1-shop-fastupdate-off",
    finding: "S1 F1",
    claim: "fastupdate = off: the shop mix held 5,474 req/s; PostgreSQL ahead on the mix once the pending list was gone",
    figure: Figure::PgRate { pg: 5474.0, pg_faster: true },
    setup: S1,
};

pub const S1_INSERT_DEFAULTS: Reference = Reference {
    id: "s1-insert-defaults",
    finding: "S1 F1",
    claim: "inserts with fastupdate on",
    figure: Figure::Rates { pg: 5964.0, mongo: 3966.0 },
    setup: S1,
};

pub const S1_INSERT_FASTUPDATE_OFF: Reference = Reference {
    id: "s1-insert-fastupdate-off",
    finding: "S1 F1",
    claim: "fastupdate = off costs inserts: below MongoDB's",
    figure: Figure::Rates { pg: 2970.0, mongo: 3966.0 },
    setup: S1,
};

pub const S1_INSERT_FASTUPDATE_COST: Reference = Reference {
    id: "s1-insert-fastupdate-cost",
    finding: "S1 F1",
    claim: "PostgreSQL inserts fell from 5,964 to 2,970 req/s with fastupdate = off",
    figure: Figure::Factor { value: 5964.0 / 2970.0 },
    setup: S1,
};

pub const S1_CUSTOM_PLAN: Reference = Reference {
    id: "s1-force-custom-plan",
    finding: "S1 F1",
    claim: "plan_cache_mode = force_custom_plan avoids the generic plan (named as a fix, not measured)",
    figure: Figure::NotMeasured,
    setup: S1,
};

pub const S1_UNPREPARED: Reference = Reference {
    id: "s1-unprepared",
    finding: "S1 F1",
    claim: "unprepared statements avoid the generic plan (named as a fix, not measured)",
    figure: Figure::NotMeasured,
    setup: S1,
};

pub const S1_LIMIT_PARAMETER: Reference = Reference {
    id: "s1-limit-parameter",
    finding: "S1 F1",
    claim: "not in S1: the limit as a parameter (LIMIT $2), whose generic plan cannot see it",
    figure: Figure::NotMeasured,
    setup: S1,
};

pub const S1_STATUS_40_ITEMS: Reference = Reference {
    id: "s1-status-40-items",
    finding: "S1 F3",
    claim: "status updates of 40-item orders",
    figure: Figure::Rates { pg: 1492.0, mongo: 4479.0 },
    setup: S1_BIG,
};

pub const S1_WAL_40_ITEMS: Reference = Reference {
    id: "s1-wal-40-items",
    finding: "S1 F3",
    claim: "a status update of a 40-item order wrote six WAL records, ~3.5 KB of WAL",
    figure: Figure::Bytes { value: 3500.0 },
    setup: S1_BIG,
};

pub const S1_HOT_40_ITEMS: Reference = Reference {
    id: "s1-hot-40-items",
    finding: "S1 F3",
    claim: "a jsonb status update is never HOT: every index depends on doc",
    figure: Figure::Share { value: 0.0 },
    setup: S1_BIG,
};

pub const S1_READS: Reference = Reference {
    id: "s1-reads",
    finding: "S1 overall",
    claim: "MongoDB ahead on reads",
    figure: Figure::Direction { pg_faster: false },
    setup: S1,
};

/// S2's update rates at 1 KB, 10 KB and 100 KB (PostgreSQL with synchronous_commit=off).
pub const S2_UPDATES: [Reference; 3] = [
    Reference {
        id: "s2-updates-1kb",
        finding: "S2",
        claim: "updates of one field in 1 KB documents",
        figure: Figure::Rates { pg: 6101.0, mongo: 1672.0 },
        setup: S2,
    },
    Reference {
        id: "s2-updates-10kb",
        finding: "S2",
        claim: "updates of one field in 10 KB documents",
        figure: Figure::Rates { pg: 2154.0, mongo: 1545.0 },
        setup: S2,
    },
    Reference {
        id: "s2-updates-100kb",
        finding: "S2",
        claim: "updates of one field in 100 KB documents",
        figure: Figure::Rates { pg: 375.0, mongo: 984.0 },
        setup: S2,
    },
];

/// S2's counter in a column of its own, updates/s at 1 KB, 10 KB and 100 KB (PostgreSQL with
/// synchronous_commit=off): what the hybrid layout's status column answers.
pub const S2_COLUMN_UPDATES: [f64; 3] = [5_400.0, 8_027.0, 7_982.0];

/// That column against the jsonb update, per size.
pub const S2_COLUMN_OVER_JSONB: [Reference; 3] = [
    Reference {
        id: "s2-column-over-jsonb-1kb",
        finding: "S2",
        claim: "the counter in a column of its own against the jsonb update, 1 KB documents: about 5,400 against \
                6,101 updates/s",
        figure: Figure::Factor { value: S2_COLUMN_UPDATES[0] / 6101.0 },
        setup: S2,
    },
    Reference {
        id: "s2-column-over-jsonb-10kb",
        finding: "S2",
        claim: "the counter in a column of its own against the jsonb update, 10 KB documents: 8,027 against 2,154 \
                updates/s",
        figure: Figure::Factor { value: S2_COLUMN_UPDATES[1] / 2154.0 },
        setup: S2,
    },
    Reference {
        id: "s2-column-over-jsonb-100kb",
        finding: "S2",
        claim: "the counter in a column of its own against the jsonb update, 100 KB documents: 7,982 against 375 \
                updates/s",
        figure: Figure::Factor { value: S2_COLUMN_UPDATES[2] / 375.0 },
        setup: S2,
    },
];

/// The same column against MongoDB's `$inc`.
pub const S2_COLUMN_OVER_MONGO: [Reference; 3] = [
    Reference {
        id: "s2-column-over-mongo-1kb",
        finding: "S2",
        claim: "the counter in a column of its own against MongoDB's $inc, 1 KB documents: about 5,400 against \
                1,672 updates/s",
        figure: Figure::Factor { value: S2_COLUMN_UPDATES[0] / 1672.0 },
        setup: S2,
    },
    Reference {
        id: "s2-column-over-mongo-10kb",
        finding: "S2",
        claim: "the counter in a column of its own against MongoDB's $inc, 10 KB documents: 8,027 against 1,545 \
                updates/s",
        figure: Figure::Factor { value: S2_COLUMN_UPDATES[1] / 1545.0 },
        setup: S2,
    },
    Reference {
        id: "s2-column-over-mongo-100kb",
        finding: "S2",
        claim: "the counter in a column of its own against MongoDB's $inc, 100 KB documents: 7,982 against 984 \
                updates/s",
        figure: Figure::Factor { value: S2_COLUMN_UPDATES[2] / 984.0 },
        setup: S2,
    },
];

/// The column at 100 KB with both waiting for the disk (F4), against jsonb and against MongoDB.
pub const S2_BOTH_WAIT_COLUMN_OVER_JSONB_100KB: Reference = Reference {
    id: "s2-both-wait-column-over-jsonb-100kb",
    finding: "S2 F4",
    claim: "with both waiting for the disk, 100 KB: the column 3,326 against jsonb's 350 updates/s",
    figure: Figure::Factor { value: 3326.0 / 350.0 },
    setup: S2_BOTH_WAIT,
};

pub const S2_BOTH_WAIT_COLUMN_OVER_MONGO_100KB: Reference = Reference {
    id: "s2-both-wait-column-over-mongo-100kb",
    finding: "S2 F4",
    claim: "with both waiting for the disk, 100 KB: the column 3,326 against MongoDB's 984 updates/s",
    figure: Figure::Factor { value: 3326.0 / 984.0 },
    setup: S2_BOTH_WAIT,
};

/// S2's column: about 260 bytes of WAL per update once the document is past 1 KB.
pub const S2_COLUMN_WAL_BYTES: f64 = 260.0;

pub const S2_COLUMN_WAL: Reference = Reference {
    id: "s2-column-wal",
    finding: "S2 F2",
    claim: "WAL per update of the counter in a column of its own, once the document is past 1 KB",
    figure: Figure::Bytes { value: S2_COLUMN_WAL_BYTES },
    setup: S2,
};

pub const S4_COLUMN_WAL_8KB: Reference = Reference {
    id: "s4-column-wal-8kb",
    finding: "S4",
    claim: "one integer in a column beside an 8 KB document: 294 bytes of WAL per update",
    figure: Figure::Bytes { value: 294.0 },
    setup: S4,
};

pub const S2_PG_SLOWDOWN: Reference = Reference {
    id: "s2-pg-slowdown",
    finding: "S2 F2",
    claim: "jsonb updates 16× slower at 100 KB than at 1 KB (6,101 → 375)",
    figure: Figure::Factor { value: 6101.0 / 375.0 },
    setup: S2,
};

pub const S2_MONGO_SLOWDOWN: Reference = Reference {
    id: "s2-mongo-slowdown",
    finding: "S2 F2",
    claim: "MongoDB $inc 40% slower at 100 KB than at 1 KB (1,672 → 984)",
    figure: Figure::Factor { value: 1672.0 / 984.0 },
    setup: S2,
};

/// S2's WAL bytes per jsonb update at 1 KB, 10 KB and 100 KB.
pub const S2_WAL: [Reference; 3] = [
    Reference {
        id: "s2-wal-1kb",
        finding: "S2 F2",
        claim: "WAL per jsonb update, 1 KB documents",
        figure: Figure::Bytes { value: 1306.0 },
        setup: S2,
    },
    Reference {
        id: "s2-wal-10kb",
        finding: "S2 F2",
        claim: "WAL per jsonb update, 10 KB documents",
        figure: Figure::Bytes { value: 5202.0 },
        setup: S2,
    },
    Reference {
        id: "s2-wal-100kb",
        finding: "S2 F2",
        claim: "WAL per jsonb update, 100 KB documents",
        figure: Figure::Bytes { value: 43301.0 },
        setup: S2,
    },
];

/// Table growth per update, derived: S2 gives the growth of sixty seconds, not the updates in them.
pub const S2_GROWTH_PER_UPDATE_100KB: Reference = Reference {
    id: "s2-growth-100kb",
    finding: "S2 F2",
    claim: "sixty seconds of updates at 100 KB grew the jsonb table from 83 MB to 701 MB (per update: derived, \
            assuming S2's 375 updates/s)",
    figure: Figure::Bytes { value: (701.0 - 83.0) * 1e6 / (375.0 * 60.0) },
    setup: S2,
};

pub const S2_BOTH_WAIT_100KB: Reference = Reference {
    id: "s2-both-wait-100kb",
    finding: "S2 F4",
    claim: "100 KB updates with both waiting for the disk",
    figure: Figure::Rates { pg: 350.0, mongo: 984.0 },
    setup: S2_BOTH_WAIT,
};

pub const S2_PG_ASYNC_GAIN_100KB: Reference = Reference {
    id: "s2-pg-async-gain-100kb",
    finding: "S2 F4",
    claim: "jsonb at 100 KB: 375 updates/s with synchronous_commit=off against 350 with it on",
    figure: Figure::Factor { value: 375.0 / 350.0 },
    setup: S2,
};

pub const S2_DOCKER_MONGO: Reference = Reference {
    id: "s2-docker-mongo",
    finding: "S2 F4",
    claim: "a MongoDB whose writes wait for nothing did 14,673 updates/s where the managed one did 984",
    figure: Figure::Factor { value: 14673.0 / 984.0 },
    setup: S2_DOCKER,
};

pub const S2_NEITHER_WAITS: Reference = Reference {
    id: "s2-neither-waits",
    finding: "S2 F4",
    claim: "neither waiting for the disk (not measured)",
    figure: Figure::NotMeasured,
    setup: S2,
};

pub const S2_UPDATES_ONLY: Reference = Reference {
    id: "s2-updates-only",
    finding: "S2 F4",
    claim: "S2 measured updates only, no inserts",
    figure: Figure::NotMeasured,
    setup: S2,
};

pub const S2_BOTH_WAIT_AT_100KB_ONLY: Reference = Reference {
    id: "s2-both-wait-100kb-only",
    finding: "S2 F4",
    claim: "with both waiting for the disk S2 reports the 100 KB figures only",
    figure: Figure::NotMeasured,
    setup: S2_BOTH_WAIT,
};

pub const S3_DISK: Reference = Reference {
    id: "s3-disk",
    finding: "S3",
    claim: "MongoDB used about half the disk (compression)",
    figure: Figure::Factor { value: 2.0 },
    setup: S3,
};

pub const S4_WAL_8KB: Reference = Reference {
    id: "s4-wal-8kb",
    finding: "S4",
    claim: "one-integer update of an 8 KB document: ~16 KB of WAL",
    figure: Figure::Bytes { value: 16_000.0 },
    setup: S4,
};

pub const S4_HOT: Reference = Reference {
    id: "s4-hot",
    finding: "S4",
    claim: "a small-row jsonb update was 0% HOT",
    figure: Figure::Share { value: 0.0 },
    setup: S4,
};

/// Every reference, for the tests.
#[cfg(test)]
pub fn all() -> Vec<Reference> {
    let mut all = vec![
        S1_SHOP_DEFAULTS,
        S1_SEQ_SCANS,
        S1_PENDING,
        S1_GENERIC_PLAN,
        S1_SHOP_FASTUPDATE_OFF,
        S1_INSERT_DEFAULTS,
        S1_INSERT_FASTUPDATE_OFF,
        S1_INSERT_FASTUPDATE_COST,
        S1_CUSTOM_PLAN,
        S1_UNPREPARED,
        S1_LIMIT_PARAMETER,
        S1_STATUS_40_ITEMS,
        S1_WAL_40_ITEMS,
        S1_HOT_40_ITEMS,
        S1_READS,
        S2_PG_SLOWDOWN,
        S2_MONGO_SLOWDOWN,
        S2_GROWTH_PER_UPDATE_100KB,
        S2_BOTH_WAIT_100KB,
        S2_PG_ASYNC_GAIN_100KB,
        S2_DOCKER_MONGO,
        S2_NEITHER_WAITS,
        S2_UPDATES_ONLY,
        S2_BOTH_WAIT_AT_100KB_ONLY,
        S3_DISK,
        S4_WAL_8KB,
        S4_HOT,
    ];
    all.extend(S2_UPDATES);
    all.extend(S2_WAL);
    all.extend(S2_COLUMN_OVER_JSONB);
    all.extend(S2_COLUMN_OVER_MONGO);
    all.extend([
        S2_BOTH_WAIT_COLUMN_OVER_JSONB_100KB,
        S2_BOTH_WAIT_COLUMN_OVER_MONGO_100KB,
        S2_COLUMN_WAL,
        S4_COLUMN_WAL_8KB,
    ]);
    all
}

#[cfg(test)]
mod tests {
    use super::*;

    const STUDIES_MD: &str = include_str!("../../../../docs/studies.md");

    #[test]
    fn every_figure_is_quoted_in_docs_studies_md() {
        let text = STUDIES_MD.replace('\n', " ");
        for reference in all().iter().filter(|r| !r.claim.contains("derived")) {
            for number in reference.figure.quoted() {
                let found = text.contains(&number) || text.contains(&number.replace(',', ""));
                assert!(found, "{}: {number} is not in docs/studies.md", reference.id);
            }
        }
    }

    #[test]
    fn every_number_of_a_claim_is_quoted_in_docs_studies_md() {
        let text = STUDIES_MD.replace('\n', " ");
        for reference in all() {
            let numbers = reference.claim.split(|c: char| !(c.is_ascii_digit() || c == ',' || c == '.'));
            for number in numbers.map(|n| n.trim_matches(|c| c == ',' || c == '.')).filter(|n| !n.is_empty()) {
                assert!(
                    text.contains(number),
                    "{}: {number} of \"{}\" is not in docs/studies.md",
                    reference.id,
                    reference.claim
                );
            }
        }
    }

    #[test]
    fn ids_are_unique_and_every_setup_names_its_study() {
        let all = all();
        let mut ids: Vec<&str> = all.iter().map(|r| r.id).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), all.len());
        for reference in &all {
            assert!(reference.finding.starts_with(reference.setup.study), "{}", reference.id);
            assert!(reference.setup.line().contains(reference.setup.study));
        }
    }

    #[test]
    fn figures_read_as_the_study_wrote_them() {
        assert_eq!(S2_UPDATES[2].figure.text(), "PG 375 / MongoDB 984 req/s = 0.38");
        assert_eq!(S2_PG_SLOWDOWN.figure.text(), "16.3×");
        assert_eq!(S2_WAL[2].figure.text(), "42.3 KiB");
        assert_eq!(S2_COLUMN_OVER_JSONB[2].figure.text(), "21.3×");
        assert_eq!(S2_BOTH_WAIT_COLUMN_OVER_MONGO_100KB.figure.text(), "3.4×");
        assert!(S1_SEQ_SCANS.figure.text().contains("32% of the table"));
    }
}
