//! The open-loop schedule: step `k` of the staircase sends `rate × seconds` iterations, the `j`-th
//! at `from + j / rate` after the origin, whatever happened to earlier ones. At each of those
//! moments one request is made and sent to every target, unless that target already has its cap
//! of requests in flight (`rate × budget`, like k6's VU budget): then the iteration is dropped and
//! counted. A request's latency runs from its intended send time to the end of its answer, so a
//! generator that falls behind (schedule lag, also recorded) or a queue in front of a service
//! shows in the figures instead of hiding in a later send (coordinated omission).
//!
//! Between sends less than `BLOCKING_GAP` apart the thread simply sleeps (answers wait in the
//! kernel, which timestamps their arrival) and then reads every answer that came meanwhile in one
//! go: one wake-up per send. Longer gaps are awaited on the runtime (`Pacer`), answers read as they
//! come.

use super::conn::Target;
use super::pacer::Pacer;
use super::record::{Recorder, Slot};
use super::request::{EndpointPlan, RequestMaker};
use crate::k6::summary::OfferedStep;
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// No target gets fewer slots for requests in flight than this (k6's floor of 20 VUs).
pub const MIN_IN_FLIGHT: usize = 20;

/// Sends closer together than this are waited for by sleeping the thread (see above).
const BLOCKING_GAP: Duration = Duration::from_millis(10);
/// Idle connections kept ready per target.
const SPARE_CONNECTIONS: usize = 2;

/// What every request task shares.
pub struct Shared {
    pub targets: Vec<Rc<Target>>,
    pub endpoints: Vec<EndpointPlan>,
    pub recorder: RefCell<Recorder>,
    /// Requests in flight by id: where they belong and when they were due, so that those still
    /// running when the generator gives up on them are counted too.
    pub in_flight: RefCell<HashMap<u64, (Slot, Instant)>>,
    pub request_timeout: Duration,
}

impl Shared {
    /// Sends one request to one target and records it.
    pub async fn request(self: Rc<Self>, id: u64, slot: Slot, due: Instant, path: Rc<str>, body: Option<bytes::Bytes>) {
        let target = &self.targets[slot.target];
        let endpoint = &self.endpoints[slot.endpoint];
        let sent = target.send(endpoint.method.as_str(), &path, body.as_deref());
        let (error, end) = match tokio::time::timeout(self.request_timeout, sent).await {
            Err(_) => (Some("timeout".to_owned()), Instant::now()),
            Ok(Err(kind)) => (Some(kind), Instant::now()),
            Ok(Ok(answer)) if answer.status == endpoint.expect => (None, answer.arrived),
            Ok(Ok(answer)) => (Some(format!("status {}", answer.status)), answer.arrived),
        };
        let latency = end.saturating_duration_since(due);
        target.in_flight.set(target.in_flight.get() - 1);
        self.in_flight.borrow_mut().remove(&id);
        self.recorder.borrow_mut().request(slot, latency, error);
    }

    /// Counts every request still in flight as failed, with the time it has waited so far as its
    /// latency (a lower bound): used when the generator stops waiting for them.
    pub fn abandon_in_flight(&self) -> usize {
        let now = Instant::now();
        let abandoned: Vec<(Slot, Instant)> = self.in_flight.borrow_mut().drain().map(|(_, v)| v).collect();
        let mut recorder = self.recorder.borrow_mut();
        for (slot, due) in &abandoned {
            recorder.request(*slot, now.saturating_duration_since(*due), Some("interrupted".into()));
        }
        abandoned.len()
    }

    pub fn requests_in_flight(&self) -> usize {
        self.in_flight.borrow().len()
    }
}

/// The cap of requests in flight per target at `rate`.
pub fn in_flight_cap(rate: u32, budget: Duration) -> usize {
    ((f64::from(rate) * budget.as_secs_f64()).ceil() as usize).max(MIN_IN_FLIGHT)
}

