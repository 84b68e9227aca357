//! The load run of one repeat: the generator's process (`launch`: the native one, or k6 with the
//! round's staircase in its environment), the live loop (every half second: CPU samples, the
//! generator's live figures for the progress lines, the dropped iterations per moment and the
//! early stop) and beside it the runner's own sampling of both databases, about once per step
//! (`diagnostics::probe`; the services' `/diagnostics` are left alone while they are measured).

use super::cpu::Sampler;
use super::early_stop::EarlyStop;
use super::launch;
use super::live_line::{self, LiveLine};
use super::{RoundSpec, Setup};
use crate::diagnostics::probe::Probe;
use crate::diagnostics::{self, Snapshot};
use crate::{fleet, procstat};
use anyhow::{Context, Result};
use orders_bench_model::cpu::{Component, ProbeCost, Role};
use orders_bench_model::verdict::PassMark;
use orders_loadgen::live::LiveView;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::ExitStatus;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What the run left for the verdicts and the report; times are seconds after `origin` (the
/// generator's start).
pub struct Driven {
    pub status: ExitStatus,
    pub origin: Instant,
    pub exited_at: f64,
    /// The load generator's own CPU seconds (exact: it is this process's reaped child).
    pub load_seconds: Option<f64>,
    /// When step 0 began, estimated from the first live figures.
    pub scenario_start: Option<f64>,
    pub stopped_early: bool,
    /// The generator's running count of dropped iterations per target, as read.
    pub drop_samples: Vec<(f64, BTreeMap<String, u64>)>,
    pub sampler: Sampler,
    pub polled: Vec<Snapshot>,
    /// With `--followers`: this machine's segment and the other machines' reports.
    pub fleet: Option<fleet::leader::Collected>,
    /// What the runner's own sampling of the databases cost.
    pub probe: ProbeCost,
}

/// The runner's samples of both databases, taken in the background until `stop` fires.
fn spawn_probe(
    mut probe: Probe,
    every: Duration,
    origin: Instant,
    polled: Arc<Mutex<Vec<Snapshot>>>,
) -> (tokio::sync::oneshot::Sender<()>, tokio::task::JoinHandle<ProbeCost>) {
    let (stop, mut stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        loop {
            tokio::select! {
                _ = &mut stopped => return probe.finish(),
                _ = tokio::time::sleep(every) => {}
            }
            let pair = probe.sample(origin.elapsed().as_secs_f64()).await;
            if let Ok(mut list) = polled.lock() {
                list.push(pair);
            }
        }
    });
    (stop, task)
}

/// Each target's figures of `step` so far: "pg 1834 req p95 3.2 ms failed 0.0%".
fn step_figures(view: &LiveView, targets: &[String], step: usize) -> Vec<String> {
    targets
        .iter()
        .map(|t| {
            let s = view.steps.get(t).and_then(|steps| steps.get(&step)).copied().unwrap_or_default();
            let p95 = s.p95_ms.map_or("-".into(), |p| format!("{p:.1} ms"));
            format!("{t} {} req p95 {p95} failed {:.1}%", s.count, s.failed_rate * 100.0)
        })
        .collect()
}

fn progress_line(view: &LiveView, targets: &[String], step: usize, rate: u32) -> String {
    format!("step {} @ {rate} req/s done: {}", step + 1, step_figures(view, targets, step).join(" | "))
}

/// Retires every target that has failed three steps in a row (the third of them over) while
/// another is still being measured: its limit is known, and more load on it would only spend the
/// shared machine under the other's steps (`loadgen::control`). k6 cannot retire a target and
/// overloads it to the end, as before.
async fn retire_the_failed(
    running: &mut launch::Running,
    early: &EarlyStop,
    view: &LiveView,
    targets: &[String],
    mark: &PassMark,
    retired: &mut BTreeSet<String>,
    label: &str,
) -> Vec<String> {
    let mut said = Vec::new();
    for target in early.to_retire(view, targets, mark, retired) {
        retired.insert(target.clone());
        match running.retire(&target).await {
            Ok(true) => said.push(format!(
                "{label} {target} has failed three steps in a row: no more load on it while the other target goes on"
            )),
            Ok(false) => {}
            Err(error) => said.push(format!("{label} could not retire {target} ({error:#}); it stays loaded")),
        }
    }
    said
}

