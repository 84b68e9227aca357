//! k6's REST API while a run is going: `GET /v1/metrics` gives the same per-target, per-step
//! sub-metrics the summary will hold (the script declares them in thresholds), so the runner can
//! show progress and stop the staircase early (`PATCH /v1/status` with `stopped: true`, after which
//! k6 still writes its summary) once every target has failed two steps in a row (`EarlyStop`):
//! higher steps would only overload the machine and say nothing new.

use crate::k6::summary::Windows;
use crate::round::stall;
use anyhow::{Context, Result, bail};
use orders_bench_model::verdict::PassMark;
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

/// What k6 has counted so far for one target in one step. Requests still running are not in it.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct LiveStep {
    pub count: u64,
    pub p95_ms: Option<f64>,
    pub failed_rate: f64,
}

/// All targets' live figures: steps by index, and k6's dropped iterations so far. The native
/// generator also sends each step's short windows and its own lag per window, for telling a
/// stall of the machine from a failure (`round::stall`); k6 leaves them empty.
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

/// `name{tag:value,tag:value}` → (name, tags).
fn split_id(id: &str) -> (&str, BTreeMap<&str, &str>) {
    let Some((name, rest)) = id.split_once('{') else { return (id, BTreeMap::new()) };
    let tags = rest.trim_end_matches('}').split(',').filter_map(|pair| pair.split_once(':')).collect();
    (name, tags)
}

/// Reads the answer of `GET /v1/metrics`.
pub fn parse_metrics(body: &Value) -> LiveView {
    let mut view = LiveView::default();
    for metric in body["data"].as_array().into_iter().flatten() {
        let Some(id) = metric["id"].as_str() else { continue };
        let sample = &metric["attributes"]["sample"];
        let (name, tags) = split_id(id);
        if name == "dropped_iterations" {
            if let Some(scenario) = tags.get("scenario") {
                view.dropped.insert((*scenario).to_owned(), sample["count"].as_u64().unwrap_or(0));
            }
            continue;
        }
        let (Some(target), Some(step)) = (tags.get("target"), tags.get("step").and_then(|s| s.parse::<usize>().ok()))
        else {
            continue;
        };
        if tags.len() != 2 {
            continue;
        }
        let entry = view.steps.entry((*target).to_owned()).or_default().entry(step).or_default();
        match name {
            "http_reqs" => entry.count = sample["count"].as_u64().unwrap_or(0),
            "http_req_duration" => entry.p95_ms = sample["p(95)"].as_f64(),
            "http_req_failed" => entry.failed_rate = sample["rate"].as_f64().unwrap_or(0.0),
            _ => {}
        }
    }
    view
}

/// Whether step `i` of `target` failed by its own figures so far (p95 or failed share at or above
/// the mark) and no stall of the whole machine explains it (`round::stall`).
fn step_failed(view: &LiveView, target: &str, i: usize, mark: &PassMark) -> bool {
    view.steps.get(target).and_then(|s| s.get(&i)).is_some_and(|s| {
        s.count > 0
            && (s.p95_ms.is_some_and(|p| p >= mark.p95_ms) || s.failed_rate >= mark.max_failed_rate)
            && !stall::explains_live(view, target, i, mark)
    })
}

/// Failed steps in a row after which a target is retired while another is still measured: one
/// more than the early stop needs. A stall of the shared machine that straddles a step boundary
/// can fail two short steps in a row (a probe's 1.5 s steps fail from 75 ms slow on each side),
/// and a target already retired could not show with later passes that it was a stall, so the
/// rule that takes a target off the staircase wants a third; a target past its limit fails every
/// step, so this costs one step of its load.
const RETIRE_AFTER: usize = 3;

/// Decides when the staircase has said all it can: every target has failed two steps in a row
/// (one failed step followed by a pass was a moment, not a limit), and the last of those second
/// failures has run in full. Also which targets to retire before that (`to_retire`).
#[derive(Debug, Default)]
pub struct EarlyStop {
    /// Per target, the second of its first two failed steps in a row (with dropped iterations: the
    /// step after the one they failed).
    pub first_failed: BTreeMap<String, usize>,
}

