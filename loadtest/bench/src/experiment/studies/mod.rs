//! The published figures the experiments are held against, each with the setup that produced it
//! (versions, hardware, data size, load), in one typed table taken from `docs/studies.md`. A
//! figure the study did not give is not invented: a claim without a number is a `Direction` or a
//! `Seen`, a fix it named but did not measure is `NotMeasured`. A test checks that every number
//! here is quoted in `docs/studies.md`, so the two cannot drift apart.

mod s1;
mod s2_to_s4;

pub use s1::*;
pub use s2_to_s4::*;

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

    const STUDIES_MD: &str = include_str!("../../../../../docs/studies.md");

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
