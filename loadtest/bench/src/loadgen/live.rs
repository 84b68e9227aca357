//! Live figures while the generator runs, for the runner's progress lines and early stop: every
//! half second one JSON line on stdout with the seconds since the schedule's origin and, per
//! target, its dropped iterations so far and the figures of every step that changed since the
//! previous line:
//!
//! ```text
//! {"t":12.5,"targets":{"pg":{"dropped":0,"steps":{"2":{"count":2391,"p95_ms":3.1,"failed_rate":0.0}}}}}
//! ```
//!
//! `apply` folds such a line into the runner's `LiveView`, the same view k6's REST API gives.

use super::record::Recorder;
use crate::k6::live::{LiveStep, LiveView};
use serde_json::{Map, Value, json};

/// The progress line for the changes since the last one (and forgets them).
pub fn line(recorder: &mut Recorder, names: &[String], seconds: f64) -> String {
    let mut targets = Map::new();
    for (index, name) in names.iter().enumerate() {
        let changed = std::mem::take(&mut recorder.changed[index]);
        let mut steps = Map::new();
        for step in changed {
            let figures = &recorder.steps[index][step].figures;
            let failed_rate = if figures.count == 0 { 0.0 } else { figures.failures as f64 / figures.count as f64 };
            steps.insert(
                step.to_string(),
                json!({"count": figures.count, "p95_ms": figures.quantile_ms(0.95), "failed_rate": failed_rate}),
            );
        }
        targets.insert(name.clone(), json!({"dropped": recorder.target_dropped(index), "steps": steps}));
    }
    json!({"t": (seconds * 1000.0).round() / 1000.0, "targets": targets}).to_string()
}

/// Folds one progress line into `view`; returns its `t`, or `None` for a line that is not one.
pub fn apply(view: &mut LiveView, line: &str) -> Option<f64> {
    let value: Value = serde_json::from_str(line).ok()?;
    let t = value["t"].as_f64()?;
    for (target, figures) in value["targets"].as_object()? {
        if let Some(dropped) = figures["dropped"].as_u64() {
            view.dropped.insert(target.clone(), dropped);
        }
        let steps = view.steps.entry(target.clone()).or_default();
        for (step, s) in figures["steps"].as_object().into_iter().flatten() {
            let Ok(step) = step.parse::<usize>() else { continue };
            steps.insert(
                step,
                LiveStep {
                    count: s["count"].as_u64().unwrap_or(0),
                    p95_ms: s["p95_ms"].as_f64(),
                    failed_rate: s["failed_rate"].as_f64().unwrap_or(0.0),
                },
            );
        }
    }
    Some(t)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::loadgen::record::Slot;
    use std::time::Duration;

    #[test]
    fn a_progress_line_carries_the_changed_steps_into_the_live_view() {
        let mut recorder = Recorder::new(2, 1, &[10, 10], Duration::from_millis(100), Duration::from_millis(50));
        let names = ["pg".to_owned(), "mongo".to_owned()];
        for ms in [2, 4, 90] {
            recorder.request(Slot { target: 0, step: 1, window: 0, endpoint: 0 }, Duration::from_millis(ms), None);
        }
        recorder.dropped(Slot { target: 1, step: 0, window: 3, endpoint: 0 });
        let mut view = LiveView::default();
        assert_eq!(apply(&mut view, &line(&mut recorder, &names, 4.25)), Some(4.25));
        let pg = view.steps["pg"][&1];
        assert_eq!(pg.count, 3);
        assert!(pg.p95_ms.is_some_and(|p| (89.9..90.1).contains(&p)), "{pg:?}");
        assert_eq!(view.dropped["mongo"], 1);
        assert_eq!(view.current_step(), Some(1));
        let quiet = line(&mut recorder, &names, 4.75);
        assert!(!quiet.contains("\"1\""), "unchanged steps are not repeated: {quiet}");
        assert_eq!(apply(&mut view, "k6 noise"), None);
    }
}
