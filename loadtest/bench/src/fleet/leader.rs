//! The leader's side inside `round`: for one repeat, `Started::begin` asks every agent to run its
//! segment from a common start time a few seconds ahead; the round's own k6 runs segment 0 (its
//! flags from `k6_args`), is released at the same moment (`release`), stops the agents when it
//! stops early, and `collect` waits for their reports. `Collected::combine` then writes every
//! machine's summary under `fleet/` and the merged summary where the repeat reads its own, and
//! gives the dropped iterations per step of all machines together and the `FleetReport`.

use super::segment_run::{self, now_ms};
use super::{FleetReport, LoadCpu, RunReport, RunRequest, RunState, SCRIPT_VARIABLES, Segment, StepLoadCpu};
use crate::k6::{self, merge};
use anyhow::{Context, Result, bail};
use orders_bench_model::cpu::{CpuReport, Role};
use orders_bench_model::verdict::drops_by_target;
use orders_loadgen::summary::Summary;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

/// The agents a round shares its load with (`round --followers`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fleet {
    /// Base URLs of the agents, e.g. `http://10.110.0.7:9400`.
    pub followers: Vec<String>,
}

/// Time the machines get to initialise k6 before they start together.
const LEAD: Duration = Duration::from_secs(5);

/// A repeat's run on every machine, started.
pub struct Started {
    http: reqwest::Client,
    followers: Vec<String>,
    id: String,
    pub segment: Segment,
    pub start_at_ms: u64,
}

/// The leader's own part and what the agents reported.
pub struct Collected {
    pub segment: Segment,
    pub late_ms: f64,
    pub followers: Vec<RunReport>,
}

async fn post(http: &reqwest::Client, url: String, body: Option<&RunRequest>) -> Result<reqwest::Response> {
    let request = http.post(&url);
    let request = if let Some(body) = body { request.json(body) } else { request };
    request.send().await.with_context(|| format!("POST {url}"))
}

impl Started {
    /// Sends every agent its segment of the run the round is about to start with `env`.
    pub async fn begin(fleet: &Fleet, env: &[(String, String)], manifest: &Path, label: &str) -> Result<Self> {
        let http = reqwest::Client::builder().timeout(Duration::from_secs(10)).build().context("HTTP client")?;
        let text = std::fs::read_to_string(manifest).with_context(|| format!("reading {}", manifest.display()))?;
        let manifest: Value =
            serde_json::from_str(&text).with_context(|| format!("{} is not JSON", manifest.display()))?;
        let env: Vec<(String, String)> =
            env.iter().filter(|(name, _)| SCRIPT_VARIABLES.contains(&name.as_str())).cloned().collect();
        let count = fleet.followers.len() + 1;
        let tag: String = label.chars().filter(|c| c.is_ascii_alphanumeric()).collect();
        let id = format!("{tag}-{}", now_ms());
        let start_at_ms = now_ms() + u64::try_from(LEAD.as_millis()).unwrap_or(5000);
        let started = Self {
            http,
            followers: fleet.followers.iter().map(|f| f.trim_end_matches('/').to_owned()).collect(),
            id,
            segment: Segment { index: 0, count },
            start_at_ms,
        };
        for (i, follower) in started.followers.iter().enumerate() {
            let request = RunRequest {
                id: started.id.clone(),
                segment: Segment { index: i + 1, count },
                env: env.clone(),
                manifest: manifest.clone(),
                start_at_ms,
            };
            let response = post(&started.http, format!("{follower}/runs"), Some(&request)).await;
            let refused = match response {
                Ok(r) if r.status().is_success() => continue,
                Ok(r) => format!("{}: {}", r.status(), r.text().await.unwrap_or_default()),
                Err(error) => format!("{error:#}"),
            };
            started.stop().await;
            bail!("the agent at {follower} did not start its segment: {refused}");
        }
        eprintln!(
            "{label} k6 in {count} segments (this machine {}, agents {}), all starting at the same moment",
            started.segment.range(),
            started.followers.join(", ")
        );
        Ok(started)
    }

    /// Flags of the round's own k6: its segment, started paused.
    pub fn k6_args(&self) -> Vec<String> {
        let mut args = self.segment.k6_args();
        args.push("--paused".into());
        args
    }

    /// Resumes the round's own (paused) k6 at the common start time; returns how late, in ms.
    pub async fn release(&self, running: &mut k6::Running, log: &Path) -> Result<f64> {
        let late = segment_run::release(running, self.start_at_ms, log).await;
        if late.is_err() {
            self.stop().await;
        }
        late
    }

    /// Asks every agent to stop its run (the round stopped early, or failed).
    pub async fn stop(&self) {
        for follower in &self.followers {
            if let Err(error) = post(&self.http, format!("{follower}/runs/{}/stop", self.id), None).await {
                eprintln!("note: could not stop the run at {follower}: {error:#}");
            }
        }
    }

