//! The load generator's figures that `result.json` keeps as the generator wrote them in its
//! summary: latency percentiles, where a target was retired, and the generator's own account of
//! itself (`load_generator`: which generator, its scheduling, per step its schedule lag and CPU).
//! The summary format itself belongs to the generator (`orders-loadgen`); these are the parts of
//! it the result embeds.

use super::cpu::GeneratorAtStep;
use serde::{Deserialize, Serialize};

/// The generator itself: `kind` `native` or `k6`, and for the native one, per step, how late it
/// sent (schedule lag, also the worst per window) and the CPU seconds it used.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LoadGenerator {
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_seconds: Option<f64>,
    /// The native one's scheduling policy: `SCHED_FIFO 1`, or ordinary and why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduling: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<GeneratorStep>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GeneratorStep {
    pub step: usize,
    #[serde(default)]
    pub schedule_lag_p50_ms: Option<f64>,
    pub schedule_lag_p99_ms: Option<f64>,
    #[serde(default)]
    pub schedule_lag_max_ms: Option<f64>,
    pub cpu_seconds: Option<f64>,
    /// The worst schedule lag of each window of the step (`window_ms` long), milliseconds.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub window_lag_max_ms: Vec<f64>,
}

impl LoadGenerator {
    pub fn step(&self, step: usize) -> Option<&GeneratorStep> {
        self.steps.iter().find(|s| s.step == step)
    }

    /// Step `index` (lasting `seconds`) as the CPU report keeps it.
    pub fn at_step(&self, index: usize, seconds: f64) -> Option<GeneratorAtStep> {
        let figures = self.step(index)?;
        Some(GeneratorAtStep {
            kind: self.kind.clone(),
            cores: figures.cpu_seconds.map(|s| s / seconds.max(1e-9)),
            schedule_lag_p99_ms: figures.schedule_lag_p99_ms,
        })
    }
}

/// Milliseconds; `None` when the (sub-)metric saw no request.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Latency {
    pub p50: Option<f64>,
    pub p90: Option<f64>,
    pub p95: Option<f64>,
    pub p99: Option<f64>,
    pub max: Option<f64>,
}

/// The first moment a target was not sent its share of an iteration any more.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Retired {
    pub step: usize,
    /// Seconds after the start of the first step.
    pub at_s: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_generators_own_figures_are_read_when_present() {
        let text = r#"{"kind": "native",
            "steps": [{"step": 0, "schedule_lag_p99_ms": 0.4, "cpu_seconds": 0.8}, {"step": 1, "schedule_lag_p99_ms": 35.0}]}"#;
        let generator: LoadGenerator = serde_json::from_str(text).expect("load_generator");
        let step = generator.at_step(0, 4.0).expect("step 0");
        assert_eq!((step.kind.as_str(), step.cores, step.schedule_lag_p99_ms), ("native", Some(0.2), Some(0.4)));
        assert_eq!(generator.at_step(1, 4.0).and_then(|s| s.cores), None);
        assert!(generator.at_step(7, 4.0).is_none());
    }
}
