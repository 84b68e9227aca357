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
//! go. Longer gaps are awaited on the runtime (`Pacer`), answers read as they come.
//!
//! At rates above one per `SLOT` (4 ms), the iterations due within one slot of the schedule are
//! all intended at the slot's start and leave together: one wake-up per slot instead of one per
//! send. A wake-up is most of what a request costs the generator on a virtual machine: measured on
//! two cores against both services (read mix, 2,500 req/s per target, two runs each), 17.0 µs of
//! CPU per request with 1 ms slots and 11.8 µs with 4 ms slots, i.e. about 33 µs per wake-up and
//! 10 µs per request. Latency still runs from the (slot's) intended time, so nothing is hidden, and
//! answers are timestamped by the kernel on arrival, so sleeping through a slot does not delay
//! them. The load is burstier than k6's evenly spaced sends (at 5,000 req/s, twenty requests per
//! target at once every 4 ms): in the same runs the median rose by 0.2 ms (orders-pg) and 1.0 ms
//! (orders-mongo) while p95 stayed below 2.3 ms, far from a 50 ms pass mark; both targets get the
//! same bursts. The schedule lag (recorded) grows to the time it takes to send a slot's requests,
//! about 0.2 ms.

use super::conn::Target;
use super::control::Control;
use super::pacer::Pacer;
use super::record::{Recorder, Slot};
use super::request::{EndpointPlan, RequestMaker};
use crate::k6::summary::OfferedStep;
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// No target gets fewer slots for requests in flight than this (k6's floor of 20 VUs).
pub const MIN_IN_FLIGHT: usize = 20;

/// Sends closer together than this are waited for by sleeping the thread (see above).
const BLOCKING_GAP: Duration = Duration::from_millis(10);
/// Sends due within one slot leave together at its start (see above), in seconds.
const SLOT: f64 = 0.004;
/// Idle connections kept ready per target.
const SPARE_CONNECTIONS: usize = 2;

/// What every request task shares.
pub struct Shared {
    pub targets: Vec<Rc<Target>>,
    pub endpoints: Vec<EndpointPlan>,
    pub recorder: RefCell<Recorder>,
    /// Requests in flight by id, so that those that time out, or are still running when the
    /// generator gives up on them, are counted too.
    pub in_flight: RefCell<HashMap<u64, InFlight>>,
    pub request_timeout: Duration,
    /// Per target: where the runner retired it (`Control`), if it did.
    pub retired: RefCell<Vec<Option<Retired>>>,
}

/// The moment a target got its last request: the first iteration it was skipped in.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Retired {
    pub step: usize,
    /// Seconds after the origin of the schedule.
    pub at_s: f64,
}

/// A request on its way: where it belongs, when it was due and when it was handed over (its
/// timeout runs from then), and how to cancel it.
pub struct InFlight {
    pub slot: Slot,
    pub due: Instant,
    pub started: Instant,
    pub abort: Option<tokio::task::AbortHandle>,
}

impl Shared {
    /// Registers a request as in flight (before it is sent).
    pub fn start(&self, id: u64, slot: Slot, due: Instant) {
        let target = &self.targets[slot.target];
        target.in_flight.set(target.in_flight.get() + 1);
        let entry = InFlight { slot, due, started: Instant::now(), abort: None };
        self.in_flight.borrow_mut().insert(id, entry);
    }

    /// Takes a request off the books and records it.
    fn finish(&self, id: u64, latency: Duration, error: Option<String>) {
        let Some(entry) = self.in_flight.borrow_mut().remove(&id) else { return };
        let target = &self.targets[entry.slot.target];
        target.in_flight.set(target.in_flight.get() - 1);
        self.recorder.borrow_mut().request(entry.slot, latency, error);
    }