    /// Waits (at most `limit`) for every agent's report.
    pub async fn collect(self, late_ms: f64, limit: Duration) -> Result<Collected> {
        let begun = Instant::now();
        let mut reports = Vec::new();
        for follower in &self.followers {
            let url = format!("{follower}/runs/{}", self.id);
            let report = loop {
                let state: Option<RunState> = match self.http.get(&url).send().await {
                    Ok(response) if response.status().is_success() => response.json().await.ok(),
                    _ => None,
                };
                match state {
                    Some(RunState::Finished { report }) => break *report,
                    Some(RunState::Failed { error }) => bail!("the agent at {follower} failed: {error}"),
                    Some(RunState::Running) | None if begun.elapsed() < limit => {
                        tokio::time::sleep(Duration::from_millis(500)).await;
                    }
                    _ => bail!("no report from the agent at {follower} within {} s after the run", limit.as_secs()),
                }
            };
            reports.push(report);
        }
        Ok(Collected { segment: self.segment, late_ms, followers: reports })
    }
}

/// Every machine's part of one repeat, merged.
pub struct Combined {
    /// The leader's report first (its CPU is filled in by `report`).
    machines: Vec<RunReport>,
}

impl Collected {
    /// Keeps every machine's summary under `dir/fleet/`, writes the merged one to `summary_path`
    /// (where the leader's k6 wrote its own) and works out the leader's drops per step from its
    /// running counts (`drop_samples`, seconds since its k6 was resumed).
    pub fn combine(
        self,
        dir: &Path,
        summary_path: &Path,
        drop_samples: &[(f64, BTreeMap<String, u64>)],
        scenario_start: Option<f64>,
    ) -> Result<Combined> {
        let text =
            std::fs::read_to_string(summary_path).with_context(|| format!("reading {}", summary_path.display()))?;
        let own: Value = serde_json::from_str(&text).context("the round's k6 summary")?;
        let typed = Summary::parse(&text)?;
        let drops = drops_by_target(drop_samples, scenario_start.unwrap_or(0.0), &typed);
        let leader = RunReport {
            host: super::host_name(),
            segment: self.segment,
            late_ms: self.late_ms,
            exit_code: None,
            summary: own,
            drops,
            cpu: LoadCpu::default(),
            stopped_early: false,
            log_tail: String::new(),
        };
        let machines: Vec<RunReport> = std::iter::once(leader).chain(self.followers).collect();
        let folder = dir.join("fleet");
        std::fs::create_dir_all(&folder).with_context(|| format!("creating {}", folder.display()))?;
        for machine in &machines {
            let name: String =
                machine.host.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' }).collect();
            let path = folder.join(format!("segment-{}-{name}-k6-summary.json", machine.segment.index + 1));
            let text = serde_json::to_string_pretty(&machine.summary).context("JSON")?;
            std::fs::write(&path, text + "\n").with_context(|| format!("writing {}", path.display()))?;
        }
        let parts: Vec<Value> = machines.iter().map(|m| m.summary.clone()).collect();
        let merged = merge::merge(&parts).context("merging the load machines' summaries")?;
        let text = serde_json::to_string_pretty(&merged).context("JSON")?;
        std::fs::write(summary_path, text + "\n").with_context(|| format!("writing {}", summary_path.display()))?;
        Ok(Combined { machines })
    }
}

impl Combined {
    /// Dropped iterations of `target` per step, all machines together.
    pub fn drops(&self, target: &str) -> Vec<u64> {
        let mut total: Vec<u64> = Vec::new();
        for machine in &self.machines {
            for (i, dropped) in machine.drops.get(target).into_iter().flatten().enumerate() {
                if total.len() <= i {
                    total.resize(i + 1, 0);
                }
                total[i] += dropped;
            }
        }
        total
    }

    /// The fleet part of the repeat's result; the leader's CPU comes from the round's own report.
    pub fn report(mut self, cpu: &CpuReport) -> FleetReport {
        if let Some(leader) = self.machines.first_mut() {
            let k6 = cpu.components.iter().find(|c| c.role == Role::LoadGenerator);
            leader.cpu = LoadCpu {
                cores: cpu.cores,
                wall_seconds: cpu.seconds,
                k6_seconds: k6.and_then(|c| c.cpu_seconds),
                machine_busy_seconds: cpu.machine_busy_seconds,
                steps: cpu
                    .steps
                    .iter()
                    .map(|s| StepLoadCpu {
                        step: s.step,
                        k6_cores: k6.and_then(|c| s.cores.get(&c.name)).copied(),
                        machine_busy_cores: s.machine_busy_cores,
                    })
                    .collect(),
            };
        }
        FleetReport { machines: self.machines.iter().map(super::machine_run).collect() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fleet::LoadCpu;
    use serde_json::json;

    fn machine(drops: &[u64]) -> RunReport {
        RunReport {
            host: "load".into(),
            segment: Segment { index: 0, count: 2 },
            late_ms: 0.0,
            exit_code: Some(0),
            summary: json!({}),
            drops: BTreeMap::from([("pg".to_owned(), drops.to_vec())]),
            cpu: LoadCpu::default(),
            stopped_early: false,
            log_tail: String::new(),
        }
    }

    #[test]
    fn the_drops_of_all_machines_add_up_per_step() {
        let combined = Combined { machines: vec![machine(&[0, 2, 5]), machine(&[1, 0, 3])] };
        assert_eq!(combined.drops("pg"), [1, 2, 8]);
        assert!(combined.drops("mongo").is_empty());
    }
}
