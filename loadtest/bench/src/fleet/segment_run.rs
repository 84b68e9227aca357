//! One k6 run of an execution segment on this machine, for an agent: the script's settings and
//! manifest from the leader, k6 started paused, resumed at the common start time, then every half
//! second k6's running count of dropped iterations, k6's CPU and the machine's busy time, and at the
//! end the summary, the drops per step and the CPU per step (`RunReport`).

use super::{LoadCpu, RunReport, RunRequest, StepLoadCpu};
use crate::{k6, procstat};
use anyhow::{Context, Result, bail};
use orders_bench_model::verdict::drops_by_target;
use orders_loadgen::summary::Summary;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio::sync::watch;

/// Where k6 and the script are on this machine, and where runs keep their files.
#[derive(Debug, Clone)]
pub struct Settings {
    pub k6: PathBuf,
    pub script: PathBuf,
    pub work_dir: PathBuf,
}

/// How long k6 may take to initialise its VUs before the run is given up.
const INIT_LIMIT: Duration = Duration::from_secs(120);

pub fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// The last `bytes` of a file, for error messages.
pub fn tail(path: &Path, bytes: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let start = text.len().saturating_sub(bytes);
    let start = (start..text.len()).find(|i| text.is_char_boundary(*i)).unwrap_or(text.len());
    text[start..].to_owned()
}