    /// Sends request `id` (registered with `start`) to its target and records it. No timeout of
    /// its own: `expire` cancels it when its time is up (one sweep for all instead of a timer each).
    pub async fn request(self: Rc<Self>, id: u64, path: Rc<str>, body: Option<bytes::Bytes>) {
        let Some((slot, due)) = self.in_flight.borrow().get(&id).map(|e| (e.slot, e.due)) else { return };
        let target = self.targets[slot.target].clone();
        let endpoint = &self.endpoints[slot.endpoint];
        let (error, end) = match target.send(endpoint.method.as_str(), &path, endpoint.headers, body.as_deref()).await {
            Err(kind) => (Some(kind), Instant::now()),
            Ok(answer) if answer.status == endpoint.expect => (None, answer.arrived),
            Ok(answer) => (Some(format!("status {}", answer.status)), answer.arrived),
        };
        self.finish(id, end.saturating_duration_since(due), error);
    }

    /// Cancels and counts as failed (`timeout`) every request in flight for longer than the
    /// request timeout.
    pub fn expire(&self) {
        let now = Instant::now();
        let expired: Vec<(u64, Instant)> = self
            .in_flight
            .borrow()
            .iter()
            .filter(|(_, e)| now.saturating_duration_since(e.started) >= self.request_timeout)
            .map(|(id, e)| {
                if let Some(abort) = &e.abort {
                    abort.abort();
                }
                (*id, e.due)
            })
            .collect();
        for (id, due) in expired {
            self.finish(id, now.saturating_duration_since(due), Some("timeout".into()));
        }
    }

