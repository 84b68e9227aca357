//! Studies S2, S3 and S4's figures (document size, durability, disk and WAL: F2, F4), as
//! `Reference`s the experiments are held against.

use super::{Figure, Reference, S2, S2_BOTH_WAIT, S2_DOCKER, S3, S4};

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