impl EarlyStop {
    /// Looks at the latest view; true means stop now.
    pub fn observe(&mut self, view: &LiveView, targets: &[String], mark: &PassMark) -> bool {
        let Some(current) = view.current_step() else { return false };
        for target in targets {
            if self.first_failed.contains_key(target) {
                continue;
            }
            // Only steps that are over are judged (the next one has begun).
            let failed = |i: usize| step_failed(view, target, i, mark);
            if let Some(second) = (1..current).find(|&i| failed(i - 1) && failed(i)) {
                self.first_failed.insert(target.clone(), second);
            } else if view.dropped.get(target).copied().unwrap_or(0) > mark.max_dropped {
                // Dropped iterations (a running count) failed the step before this one; the run
                // goes on until this one is over too.
                self.first_failed.insert(target.clone(), current);
            }
        }
        let all_failed = targets.iter().all(|t| self.first_failed.contains_key(t));
        all_failed && self.first_failed.values().max().is_some_and(|last| current > *last)
    }

    /// The targets of `targets`, not in `retired` yet, whose last `RETIRE_AFTER` steps that are
    /// over all failed by their own figures (not by the running count of dropped iterations, which
    /// cannot say which step dropped them): their limit is known, so the native generator can stop
    /// loading them while the others are still measured (`round::drive`).
    pub fn to_retire(
        &self,
        view: &LiveView,
        targets: &[String],
        mark: &PassMark,
        retired: &BTreeSet<String>,
    ) -> Vec<String> {
        let Some(current) = view.current_step() else { return Vec::new() };
        targets
            .iter()
            .filter(|t| !retired.contains(*t))
            .filter(|t| {
                (RETIRE_AFTER..=current).any(|end| (end - RETIRE_AFTER..end).all(|i| step_failed(view, t, i, mark)))
            })
            .cloned()
            .collect()
    }
}

/// A client of one k6 process's REST API.
pub struct Api {
    http: reqwest::Client,
    base: String,
}

impl Api {
    pub fn new(port: u16) -> Result<Self> {
        let http = reqwest::Client::builder().timeout(Duration::from_secs(2)).build().context("HTTP client")?;
        Ok(Self { http, base: format!("http://127.0.0.1:{port}/v1") })
    }

    pub async fn view(&self) -> Result<LiveView> {
        let response = self.http.get(format!("{}/metrics", self.base)).send().await?;
        if !response.status().is_success() {
            bail!("k6 API: {}", response.status());
        }
        Ok(parse_metrics(&response.json().await?))
    }

    pub async fn stop(&self) -> Result<()> {
        self.set_status(json!({"stopped": true}), "stop").await
    }

    /// Starts a run that was launched with `--paused`.
    pub async fn resume(&self) -> Result<()> {
        self.set_status(json!({"paused": false}), "resume").await
    }

    async fn set_status(&self, attributes: Value, what: &str) -> Result<()> {
        let body = json!({"data": {"type": "status", "id": "default", "attributes": attributes}});
        let response = self.http.patch(format!("{}/status", self.base)).json(&body).send().await?;
        if !response.status().is_success() {
            bail!("k6 API refused to {what} the run: {}", response.status());
        }
        Ok(())
    }

