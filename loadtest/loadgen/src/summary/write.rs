//! The generator's summary JSON: the schema `loadtest/k6/orders.js` writes from `handleSummary`
//! (read by `summary`), so verdicts and reports do not care which generator ran, plus what
//! only this generator knows: exact dropped iterations and short windows per step (for telling a
//! shared stall from a limit), failures by kind, and a `load_generator` object with its own
//! schedule lag and CPU time per step.

use crate::mixes::Mix;
use crate::record::{Figures, Recorder};
use crate::request::EndpointPlan;
use crate::summary::OfferedStep;
use crate::summary::Retired;
use orders_core::Timestamp;
use orders_dataset::manifest::Manifest;
use serde_json::{Map, Value, json};

/// A target as the summary names it, with its connections' figures.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetFacts {
    pub name: String,
    /// `http://127.0.0.1:8080`, as given.
    pub url: String,
    pub connections: u64,
    /// Answers the kernel gave no arrival time for (timed when read instead).
    pub untimed_answers: u64,
}

/// What the summary says about the run besides the recorded figures.
pub struct RunFacts<'a> {
    pub executor: &'a str,
    pub executor_settings: Value,
    pub steps: &'a [OfferedStep],
    /// Seconds of the schedule that were sent (less than planned when stopped early).
    pub run_seconds: f64,
    pub stopped_early: bool,
    pub mix: &'a Mix,
    pub p95_ms: f64,
    pub max_failed_rate: f64,
    pub manifest: &'a Manifest,
    /// Offered iterations of each step (equal for every target).
    pub offered: Vec<u64>,
    /// The generator's CPU seconds over the whole run.
    pub cpu_seconds: Option<f64>,
    /// The scheduling policy it ran with (`SCHED_FIFO 1`, or ordinary and why).
    pub scheduling: &'a str,
    /// Per target: where the runner retired it, if it did.
    pub retired: &'a [Option<Retired>],
}

fn round(x: f64, digits: i32) -> f64 {
    let scale = 10f64.powi(digits);
    (x * scale).round() / scale
}

fn latency(figures: &Figures) -> Value {
    let ms = |v: Option<f64>| v.map(|v| round(v, 3));
    json!({
        "p50": ms(figures.quantile_ms(0.5)),
        "p90": ms(figures.quantile_ms(0.9)),
        "p95": ms(figures.quantile_ms(0.95)),
        "p99": ms(figures.quantile_ms(0.99)),
        "max": ms(figures.max_ms()),
    })
}

/// `count`, `achieved_rate` (over `seconds`), `failures`, `latency_ms`: k6's `requestFigures`.
fn request_figures(figures: &Figures, seconds: f64) -> Map<String, Value> {
    let mut map = Map::new();
    map.insert("count".into(), json!(figures.count));
    map.insert("achieved_rate".into(), json!(round(figures.count as f64 / seconds.max(1e-9), 2)));
    map.insert("failures".into(), json!(figures.failures));
    map.insert("latency_ms".into(), latency(figures));
    map
}

fn target_summary(
    facts: &RunFacts<'_>,
    recorder: &Recorder,
    index: usize,
    target: &TargetFacts,
    endpoints: &[EndpointPlan],
) -> Value {
    let planned = facts.steps.last().map_or(0.0, |s| s.to_s);
    let total = recorder.target_total(index);
    let dropped = recorder.target_dropped(index);
    let offered: u64 = facts.offered.iter().sum();
    let thresholds = json!({
        "p95": total.quantile_ms(0.95).is_none_or(|p| p < facts.p95_ms),
        "failed_rate": total.count == 0 || (total.failures as f64 / total.count as f64) < facts.max_failed_rate,
        "dropped_iterations": dropped == 0,
    });
    let passed = thresholds.as_object().is_some_and(|t| t.values().all(|ok| ok == &Value::Bool(true)));
    let endpoint_figures: Map<String, Value> = endpoints
        .iter()
        .zip(&recorder.endpoints[index])
        .map(|(e, f)| (e.name.clone(), Value::Object(request_figures(f, planned))))
        .collect();
    let steps: Vec<Value> = facts
        .steps
        .iter()
        .enumerate()
        .map(|(k, s)| {
            let step = &recorder.steps[index][k];
            let mut map = Map::new();
            map.insert("step".into(), json!(k));
            map.insert("from_s".into(), json!(s.from_s));
            map.insert("to_s".into(), json!(s.to_s));
            map.insert("rate".into(), json!(s.rate));
            map.insert("offered_iterations".into(), json!(facts.offered[k]));
            map.extend(request_figures(&step.figures, s.to_s - s.from_s));
            map.insert("dropped_iterations".into(), json!(step.dropped));
            map.insert(
                "windows".into(),
                json!({
                    "ms": recorder.window.as_secs_f64() * 1000.0,
                    "count": step.windows.iter().map(|w| w.count).collect::<Vec<_>>(),
                    "slow": step.windows.iter().map(|w| w.slow).collect::<Vec<_>>(),
                    "failed": step.windows.iter().map(|w| w.failed).collect::<Vec<_>>(),
                    "dropped": step.windows.iter().map(|w| w.dropped).collect::<Vec<_>>(),
                }),
            );
            Value::Object(map)
        })
        .collect();
    let mut map = Map::new();
    map.insert("url".into(), json!(target.url));
    map.extend(request_figures(&total, planned));
    map.insert("iterations".into(), json!(total.count));
    map.insert("offered_iterations".into(), json!(offered));
    map.insert("dropped_iterations".into(), json!(dropped));
    map.insert("thresholds".into(), thresholds);
    map.insert("endpoints".into(), Value::Object(endpoint_figures));
    map.insert("steps".into(), Value::Array(steps));
    map.insert("errors".into(), json!(recorder.errors[index]));
    map.insert("connections".into(), json!(target.connections));
    map.insert("untimed_answers".into(), json!(target.untimed_answers));
    map.insert("passed".into(), json!(passed));
    if let Some(Some(retired)) = facts.retired.get(index) {
        map.insert("retired".into(), json!({"step": retired.step, "at_s": round(retired.at_s, 3)}));
    }
    Value::Object(map)
}

