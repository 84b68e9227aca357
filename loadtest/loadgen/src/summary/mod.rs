//! The summary this generator writes (`write`), in the schema `loadtest/k6/orders.js` writes too.
//! The types it is read into are the model's (`orders_bench_model::summary`, beside the verdicts
//! that judge them), re-exported here so that the generator and the runner name them as before.

pub(crate) mod write;

#[cfg(feature = "fixtures")]
pub use orders_bench_model::summary::FIXTURE;
pub use orders_bench_model::summary::{
    Figures, Latency, LoadGenerator, Mix, Offered, OfferedStep, Retired, StepSummary, Summary, SummaryError,
    TargetSummary, Windows,
};
