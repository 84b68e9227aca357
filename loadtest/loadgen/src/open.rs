//! The open-loop schedule: step `k` of the staircase sends `rate × seconds` iterations, the `j`-th
//! at `from + j / rate` after the origin, whatever happened to earlier ones. Each sends one request
//! to every target unless that target has its cap in flight (`rate × budget`, like k6's VU
//! budget): then the iteration is dropped and counted. Latency runs from the intended send time to
//! the answer's end, so a generator that falls behind or a queue before a service shows in the
//! figures (no coordinated omission).
//!
//! One thread, no async runtime: plain non-blocking sockets on one poll (`wire`). Short gaps are
//! slept, longer ones waited on the poll; above one iteration per `SLOT`, those due within a slot
//! leave together. Measurements: loadtest/README.md, "`orders-bench load`".

use super::control::Control;
use super::http1;
use super::live;
use super::record::{Recorder, Slot};
use super::request::{EndpointPlan, RequestMaker};
use super::wire::{Outcome, Pending, Wire};
use crate::summary::{OfferedStep, Retired};
use std::io::Write as _;
use std::time::{Duration, Instant};

/// No target gets fewer slots for requests in flight than this (k6's floor of 20 VUs).
pub const MIN_IN_FLIGHT: usize = 20;

/// Sends closer together than this are waited for by sleeping the thread (see above).
const BLOCKING_GAP: Duration = Duration::from_millis(10);
/// Sends due within one slot leave together at its start (see above), in seconds.
const SLOT: f64 = 0.004;
/// Idle connections kept ready per target.
const SPARE_CONNECTIONS: usize = 2;
/// How often requests past their timeout are looked for.
const EXPIRE_EVERY: Duration = Duration::from_millis(100);
/// How often the live figures are printed (`--progress`).
const PROGRESS_EVERY: Duration = Duration::from_millis(500);
/// The longest single wait, so that the stop, the expiry and the live figures stay on time.
const LONGEST_WAIT: Duration = Duration::from_millis(100);

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

/// What a request carries through the wire: where it is recorded and when it was due (in the
/// closed loop: when it was sent).
#[derive(Debug, Clone, Copy)]
pub(super) struct Due {
    pub slot: Slot,
    pub due: Instant,
}

/// Records one request's outcome: latency from its intended time to the arrival of its answer.
pub(super) fn record(recorder: &mut Recorder, endpoints: &[EndpointPlan], pending: Pending<Due>, outcome: Outcome) {
    let Due { slot, due } = pending.tag;
    let (end, error) = match outcome {
        Outcome::Answer { status, arrived } if status == endpoints[slot.endpoint].expect => (arrived, None),
        Outcome::Answer { status, arrived } => (arrived, Some(format!("status {status}"))),
        Outcome::Failed(why, at) => (at, Some(why)),
    };
    recorder.request(slot, end.saturating_duration_since(due), error);
}

/// Records every request still in flight on `wire` as failed (`interrupted`, with the time it
/// had waited as its latency) and says how many there were.
pub(super) fn abandon_in_flight(wire: &mut Wire<Due>, recorder: &mut Recorder, endpoints: &[EndpointPlan]) -> usize {
    let mut abandoned = 0;
    wire.abandon(|pending, outcome| {
        abandoned += 1;
        record(recorder, endpoints, pending, outcome);
    });
    abandoned
}

/// The open loop: the targets' connections, what is recorded, and the bookkeeping between sends.
pub struct OpenLoop {
    wire: Wire<Due>,
    pub recorder: Recorder,
    pub endpoints: Vec<EndpointPlan>,
    pub names: Vec<String>,
    /// Per target: where the runner retired it (`Control`), if it did.
    /// Per target, the moment it got its last request: the first iteration it was skipped in.
    pub retired: Vec<Option<Retired>>,
    request_timeout: Duration,
    progress: bool,
    /// With `--progress`: when the next live line is due.
    next_progress: Option<Instant>,
    next_expiry: Instant,
    /// When the schedule begins (set by `run`).
    origin: Instant,
    /// `--prometheus-rw`: handed the figures once a second.
    pub push: Option<super::prometheus::Push>,
}

impl OpenLoop {
    /// `targets`: each one's name and `http://host:port`.
    pub fn new(
        targets: &[(String, String)],
        recorder: Recorder,
        endpoints: Vec<EndpointPlan>,
        request_timeout: Duration,
        progress: bool,
    ) -> anyhow::Result<Self> {
        let urls: Vec<String> = targets.iter().map(|(_, url)| url.clone()).collect();
        let now = Instant::now();
        Ok(Self {
            wire: Wire::new(&urls)?,
            recorder,
            endpoints,
            names: targets.iter().map(|(name, _)| name.clone()).collect(),
            retired: vec![None; targets.len()],
            request_timeout,
            progress,
            next_progress: None,
            next_expiry: now,
            origin: now,
            push: None,
        })
    }

    /// Opens `n` connections to every target ahead of the first requests; says which could not.
    pub fn warm_up(&mut self, n: usize) -> Vec<(usize, String)> {
        (0..self.names.len())
            .filter_map(|t| self.wire.warm_up(t, n, Duration::from_secs(2)).err().map(|e| (t, e)))
            .collect()
    }

    pub fn connections(&self, target: usize) -> super::wire::ConnectionFigures {
        self.wire.figures(target)
    }