fn generator_summary(facts: &RunFacts<'_>, recorder: &Recorder) -> Value {
    let ms = |us: u64| round(us as f64 / 1000.0, 3);
    let steps: Vec<Value> = recorder
        .generator
        .iter()
        .enumerate()
        .filter(|(_, g)| !g.lag.is_empty())
        .map(|(k, g)| {
            json!({
                "step": k,
                "schedule_lag_p50_ms": ms(g.lag.value_at_quantile(0.5)),
                "schedule_lag_p99_ms": ms(g.lag.value_at_quantile(0.99)),
                "schedule_lag_max_ms": ms(g.lag.max()),
                "window_lag_max_ms": g.window_lag_us.iter().map(|us| ms(*us)).collect::<Vec<_>>(),
                "cpu_seconds": g.cpu_seconds,
            })
        })
        .collect();
    json!({
        "kind": "native",
        "window_ms": recorder.window.as_secs_f64() * 1000.0,
        "cpu_seconds": facts.cpu_seconds,
        "scheduling": facts.scheduling,
        "steps": steps,
    })
}

pub fn build(facts: &RunFacts<'_>, recorder: &Recorder, targets: &[TargetFacts], endpoints: &[EndpointPlan]) -> Value {
    let planned = facts.steps.last().map_or(0.0, |s| s.to_s);
    let offered_total: u64 = facts.offered.iter().sum();
    let mut target_map = Map::new();
    for (index, target) in targets.iter().enumerate() {
        target_map.insert(target.name.clone(), target_summary(facts, recorder, index, target, endpoints));
    }
    let passed = target_map.values().all(|t| t["passed"] == true);
    let m = facts.manifest;
    json!({
        "finished_at": Timestamp::now().to_string(),
        "run_seconds": facts.run_seconds,
        "planned_seconds": planned,
        "stopped_early": facts.stopped_early,
        "executor": facts.executor,
        "executor_settings": facts.executor_settings,
        "offered": {
            "steps": facts.steps,
            "mean_rate": if planned > 0.0 { offered_total as f64 / planned } else { 0.0 },
            "peak_rate": facts.steps.iter().map(|s| s.rate).max().unwrap_or(0),
        },
        "mix": facts.mix,
        "pass_marks": {"p95_ms": facts.p95_ms, "max_failed_rate": facts.max_failed_rate, "dropped_iterations": 0},
        "data_set": {
            "seed": m.seed,
            "orders": m.orders,
            "items_per_order": m.items_per_order,
            "note_bytes": m.note_bytes,
            "approx_doc_bytes": m.approx_doc_bytes,
        },
        "passed": passed,
        "targets": target_map,
        "load_generator": generator_summary(facts, recorder),
    })
}

