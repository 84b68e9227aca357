//! Live figures while the generator runs, for the runner's progress lines and early stop: every
//! half second one JSON line on stdout with, per target, its dropped iterations and the figures of
//! every step that changed (with their windows of requests and slow ones, and the generator's worst
//! lag per window), so the runner can tell a stall of the machine from a failure while it runs:
//! `{"t":12.5,"lag_ms":{"2":[..]},"targets":{"pg":{"dropped":0,"steps":{"2":{"count":2391,..}}}}}`.
//! `apply` folds such a line into the model's `LiveView`, which the runner fills from k6 too.

use super::record::Recorder;
use crate::summary::Windows;
pub use orders_bench_model::live::{LiveStep, LiveView};
use serde_json::{Map, Value, json};

/// The progress line for the changes since the last one (and forgets them).
pub fn line(recorder: &mut Recorder, names: &[String], seconds: f64) -> String {
    let mut targets = Map::new();
    let mut lag_ms = Map::new();
    for (index, name) in names.iter().enumerate() {
        let changed = std::mem::take(&mut recorder.changed[index]);
        let mut steps = Map::new();
        for step in changed {
            let target_step = &recorder.steps[index][step];
            let figures = &target_step.figures;
            let failed_rate = if figures.count == 0 { 0.0 } else { figures.failures as f64 / figures.count as f64 };
            let windows = json!({
                "count": target_step.windows.iter().map(|w| w.count).collect::<Vec<_>>(),
                "slow": target_step.windows.iter().map(|w| w.slow).collect::<Vec<_>>(),
            });
            steps.insert(
                step.to_string(),
                json!({"count": figures.count, "p95_ms": figures.quantile_ms(0.95), "failed_rate": failed_rate, "windows": windows}),
            );
            if let Some(generator) = recorder.generator.get(step) {
                let lag: Vec<f64> = generator.window_lag_us.iter().map(|us| *us as f64 / 1000.0).collect();
                lag_ms.insert(step.to_string(), json!(lag));
            }
        }
        targets.insert(name.clone(), json!({"dropped": recorder.target_dropped(index), "steps": steps}));
    }
    json!({"t": (seconds * 1000.0).round() / 1000.0, "lag_ms": lag_ms, "targets": targets}).to_string()
}

fn numbers(value: &Value) -> Vec<u64> {
    value.as_array().into_iter().flatten().map(|v| v.as_u64().unwrap_or(0)).collect()
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
            let count = numbers(&s["windows"]["count"]);
            let windows = Windows {
                ms: 0.0,
                failed: vec![0; count.len()],
                dropped: vec![0; count.len()],
                slow: numbers(&s["windows"]["slow"]),
                count,
            };
            view.windows.entry(target.clone()).or_default().insert(step, windows);
        }
    }
    for (step, lag) in value["lag_ms"].as_object().into_iter().flatten() {
        if let Ok(step) = step.parse::<usize>() {
            view.lag_ms.insert(step, lag.as_array().into_iter().flatten().filter_map(Value::as_f64).collect());
        }
    }
    Some(t)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Slot;
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
        assert_eq!((view.windows["pg"][&1].count[0], view.windows["pg"][&1].slow[0]), (3, 1));
        assert_eq!(view.lag_ms[&1].len(), 10);
        let quiet = line(&mut recorder, &names, 4.75);
        assert!(!quiet.contains("\"1\""), "unchanged steps are not repeated: {quiet}");
        assert_eq!(apply(&mut view, "k6 noise"), None);
    }
}