    /// Reads what arrived, waiting at most `wait` for something to; expires and prints the live
    /// figures when their time has come.
    fn look_after(&mut self, wait: Duration) -> std::io::Result<()> {
        let Self { wire, recorder, endpoints, .. } = self;
        wire.poll(wait, |pending, outcome| record(recorder, endpoints, pending, outcome))?;
        let now = Instant::now();
        if now >= self.next_expiry {
            self.next_expiry = now + EXPIRE_EVERY;
            let Self { wire, recorder, endpoints, .. } = self;
            wire.expire(self.request_timeout, |pending, outcome| record(recorder, endpoints, pending, outcome));
        }
        if let Some(due) = self.next_progress.filter(|due| now >= *due) {
            self.next_progress = Some(due + PROGRESS_EVERY);
            let seconds = now.saturating_duration_since(self.origin).as_secs_f64();
            let line = live::line(&mut self.recorder, &self.names, seconds);
            let mut stdout = std::io::stdout().lock();
            let _ = writeln!(stdout, "{line}");
            let _ = stdout.flush();
        }
        if let Some(push) = &mut self.push {
            push.tick(&self.recorder, now);
        }
        Ok(())
    }

    /// Until `due`: sleeping when it is close (answers wait, timestamped, in the kernel), else
    /// waiting on the sockets; then reads what arrived.
    fn wait_until(&mut self, due: Instant) -> std::io::Result<()> {
        loop {
            let left = due.saturating_duration_since(Instant::now());
            if left < BLOCKING_GAP {
                std::thread::sleep(left);
                return self.look_after(Duration::ZERO);
            }
            // The epoll counts whole milliseconds: wake a little early, then sleep the rest.
            self.look_after((left - Duration::from_millis(2)).min(LONGEST_WAIT))?;
        }
    }

    /// Runs the schedule from `origin` (live figures from then on with `--progress`); returns once
    /// the last iteration has been sent (or the run was stopped). Requests still in flight are left
    /// to `drain`.
    pub fn run(
        &mut self,
        maker: &mut RequestMaker,
        steps: &[OfferedStep],
        budget: Duration,
        origin: Instant,
        control: &Control,
    ) -> std::io::Result<Ran> {
        self.origin = origin;
        self.next_expiry = origin;
        self.next_progress = self.progress.then_some(origin);
        let window = self.recorder.window.as_secs_f64();
        let targets = self.names.len();
        for (k, step) in steps.iter().enumerate() {
            let cpu_before = crate::own_cpu_seconds();
            let cap = in_flight_cap(step.rate, budget);
            let gap = 1.0 / f64::from(step.rate.max(1));
            let mut moment = None;
            for j in 0..iterations(step) {
                let offset = intended_offset(j, gap);
                let due = origin + Duration::from_secs_f64(step.from_s + offset);
                // Iterations of one slot share their moment: wait for it (and read the answers
                // that came meanwhile) once.
                if moment != Some(due) {
                    self.wait_until(due)?;
                    moment = Some(due);
                }
                if control.stopped() {
                    let sent_seconds = origin.elapsed().as_secs_f64().min(step.from_s + offset);
                    return Ok(Ran { sent_seconds, stopped_early: true });
                }
                let now = Instant::now();
                let window = (offset / window) as usize;
                self.recorder.lag(k, window, now.saturating_duration_since(due));
                let request = maker.next();
                let endpoint = &self.endpoints[request.endpoint];
                // Which target goes first alternates: the first send wakes its service, which may
                // take the core before the second send is made.
                for t in (0..targets).map(|i| (i + j as usize) % targets) {
                    if control.retired(t) {
                        self.retired[t].get_or_insert(Retired { step: k, at_s: step.from_s + offset });
                        continue;
                    }
                    let slot = Slot { target: t, step: k, window, endpoint: request.endpoint };
                    if self.wire.in_flight(t) >= cap {
                        self.recorder.dropped(slot);
                        continue;
                    }
                    let pending = Pending { tag: Due { slot, due }, started: now };
                    let sent = self.wire.send(t, pending, |out, host| {
                        let body = request.body.as_deref();
                        http1::encode(
                            out,
                            endpoint.method.as_str(),
                            &request.path,
                            host,
                            http1::AGENT,
                            endpoint.headers,
                            body,
                        );
                    });
                    if let Err((pending, outcome)) = sent {
                        record(&mut self.recorder, &self.endpoints, pending, outcome);
                    }
                    self.wire.keep_spare(t, SPARE_CONNECTIONS);
                }
            }
            if let (Some(before), Some(after)) = (cpu_before, crate::own_cpu_seconds()) {
                self.recorder.generator[k].cpu_seconds = Some(after - before);
            }
        }
        Ok(Ran { sent_seconds: steps.last().map_or(0.0, |s| s.to_s), stopped_early: false })
    }

    /// Waits for the requests still in flight, at most `patience`; then counts those left as
    /// failed (`interrupted`, with the time they had waited as their latency) and says how many.
    pub fn drain(&mut self, patience: Duration) -> std::io::Result<usize> {
        let waiting = Instant::now();
        while self.wire.busy() > 0 && waiting.elapsed() < patience {
            self.look_after(Duration::from_millis(5))?;
        }
        Ok(abandon_in_flight(&mut self.wire, &mut self.recorder, &self.endpoints))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn a_step_offers_rate_times_seconds() {
        assert_eq!(iterations(&OfferedStep { from_s: 4.0, to_s: 8.0, rate: 250 }), 1000);
        assert_eq!(iterations(&OfferedStep { from_s: 0.0, to_s: 2.5, rate: 3 }), 8);
    }
}
