//! The live view of a run while it goes on, as the runner keeps it for its progress lines and its
//! early stop: per target the figures of every step so far, and the short windows and the
//! generator's lag that the stall test reads (`verdict::stall::explains_live`). Both generators
//! fill it (`orders-loadgen`'s live lines, k6's REST API); it lives here, beside that test.

use crate::summary::Windows;
use std::collections::BTreeMap;

/// What k6 has counted so far for one target in one step. Requests still running are not in it.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct LiveStep {
    pub count: u64,
    pub p95_ms: Option<f64>,
    pub failed_rate: f64,
}

/// All targets' live figures: steps by index, and k6's dropped iterations so far. The native
/// generator also sends each step's short windows and its own lag per window, for telling a
/// stall of the machine from a failure (`stall`); k6 leaves them empty.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LiveView {
    pub steps: BTreeMap<String, BTreeMap<usize, LiveStep>>,
    pub dropped: BTreeMap<String, u64>,
    pub windows: BTreeMap<String, BTreeMap<usize, Windows>>,
    pub lag_ms: BTreeMap<usize, Vec<f64>>,
}

impl LiveView {
    /// The highest step any target has started requests in.
    pub fn current_step(&self) -> Option<usize> {
        self.steps.values().filter_map(|steps| steps.iter().filter(|(_, s)| s.count > 0).map(|(i, _)| *i).max()).max()
    }
}
