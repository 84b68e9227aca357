//! The load generator's own account of itself, when the load summary carries one: a top-level
//! `load_generator` object, `{"kind": "native" | "k6", "steps": [{"step": 0,
//! "schedule_lag_p99_ms": 0.4, "cpu_seconds": 0.8}]}`. Schedule lag is how late requests left
//! against their intended send time: a generator that cannot keep its schedule is itself the
//! limit, whatever its CPU. Summaries without the object (k6's today) give nothing, and the
//! generator's CPU then comes from sampling its process.

use crate::model::cpu::GeneratorStep;
use serde::Deserialize;
use std::path::Path;

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct GeneratorSummary {
    pub kind: String,
    #[serde(default)]
    pub steps: Vec<GeneratorFigures>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct GeneratorFigures {
    pub step: usize,
    #[serde(default)]
    pub schedule_lag_p99_ms: Option<f64>,
    #[serde(default)]
    pub cpu_seconds: Option<f64>,
}

#[derive(Deserialize)]
struct Envelope {
    load_generator: Option<GeneratorSummary>,
}

impl GeneratorSummary {
    /// The `load_generator` object of a summary's text, if it has a well-formed one.
    pub fn parse(summary: &str) -> Option<Self> {
        serde_json::from_str::<Envelope>(summary).ok()?.load_generator
    }

    pub fn read(path: &Path) -> Option<Self> {
        Self::parse(&std::fs::read_to_string(path).ok()?)
    }

    /// Step `index` (lasting `seconds`) as the CPU report keeps it.
    pub fn step(&self, index: usize, seconds: f64) -> Option<GeneratorStep> {
        let figures = self.steps.iter().find(|s| s.step == index)?;
        Some(GeneratorStep {
            kind: self.kind.clone(),
            cores: figures.cpu_seconds.map(|s| s / seconds.max(1e-9)),
            schedule_lag_p99_ms: figures.schedule_lag_p99_ms,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_generators_own_figures_are_read_when_present() {
        let text = r#"{"run_seconds": 9, "load_generator": {"kind": "native",
            "steps": [{"step": 0, "schedule_lag_p99_ms": 0.4, "cpu_seconds": 0.8}, {"step": 1, "schedule_lag_p99_ms": 35.0}]}}"#;
        let summary = GeneratorSummary::parse(text).expect("load_generator");
        let step = summary.step(0, 4.0).expect("step 0");
        assert_eq!((step.kind.as_str(), step.cores, step.schedule_lag_p99_ms), ("native", Some(0.2), Some(0.4)));
        assert_eq!(summary.step(1, 4.0).and_then(|s| s.cores), None);
        assert!(summary.step(7, 4.0).is_none());
        assert!(GeneratorSummary::parse(r#"{"run_seconds": 9}"#).is_none(), "k6's summary has none");
    }
}
