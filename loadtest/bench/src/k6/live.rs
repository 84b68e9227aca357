//! k6's REST API while a run is going: `GET /v1/metrics` gives the same per-target, per-step
//! sub-metrics the summary will hold (the script declares them in thresholds), read into the
//! generators' one `LiveView` (`orders_loadgen::live`), so the runner shows progress and stops the
//! staircase early the same way for both generators (`PATCH /v1/status` with `stopped: true`,
//! after which k6 still writes its summary).

use anyhow::{Context, Result, bail};
use orders_loadgen::live::LiveView;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::time::Duration;

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
pub mod tests {
    use super::*;
    use orders_loadgen::live::LiveStep;

    fn metric(id: &str, sample: Value) -> Value {
        json!({"type": "metrics", "id": id, "attributes": {"type": "counter", "sample": sample}})
    }

    /// k6's metrics for `pg` and `mongo` (count and p95 per step), read as the live view.
    pub fn view(pg: &[(u64, f64)], mongo: &[(u64, f64)], dropped_pg: u64) -> LiveView {
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
}