/// Iterations a step offers: `rate × seconds`, rounded.
pub fn iterations(step: &OfferedStep) -> u64 {
    (f64::from(step.rate) * (step.to_s - step.from_s)).round().max(0.0) as u64
}

/// How the schedule ended.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Ran {
    /// Seconds of the schedule that were sent: the planned length, or where it was stopped.
    pub sent_seconds: f64,
    pub stopped_early: bool,
}

fn own_cpu_seconds() -> Option<f64> {
    crate::procstat::stat(std::process::id()).map(|s| s.own_ticks as f64 / 100.0)
}

/// Runs the schedule from `origin`; returns once the last iteration has been sent (or `stop` was
/// set). Requests still in flight keep running on the same `LocalSet`.
pub async fn run(
    shared: Rc<Shared>,
    mut maker: RequestMaker,
    steps: &[OfferedStep],
    budget: Duration,
    origin: Instant,
    stop: Arc<AtomicBool>,
) -> std::io::Result<Ran> {
    let pacer = Pacer::new()?;
    let window = shared.recorder.borrow().window.as_secs_f64();
    let mut next_id = 0u64;
    for (k, step) in steps.iter().enumerate() {
        let cpu_before = own_cpu_seconds();
        let cap = in_flight_cap(step.rate, budget);
        let gap = 1.0 / f64::from(step.rate.max(1));
        let blocking = Duration::from_secs_f64(gap) < BLOCKING_GAP;
        for j in 0..iterations(step) {
            let offset = j as f64 * gap;
            let due = origin + Duration::from_secs_f64(step.from_s + offset);
            if blocking {
                std::thread::sleep(due.saturating_duration_since(Instant::now()));
            } else {
                pacer.sleep_until(due).await?;
            }
            if stop.load(Ordering::Relaxed) {
                let sent_seconds = origin.elapsed().as_secs_f64().min(step.from_s + offset);
                return Ok(Ran { sent_seconds, stopped_early: true });
            }
            let window = (offset / window) as usize;
            shared.recorder.borrow_mut().lag(k, window, due.elapsed());
            let request = maker.next();
            let path: Rc<str> = Rc::from(request.path);
            for (t, target) in shared.targets.iter().enumerate() {
                let slot = Slot { target: t, step: k, window, endpoint: request.endpoint };
                if target.in_flight.get() >= cap {
                    shared.recorder.borrow_mut().dropped(slot);
                    continue;
                }
                target.in_flight.set(target.in_flight.get() + 1);
                shared.in_flight.borrow_mut().insert(next_id, (slot, due));
                tokio::task::spawn_local(shared.clone().request(
                    next_id,
                    slot,
                    due,
                    path.clone(),
                    request.body.clone(),
                ));
                next_id += 1;
                target.keep_spare(SPARE_CONNECTIONS);
            }
            if blocking {
                // The requests just made are written, and the answers that arrived are read.
                tokio::task::yield_now().await;
            }
        }
        if let (Some(before), Some(after)) = (cpu_before, own_cpu_seconds()) {
            shared.recorder.borrow_mut().generator[k].cpu_seconds = Some(after - before);
        }
    }
    Ok(Ran { sent_seconds: steps.last().map_or(0.0, |s| s.to_s), stopped_early: false })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cap_follows_the_rate_with_a_floor() {
        assert_eq!(in_flight_cap(1000, Duration::from_millis(200)), 200);
        assert_eq!(in_flight_cap(1001, Duration::from_millis(200)), 201);
        assert_eq!(in_flight_cap(10, Duration::from_millis(200)), MIN_IN_FLIGHT);
    }

    #[test]
    fn a_step_offers_rate_times_seconds() {
        assert_eq!(iterations(&OfferedStep { from_s: 4.0, to_s: 8.0, rate: 250 }), 1000);
        assert_eq!(iterations(&OfferedStep { from_s: 0.0, to_s: 2.5, rate: 3 }), 8);
    }
}