pub async fn run(
    spec: &RoundSpec,
    setup: &Setup,
    client: &diagnostics::Client,
    summary_path: &Path,
    log_path: &Path,
    label: &str,
) -> Result<Driven> {
    let _ = std::fs::remove_file(summary_path);
    let mut env = vec![
        ("TARGETS".to_owned(), setup.targets.generator_arg()),
        ("MIX".into(), spec.mix.clone()),
        ("START_RATE".into(), spec.plan.start_rate.to_string()),
        ("STEP".into(), spec.plan.step.to_string()),
        ("MAX_RATE".into(), spec.plan.max_rate.to_string()),
        ("STEP_DURATION".into(), format!("{}s", spec.plan.step_seconds.as_secs_f64())),
        ("RATES".into(), spec.plan.rates().iter().map(u32::to_string).collect::<Vec<_>>().join(",")),
        ("MANIFEST".into(), setup.manifest.display().to_string()),
        ("SUMMARY".into(), summary_path.display().to_string()),
        ("P95_MS".into(), spec.mark.p95_ms.to_string()),
        ("MAX_FAILED_RATE".into(), spec.mark.max_failed_rate.to_string()),
        ("VU_BUDGET_MS".into(), spec.vu_budget_ms.to_string()),
    ];
    if spec.prefer_minimal {
        env.push(("PREFER".into(), "return=minimal".into()));
    }
    env.extend(setup.extra_env.iter().cloned());
    let mut components = Vec::new();
    for target in setup.targets.iter() {
        let info = target.backend.info();
        components.push(crate::components::locate(
            &info.database,
            Role::Database,
            &info.name,
            target.backend.database_url(),
        ));
        components.push(crate::components::locate(&info.service, Role::Service, &info.name, &target.url));
    }
    components.push(crate::components::runner());
    let probe = Probe::connect(&setup.targets, client.clone(), spec.poll_interval).await;

    // With other load machines, every k6 starts paused and all are resumed at the same moment.
    let fleet = match &setup.fleet {
        Some(fleet) => Some(fleet::leader::Started::begin(fleet, &env, &setup.manifest, label).await?),
        None => None,
    };
    let args = fleet.as_ref().map(fleet::leader::Started::k6_args).unwrap_or_default();
    let reaped_before = procstat::own_reaped_children_seconds();
    // The native generator's origin is its start; k6's (with followers) the common resume.
    let spawned = Instant::now();
    let extras = launch::K6Extras { env, args };
    let mut running = launch::spawn(spec.generator, spec, setup, extras, summary_path, log_path, spawned)?;
    let late_ms = match (&fleet, running.k6()) {
        (Some(fleet), Some(k6)) => fleet.release(k6, log_path).await?,
        _ => 0.0,
    };
    let origin = if fleet.is_some() { Instant::now() } else { spawned };
    let mut sampler = Sampler::new(components, origin);
    sampler.components.push(Component {
        name: spec.generator.process_name().into(),
        role: Role::LoadGenerator,
        target: None,
        pid: running.pid(),
        note: None,
    });
    sampler.sample();
    let polled = Arc::new(Mutex::new(Vec::new()));
    let (stop_polling, poller) = spawn_probe(probe, spec.poll_interval, origin, polled.clone());

    let rates = spec.plan.rates();
    let targets: Vec<String> = setup.targets.names();
    let mut early = EarlyStop::default();
    let mut retired = BTreeSet::new();
    // A released (paused) k6 starts its scenarios at `origin`; otherwise estimated from its counts.
    let released = fleet.as_ref().map(|_| 0.0);
    let (mut scenario_start, mut reported_step, mut stopped_early) = (released, 0usize, false);
    let mut last_view = LiveView::default();
    let mut drop_samples: Vec<(f64, BTreeMap<String, u64>)> = Vec::new();
    let mut ticker = tokio::time::interval(Duration::from_millis(500));
    let generator = spec.generator.process_name();
    eprintln!(
        "{label} {generator} running ({} steps of {} s; log {})",
        rates.len(),
        spec.plan.step_seconds.as_secs_f64(),
        log_path.display()
    );
    let live = LiveLine::stderr();
    let status = loop {
        tokio::select! {
            status = running.child().wait() => break status.with_context(|| format!("waiting for {generator}"))?,
            _ = ticker.tick() => {
                sampler.sample();
                let Ok(view) = running.view().await else { continue };
                let now = origin.elapsed().as_secs_f64();
                drop_samples.push((now, view.dropped.clone()));
                scenario_start = scenario_start.or(running.scenario_start());
                if scenario_start.is_none() {
                    let first = targets.iter().filter_map(|t| view.steps.get(t)?.get(&0)).map(|s| s.count).max();
                    if let Some(count) = first.filter(|c| *c > 0) {
                        scenario_start = Some(now - count as f64 / f64::from(spec.plan.start_rate));
                    }
                }
                if let Some(current) = view.current_step() {
                    while reported_step < current {
                        live.say(&format!("{label} {}", progress_line(&view, &targets, reported_step, rates.get(reported_step).copied().unwrap_or(0))));
                        reported_step += 1;
                    }
                }
                if live.drawn() {
                    let step_seconds = spec.plan.step_seconds.as_secs_f64();
                    let into = scenario_start.map_or(0.0, |start| now - start - reported_step as f64 * step_seconds);
                    let rate = rates.get(reported_step).copied().unwrap_or(0);
                    let figures = step_figures(&view, &targets, reported_step);
                    let text = live_line::text(reported_step, rates.len(), rate, into, step_seconds, &figures, spec.progress.as_deref());
                    live.show(format!("{label} {text}"));
                }
                let all_failed = spec.early_stop && !stopped_early && early.observe(&view, &targets, &spec.mark);
                if spec.early_stop && !stopped_early && !all_failed {
                    for line in retire_the_failed(&mut running, &early, &view, &targets, &spec.mark, &mut retired, label).await {
                        live.say(&line);
                    }
                }
                if all_failed {
                    stopped_early = true;
                    live.say(&format!("{label} every target has failed three steps in a row: stopping {generator}"));
                    if let Err(error) = running.stop().await {
                        live.say(&format!("{label} could not stop {generator} early ({error:#}); it runs to the last step"));
                    }
                    if let Some(fleet) = &fleet {
                        fleet.stop().await;
                    }
                }
                last_view = view;
            }
        }
    };
    live.finish();
    let exited_at = origin.elapsed().as_secs_f64();
    let load_seconds = procstat::own_reaped_children_seconds().zip(reaped_before).map(|(after, before)| after - before);
    sampler.sample();
    let _ = stop_polling.send(());
    let probe = poller.await.unwrap_or_default();
    let polled: Vec<Snapshot> = polled.lock().map(|list| list.clone()).unwrap_or_default();
    let fleet = match fleet {
        Some(fleet) => Some(fleet.collect(late_ms, spec.settle).await?),
        None => None,
    };
    if reported_step < rates.len() && !stopped_early {
        let rate = rates.get(reported_step).copied().unwrap_or(0);
        eprintln!("{label} {} (figures of the last moment)", progress_line(&last_view, &targets, reported_step, rate));
    }
    Ok(Driven {
        status,
        origin,
        exited_at,
        load_seconds,
        scenario_start,
        stopped_early,
        drop_samples,
        sampler,
        polled,
        fleet,
        probe,
    })
}
