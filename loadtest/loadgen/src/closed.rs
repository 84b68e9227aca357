//! The closed loop (study S2's way: 8 clients, 20 s): each of N clients per target sends a
//! request, waits for its answer and sends the next at once, until the time is up. Throughput is
//! whatever the target sustains; latency runs from each request's actual send, since in a closed
//! loop there is no schedule to fall behind (and a slow answer delays the next request instead of
//! queueing it). Everything is recorded as one step, windows included. Each request is a task on a
//! current-thread tokio runtime (`tasks`): the closed loop measures throughput, not the
//! generator's cost, so it keeps the simpler machinery the open loop does without.

use super::conn::Target;
use super::control::Control;
use super::live;
use super::record::Slot;
use super::request::RequestMaker;
use super::tasks::Shared;
use super::{Finished, Start};
use crate::summary::write::TargetFacts;
use anyhow::Context as _;
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::io::Write as _;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The whole closed-loop run: `clients` per target for `duration`, then the requests still in
/// flight (up to their timeout), on a runtime of its own.
pub fn run(start: Start, clients: u32, duration: Duration, control: Arc<Control>) -> anyhow::Result<Finished> {
    let Start { targets, maker, recorder, request_timeout, progress } = start;
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().context("tokio runtime")?;
    let local = tokio::task::LocalSet::new();
    local.block_on(&runtime, async move {
        let targets = targets
            .iter()
            .map(|(name, url)| Target::new(name, url).map(Rc::new))
            .collect::<anyhow::Result<Vec<_>>>()?;
        let shared = Rc::new(Shared {
            endpoints: maker.endpoints.clone(),
            targets,
            recorder: RefCell::new(recorder),
            in_flight: RefCell::new(HashMap::new()),
            request_timeout,
        });
        for target in &shared.targets {
            if let Err(error) = target.warm_up(2).await {
                eprintln!("load: {} ({}): {error}; its requests will fail", target.name, target.url);
            }
        }
        let cpu_before = super::own_cpu_seconds();
        let origin = Instant::now() + Duration::from_millis(50);
        let progress = progress.then(|| spawn_progress(shared.clone(), origin));
        spawn_expiry(shared.clone());
        let run_seconds = clients_run(shared.clone(), maker, clients, duration, origin, control.clone()).await;
        let stopped_early = control.stopped();
        let patience = if stopped_early { Duration::from_secs(2) } else { request_timeout + Duration::from_secs(1) };
        let waiting = Instant::now();
        while shared.requests_in_flight() > 0 && waiting.elapsed() < patience {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let abandoned = shared.abandon_in_flight();
        if let Some(done) = progress {
            done.set(true);
        }
        let cpu_seconds = cpu_before.zip(super::own_cpu_seconds()).map(|(before, after)| after - before);
        let facts = shared
            .targets
            .iter()
            .map(|t| TargetFacts {
                name: t.name.clone(),
                url: t.url.clone(),
                connections: t.connections_opened.get(),
                untimed_answers: t.untimed_answers.get(),
            })
            .collect();
        let retired = vec![None; shared.targets.len()];
        Ok(Finished {
            recorder: shared.recorder.borrow().clone(),
            endpoints: shared.endpoints.clone(),
            targets: facts,
            run_seconds,
            stopped_early,
            cpu_seconds,
            abandoned,
            retired,
        })
    })
}

/// Requests past their timeout are cancelled and counted, ten times a second, until the run ends.
fn spawn_expiry(shared: Rc<Shared>) {
    tokio::task::spawn_local(async move {
        let mut ticker = tokio::time::interval(Duration::from_millis(100));
        loop {
            ticker.tick().await;
            shared.expire();
        }
    });
}

/// Progress lines every half second until the returned flag is set.
fn spawn_progress(shared: Rc<Shared>, origin: Instant) -> Rc<Cell<bool>> {
    let done = Rc::new(Cell::new(false));
    let finished = done.clone();
    tokio::task::spawn_local(async move {
        let names: Vec<String> = shared.targets.iter().map(|t| t.name.clone()).collect();
        let mut ticker = tokio::time::interval(Duration::from_millis(500));
        while !finished.get() {
            ticker.tick().await;
            let line = live::line(&mut shared.recorder.borrow_mut(), &names, origin.elapsed().as_secs_f64());
            let mut stdout = std::io::stdout().lock();
            let _ = writeln!(stdout, "{line}");
            let _ = stdout.flush();
        }
    });
    done
}

/// Runs `clients` loops per target from `origin` for `duration`; returns the seconds it ran.
async fn clients_run(
    shared: Rc<Shared>,
    maker: RequestMaker,
    clients: u32,
    duration: Duration,
    origin: Instant,
    control: Arc<Control>,
) -> f64 {
    let maker = Rc::new(RefCell::new(maker));
    let end = origin + duration;
    let window = shared.recorder.borrow().window;
    let next_id = Rc::new(Cell::new(0u64));
    let give_up = shared.request_timeout + Duration::from_millis(200);
    let mut loops = Vec::new();
    for target in 0..shared.targets.len() {
        for _ in 0..clients {
            let (shared, maker, control, next_id) = (shared.clone(), maker.clone(), control.clone(), next_id.clone());
            loops.push(tokio::task::spawn_local(async move {
                while Instant::now() < end && !control.stopped() {
                    let request = maker.borrow_mut().next();
                    let sent = Instant::now();
                    let window = (sent.saturating_duration_since(origin).as_secs_f64() / window.as_secs_f64()) as usize;
                    let slot = Slot { target, step: 0, window, endpoint: request.endpoint };
                    let key = next_id.get();
                    next_id.set(key + 1);
                    shared.start(key, slot, sent);
                    // A request that outlives its timeout is counted by `Shared::expire`; the
                    // client gives up on it here and sends the next.
                    let _ =
                        tokio::time::timeout(give_up, shared.clone().request(key, request.path, request.body)).await;
                }
            }));
        }
    }
    for handle in loops {
        let _ = handle.await;
    }
    origin.elapsed().as_secs_f64().min(duration.as_secs_f64())
}