/// Waits until the paused k6 has initialised, then until `start_at_ms`, and resumes it; returns how
/// late that was (ms). Fails when k6 exits or takes too long.
pub async fn release(running: &mut k6::Running, start_at_ms: u64, log: &Path) -> Result<f64> {
    let begun = Instant::now();
    loop {
        if let Some(status) = running.child.try_wait().context("k6")? {
            bail!("k6 exited ({status}) before its run began:\n{}", tail(log, 2000));
        }
        if running.api.paused_and_ready().await.unwrap_or(false) {
            break;
        }
        if begun.elapsed() > INIT_LIMIT {
            bail!("k6 did not initialise within {} s:\n{}", INIT_LIMIT.as_secs(), tail(log, 2000));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let now = now_ms();
    if start_at_ms > now {
        tokio::time::sleep(Duration::from_millis(start_at_ms - now)).await;
    }
    running.api.resume().await?;
    Ok(now_ms().saturating_sub(start_at_ms) as f64)
}

/// A cumulative series sampled over time, read at any moment by linear interpolation.
#[derive(Debug, Default)]
struct Series(Vec<(f64, f64)>);

impl Series {
    fn push(&mut self, at: f64, value: Option<f64>) {
        if let Some(value) = value {
            self.0.push((at, value));
        }
    }

    fn at(&self, t: f64) -> Option<f64> {
        let (first, last) = (self.0.first()?, self.0.last()?);
        if t <= first.0 {
            return Some(first.1);
        }
        if t >= last.0 {
            return Some(last.1);
        }
        let i = self.0.iter().position(|p| p.0 >= t)?;
        let (a, b) = (self.0[i - 1], self.0[i]);
        Some(a.1 + (b.1 - a.1) * (t - a.0) / (b.0 - a.0).max(1e-9))
    }

    /// Average rate of growth between `from` and `to` (cores, for CPU seconds).
    fn rate(&self, from: f64, to: f64) -> Option<f64> {
        (to > from).then_some(())?;
        Some((self.at(to)? - self.at(from)?) / (to - from))
    }

    fn span(&self) -> Option<f64> {
        Some(self.0.last()?.1 - self.0.first()?.1)
    }
}

pub async fn run(settings: &Settings, request: RunRequest, mut stop: watch::Receiver<bool>) -> Result<RunReport> {
    let folder: String =
        request.id.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' }).collect();
    let dir = settings.work_dir.join(folder);
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let manifest = dir.join("dataset.json");
    std::fs::write(&manifest, serde_json::to_string_pretty(&request.manifest).context("manifest")?)
        .with_context(|| format!("writing {}", manifest.display()))?;
    let (summary_path, log) = (dir.join("k6-summary.json"), dir.join("k6.log"));
    let mut env = request.env.clone();
    env.push(("MANIFEST".into(), manifest.display().to_string()));
    env.push(("SUMMARY".into(), summary_path.display().to_string()));
    let mut args = request.segment.k6_args();
    args.push("--paused".into());

    let reaped_before = procstat::own_reaped_children_seconds();
    let mut running = k6::spawn(k6::Launch { binary: &settings.k6, script: &settings.script, env, log: &log, args })?;
    let late_ms = release(&mut running, request.start_at_ms, &log).await?;
    let origin = Instant::now();
    let pid = running.child.id();
    let (mut k6_cpu, mut machine) = (Series::default(), Series::default());
    let mut drop_samples: Vec<(f64, BTreeMap<String, u64>)> = Vec::new();
    let mut stopped_early = false;
    let mut ticker = tokio::time::interval(Duration::from_millis(500));
    let status = loop {
        tokio::select! {
            status = running.child.wait() => break status.context("waiting for k6")?,
            changed = stop.changed(), if !stopped_early => {
                if changed.is_ok() && *stop.borrow() {
                    stopped_early = true;
                    if let Err(error) = running.api.stop().await {
                        eprintln!("agent: could not stop k6 early ({error:#})");
                    }
                }
            }
            _ = ticker.tick() => {
                let at = origin.elapsed().as_secs_f64();
                k6_cpu.push(at, pid.and_then(procstat::tree_cpu_seconds));
                machine.push(at, procstat::machine_cpu().map(|m| m.busy_seconds));
                if let Ok(view) = running.api.view().await {
                    drop_samples.push((at, view.dropped));
                }
            }
        }
    };
    let wall_seconds = origin.elapsed().as_secs_f64();
    machine.push(wall_seconds, procstat::machine_cpu().map(|m| m.busy_seconds));
    let k6_seconds = procstat::own_reaped_children_seconds().zip(reaped_before).map(|(after, before)| after - before);

    let text = std::fs::read_to_string(&summary_path).with_context(|| {
        format!("k6 exited with {status} without a summary; the end of its output:\n{}", tail(&log, 2000))
    })?;
    let summary: serde_json::Value = serde_json::from_str(&text).context("k6 summary")?;
    let typed = Summary::parse(&text)?;
    // The run was resumed at `origin`: its scenarios begin then (the script has no setup()).
    let drops = drops_by_target(&drop_samples, 0.0, &typed);
    let steps = typed
        .offered
        .steps
        .iter()
        .enumerate()
        .map(|(step, s)| StepLoadCpu {
            step,
            k6_cores: k6_cpu.rate(s.from_s, s.to_s.min(wall_seconds)),
            machine_busy_cores: machine.rate(s.from_s, s.to_s.min(wall_seconds)),
        })
        .collect();
    Ok(RunReport {
        host: super::host_name(),
        segment: request.segment,
        late_ms,
        exit_code: status.code(),
        summary,
        drops,
        cpu: LoadCpu {
            cores: procstat::cores(),
            wall_seconds,
            k6_seconds: k6_seconds.or(k6_cpu.span()),
            machine_busy_seconds: machine.span(),
            steps,
        },
        stopped_early,
        log_tail: tail(&log, 2000),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cumulative_series_gives_the_rate_between_two_moments() {
        let mut cpu = Series::default();
        for (t, v) in [(0.0, 10.0), (1.0, 11.0), (2.0, 13.0), (3.0, 13.5)] {
            cpu.push(t, Some(v));
        }
        cpu.push(4.0, None);
        assert_eq!(cpu.rate(0.0, 2.0), Some(1.5));
        assert_eq!(cpu.rate(0.5, 1.5), Some(1.5), "interpolated at both ends");
        assert_eq!(cpu.rate(2.0, 10.0), Some(0.0625), "clamped to the last sample");
        assert_eq!(cpu.rate(2.0, 2.0), None);
        assert_eq!(cpu.span(), Some(3.5));
        assert_eq!(Series::default().rate(0.0, 1.0), None);
    }

    #[test]
    fn the_tail_of_a_log_starts_on_a_character_boundary() {
        let dir = std::env::temp_dir().join(format!("orders-bench-tail-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let file = dir.join("log");
        std::fs::write(&file, "aé€b").expect("write");
        assert_eq!(tail(&file, 2), "b", "never cuts a character in two");
        assert_eq!(tail(&file, 100), "aé€b");
        assert_eq!(tail(&dir.join("missing"), 10), "");
        std::fs::remove_dir_all(&dir).expect("cleanup");
    }
}