    /// Counts every request still in flight as failed, with the time it has waited so far as its
    /// latency (a lower bound): used when the generator stops waiting for them.
    pub fn abandon_in_flight(&self) -> usize {
        let now = Instant::now();
        let abandoned: Vec<InFlight> = self.in_flight.borrow_mut().drain().map(|(_, v)| v).collect();
        let mut recorder = self.recorder.borrow_mut();
        for entry in &abandoned {
            if let Some(abort) = &entry.abort {
                abort.abort();
            }
            recorder.request(entry.slot, now.saturating_duration_since(entry.due), Some("interrupted".into()));
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

/// When iteration `j` of a step is intended, seconds after the step's start: `j × gap`, or the
/// start of its slot when sends are closer together than a slot.
fn intended_offset(j: u64, gap: f64) -> f64 {
    let offset = j as f64 * gap;
    if gap < SLOT { (offset / SLOT).floor() * SLOT } else { offset }
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
    control: Arc<Control>,
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
            let offset = intended_offset(j, gap);
            let due = origin + Duration::from_secs_f64(step.from_s + offset);
            if blocking {
                std::thread::sleep(due.saturating_duration_since(Instant::now()));
            } else {
                pacer.sleep_until(due).await?;
            }
            if control.stopped() {
                let sent_seconds = origin.elapsed().as_secs_f64().min(step.from_s + offset);
                return Ok(Ran { sent_seconds, stopped_early: true });
            }
            let window = (offset / window) as usize;
            shared.recorder.borrow_mut().lag(k, window, due.elapsed());
            let request = maker.next();
            let path: Rc<str> = Rc::from(request.path);
            // Which target goes first alternates: the first send wakes its service, which may take
            // the core before the second send is made.
            let n = shared.targets.len();
            for t in (0..n).map(|i| (i + j as usize) % n) {
                let target = &shared.targets[t];
                if control.retired(t) {
                    let mut retired = shared.retired.borrow_mut();
                    retired[t].get_or_insert(Retired { step: k, at_s: step.from_s + offset });
                    continue;
                }
                let slot = Slot { target: t, step: k, window, endpoint: request.endpoint };
                if target.in_flight.get() >= cap {
                    shared.recorder.borrow_mut().dropped(slot);
                    continue;
                }
                shared.start(next_id, slot, due);
                let task =
                    tokio::task::spawn_local(shared.clone().request(next_id, path.clone(), request.body.clone()));
                if let Some(entry) = shared.in_flight.borrow_mut().get_mut(&next_id) {
                    entry.abort = Some(task.abort_handle());
                }
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
    use crate::loadgen::conn::Target;

    #[test]
    fn close_sends_share_the_start_of_their_slot_and_sparse_ones_keep_their_time() {
        // 6,000 req/s: 24 iterations per 4 ms slot.
        let at_6000: Vec<f64> = (0..49).map(|j| intended_offset(j, 1.0 / 6000.0)).collect();
        assert_eq!(at_6000[..24], [0.0; 24]);
        assert!(at_6000[24..48].iter().all(|o| (o - SLOT).abs() < 1e-12), "{at_6000:?}");
        assert!((at_6000[48] - 2.0 * SLOT).abs() < 1e-12, "{at_6000:?}");
        // A whole second still holds exactly `rate` iterations.
        assert!(intended_offset(5999, 1.0 / 6000.0) < 1.0);
        // 500 req/s (2 ms apart): two per slot.
        assert_eq!(intended_offset(1, 1.0 / 500.0), 0.0);
        assert!((intended_offset(3, 1.0 / 500.0) - SLOT).abs() < 1e-12);
        // 100 req/s (10 ms apart, more than a slot): every send keeps its own time.
        assert!((intended_offset(3, 1.0 / 100.0) - 0.03).abs() < 1e-12);
    }

    #[test]
    fn the_cap_follows_the_rate_with_a_floor() {
        assert_eq!(in_flight_cap(1000, Duration::from_millis(200)), 200);
        assert_eq!(in_flight_cap(1001, Duration::from_millis(200)), 201);
        assert_eq!(in_flight_cap(10, Duration::from_millis(200)), MIN_IN_FLIGHT);
    }

    #[test]
    fn a_request_past_its_timeout_is_cancelled_and_counted() {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        tokio::task::LocalSet::new().block_on(&runtime, async {
            // Accepts and never answers.
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
            let url = format!("http://{}", listener.local_addr().expect("addr"));
            let held = tokio::spawn(async move { listener.accept().await });
            let definitions = super::super::mixes::Definitions::embedded().expect("mixes");
            let profile =
                crate::dataset::Profile { seed: 1, orders: 10, customers: 2, products: 5, items: 3, note_bytes: 0 };
            let manifest = crate::manifest::Manifest::new(&profile, 600);
            let maker =
                RequestMaker::new(&definitions, &definitions.mix("read").expect("read"), &manifest, 1).expect("maker");
            let shared = Rc::new(Shared {
                targets: vec![Rc::new(Target::new("t", &url).expect("target"))],
                endpoints: maker.endpoints.clone(),
                recorder: RefCell::new(Recorder::new(1, 1, &[1], Duration::from_secs(1), Duration::from_millis(50))),
                in_flight: RefCell::new(HashMap::new()),
                request_timeout: Duration::from_millis(100),
                retired: RefCell::new(vec![None]),
            });
            let slot = Slot { target: 0, step: 0, window: 0, endpoint: 0 };
            shared.start(7, slot, Instant::now());
            let task = tokio::task::spawn_local(shared.clone().request(7, Rc::from("/orders/1"), None));
            if let Some(entry) = shared.in_flight.borrow_mut().get_mut(&7) {
                entry.abort = Some(task.abort_handle());
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
            shared.expire();
            assert_eq!(shared.requests_in_flight(), 1, "not yet");
            tokio::time::sleep(Duration::from_millis(100)).await;
            shared.expire();
            assert_eq!(shared.requests_in_flight(), 0);
            assert!(task.await.is_err_and(|e| e.is_cancelled()), "the request was cancelled");
            let recorder = shared.recorder.borrow();
            assert_eq!((recorder.steps[0][0].figures.failures, recorder.errors[0]["timeout"]), (1, 1));
            assert_eq!(shared.targets[0].in_flight.get(), 0);
            drop(held);
        });
    }

    #[test]
    fn a_step_offers_rate_times_seconds() {
        assert_eq!(iterations(&OfferedStep { from_s: 4.0, to_s: 8.0, rate: 250 }), 1000);
        assert_eq!(iterations(&OfferedStep { from_s: 0.0, to_s: 2.5, rate: 3 }), 8);
    }
}