/// The table k6's `textReport` prints, for the log.
pub fn text(summary: &Value) -> String {
    let cell = |v: &Value| match v {
        Value::Null => "-".to_owned(),
        other => other.to_string(),
    };
    let mut lines = vec![format!(
        "{}, mix {} {}, offered {} req/s per target, {} s planned",
        summary["executor"].as_str().unwrap_or("?"),
        summary["mix"]["name"].as_str().unwrap_or("?"),
        summary["mix"]["weights"],
        summary["offered"]["steps"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|s| cell(&s["rate"]))
            .collect::<Vec<_>>()
            .join("/"),
        summary["planned_seconds"]
    )];
    lines.push(format!(
        "{:<8}{:<10}{:>9}{:>10}{:>9}{:>9}{:>9}{:>9}{:>8}{:>9}",
        "target", "endpoint", "count", "req/s", "p50", "p95", "p99", "max", "failed", "dropped"
    ));
    for (name, t) in summary["targets"].as_object().into_iter().flatten() {
        let row = |label: &str, f: &Value, dropped: &Value| {
            format!(
                "{name:<8}{label:<10}{:>9}{:>10}{:>9}{:>9}{:>9}{:>9}{:>8}{:>9}",
                cell(&f["count"]),
                cell(&f["achieved_rate"]),
                cell(&f["latency_ms"]["p50"]),
                cell(&f["latency_ms"]["p95"]),
                cell(&f["latency_ms"]["p99"]),
                cell(&f["latency_ms"]["max"]),
                cell(&f["failures"]),
                cell(dropped)
            )
        };
        lines.push(row("all", t, &t["dropped_iterations"]));
        for (endpoint, f) in t["endpoints"].as_object().into_iter().flatten() {
            lines.push(row(endpoint, f, &Value::Null));
        }
        for s in
            t["steps"].as_array().into_iter().flatten().filter(|_| t["steps"].as_array().is_some_and(|a| a.len() > 1))
        {
            lines.push(row(&format!("@{}/s", cell(&s["rate"])), s, &s["dropped_iterations"]));
        }
        if t["errors"].as_object().is_some_and(|e| !e.is_empty()) {
            lines.push(format!("{name:<8}failures by kind: {}", t["errors"]));
        }
    }
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mixes::Definitions;
    use crate::record::Slot;
    use crate::request::RequestMaker;
    use crate::summary::Summary;
    use orders_dataset::Profile;
    use std::time::Duration;

    #[test]
    fn the_runner_reads_the_native_summary_as_it_reads_k6s() {
        let definitions = Definitions::embedded().expect("mixes");
        let mix = definitions.mix("shop").expect("shop");
        let profile = Profile { seed: 1, orders: 1000, customers: 100, products: 100, items: 3, note_bytes: 0 };
        let manifest = Manifest::new(&profile, 600);
        let maker = RequestMaker::new(&definitions, &mix, &manifest, 1).expect("maker");
        let targets =
            [TargetFacts { name: "pg".into(), url: "http://127.0.0.1:1".into(), connections: 2, untimed_answers: 0 }];
        let steps =
            [OfferedStep { from_s: 0.0, to_s: 2.0, rate: 10 }, OfferedStep { from_s: 2.0, to_s: 4.0, rate: 20 }];
        let mut recorder = Recorder::new(1, 3, &[20, 20], Duration::from_millis(100), Duration::from_millis(50));
        for i in 0..60 {
            let slot = Slot { target: 0, step: usize::from(i >= 20), window: i % 20, endpoint: i % 3 };
            recorder.request(slot, Duration::from_millis(if i == 59 { 70 } else { 2 }), None);
        }
        recorder.dropped(Slot { target: 0, step: 1, window: 4, endpoint: 0 });
        let facts = RunFacts {
            executor: "ramping-arrival-rate",
            executor_settings: json!({}),
            steps: &steps,
            run_seconds: 4.0,
            stopped_early: false,
            mix: &mix,
            p95_ms: 50.0,
            max_failed_rate: 0.01,
            manifest: &manifest,
            offered: vec![20, 40],
            cpu_seconds: Some(0.1),
            scheduling: "SCHED_FIFO 1",
            retired: &[Some(Retired { step: 1, at_s: 2.5 })],
        };
        let value = build(&facts, &recorder, &targets, &maker.endpoints);
        let summary = Summary::parse(&value.to_string()).expect("the runner's type");
        let pg = &summary.targets["pg"];
        assert_eq!((pg.figures.count, pg.dropped_iterations, pg.steps.len()), (60, 1, 2));
        assert_eq!(pg.steps[1].dropped_iterations, Some(1));
        assert_eq!(pg.steps[1].windows.as_ref().map(|w| (w.count.len(), w.dropped[4])), Some((20, 1)));
        assert_eq!(pg.steps[1].figures.count, 40);
        assert!(!pg.passed, "a dropped iteration fails the target");
        assert_eq!(pg.retired, Some(crate::summary::Retired { step: 1, at_s: 2.5 }));
        assert_eq!(summary.load_generator.as_ref().map(|g| g.kind.as_str()), Some("native"));
        assert_eq!(summary.mix.weights.values().sum::<u32>(), 100);
        assert!(text(&value).contains("@20/s"));
    }
}
