//! Study S1's figures (the GIN pending list and the product search's plans, F1 and F3), as
//! `Reference`s the experiments are held against.

use super::{Figure, Reference, S1, S1_BIG};

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