    /// True once a run launched with `--paused` has initialised its VUs and waits to be resumed
    /// (k6's execution status 4, "paused before run").
    pub async fn paused_and_ready(&self) -> Result<bool> {
        let response = self.http.get(format!("{}/status", self.base)).send().await?;
        if !response.status().is_success() {
            bail!("k6 API: {}", response.status());
        }
        let body: Value = response.json().await?;
        Ok(body["data"]["attributes"]["status"].as_u64() == Some(4))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn metric(id: &str, sample: Value) -> Value {
        json!({"type": "metrics", "id": id, "attributes": {"type": "counter", "sample": sample}})
    }

    fn view(pg: &[(u64, f64)], mongo: &[(u64, f64)], dropped_pg: u64) -> LiveView {
        let mut data = vec![metric("dropped_iterations{scenario:pg}", json!({"count": dropped_pg}))];
        for (target, steps) in [("pg", pg), ("mongo", mongo)] {
            for (i, (count, p95)) in steps.iter().enumerate() {
                data.push(metric(&format!("http_reqs{{target:{target},step:{i}}}"), json!({"count": count})));
                data.push(metric(&format!("http_req_duration{{target:{target},step:{i}}}"), json!({"p(95)": p95})));
                data.push(metric(&format!("http_req_failed{{target:{target},step:{i}}}"), json!({"rate": 0})));
            }
        }
        data.push(metric("http_reqs{target:pg,endpoint:read}", json!({"count": 99999})));
        parse_metrics(&json!({"data": data}))
    }

    #[test]
    fn per_step_sub_metrics_are_read_and_others_ignored() {
        let v = view(&[(100, 3.0), (50, 80.0)], &[(100, 4.0)], 7);
        assert_eq!(v.steps["pg"][&1], LiveStep { count: 50, p95_ms: Some(80.0), failed_rate: 0.0 });
        assert_eq!(v.current_step(), Some(1));
        assert_eq!(v.dropped["pg"], 7);
    }

    #[test]
    fn the_run_stops_once_every_target_failed_two_steps_in_a_row() {
        let targets = vec!["pg".to_owned(), "mongo".to_owned()];
        let mark = PassMark::default();
        let mut stop = EarlyStop::default();
        let ok = (100, 5.0);
        let slow = (100, 90.0);
        assert!(!stop.observe(&view(&[ok, slow], &[ok, ok], 0), &targets, &mark), "step 1 still running");
        assert!(!stop.observe(&view(&[ok, slow, slow], &[ok, ok, ok], 0), &targets, &mark), "step 2 still running");
        assert!(!stop.observe(&view(&[ok, slow, slow, slow], &[ok, ok, slow, ok], 0), &targets, &mark));
        assert_eq!(stop.first_failed.get("pg"), Some(&2));
        assert_eq!(stop.first_failed.get("mongo"), None, "mongo failed step 2 and passed step 3: a moment");
        assert!(!stop.observe(&view(&[ok, slow, slow, slow, slow], &[ok, ok, slow, ok, slow], 0), &targets, &mark));
        let running = view(&[ok, slow, slow, slow, slow, slow], &[ok, ok, slow, ok, slow, slow], 0);
        assert!(!stop.observe(&running, &targets, &mark), "mongo's step 5 still running");
        let done = view(&[ok, slow, slow, slow, slow, slow, slow], &[ok, ok, slow, ok, slow, slow, ok], 0);
        assert!(stop.observe(&done, &targets, &mark), "mongo's second failure in a row (step 5) is over");
        assert_eq!(stop.first_failed.get("mongo"), Some(&5));
    }

    #[test]
    fn a_target_is_retired_after_three_failed_steps_in_a_row_that_are_over_and_only_once() {
        let targets = vec!["pg".to_owned(), "mongo".to_owned()];
        let mark = PassMark::default();
        let stop = EarlyStop::default();
        let (ok, slow) = ((100, 5.0), (100, 90.0));
        let mut retired = BTreeSet::new();
        let running = view(&[ok, slow, slow, slow], &[ok, ok, ok, ok], 0);
        assert!(stop.to_retire(&running, &targets, &mark, &retired).is_empty(), "pg's third failure still runs");
        let two = view(&[ok, slow, slow, ok, (3, 5.0)], &[ok, ok, ok, ok, (3, 5.0)], 0);
        assert!(stop.to_retire(&two, &targets, &mark, &retired).is_empty(), "two failures and a pass: a moment");
        let over = view(&[ok, slow, slow, slow, (3, 90.0)], &[ok, ok, ok, ok, (3, 5.0)], 0);
        assert_eq!(stop.to_retire(&over, &targets, &mark, &retired), ["pg"]);
        retired.insert("pg".to_owned());
        assert!(stop.to_retire(&over, &targets, &mark, &retired).is_empty(), "told once");
        // Dropped iterations alone (a running count) retire nobody.
        let dropping = view(&[ok, ok, ok, ok], &[ok, ok, ok, ok], 40);
        assert!(stop.to_retire(&dropping, &targets, &mark, &BTreeSet::new()).is_empty());
    }

    #[test]
    fn dropped_iterations_count_as_a_failure_of_the_step_before_the_current_one() {
        let targets = vec!["pg".to_owned()];
        let mut stop = EarlyStop::default();
        let ok = (100, 5.0);
        assert!(!stop.observe(&view(&[ok, ok, ok], &[], 3), &targets, &PassMark::default()));
        assert_eq!(stop.first_failed.get("pg"), Some(&2));
        assert!(stop.observe(&view(&[ok, ok, ok, ok], &[], 3), &targets, &PassMark::default()), "one more step ran");
    }
}
