//! What the generator counts while it runs. Every request belongs to the step and the short window
//! (by default 100 ms) its intended send time fell in, whenever it completes. Per target and step:
//! an HDR histogram of latency (microseconds, three significant digits), counts of requests,
//! failures and dropped iterations, and per window the requests, the slow ones (at or above the
//! pass mark's p95 latency), failures and drops, which is what lets the runner tell a stall that
//! hit both targets at once from a database running out. Per target and endpoint: a histogram and
//! counts. Per step, the generator itself: how late it sent (schedule lag, histogram and the worst
//! per window) and its own CPU time.

use hdrhistogram::Histogram;
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

/// Latencies up to this are kept exactly (to three digits); longer ones count as this.
const HIGHEST_US: u64 = 3_600_000_000;

pub fn histogram() -> Histogram<u32> {
    // 1 µs .. 1 h at 3 significant digits: about 90 KB per histogram.
    Histogram::new_with_bounds(1, HIGHEST_US, 3).unwrap_or_else(|_| unreachable!("constant, valid bounds"))
}

pub fn micros(duration: Duration) -> u64 {
    u64::try_from(duration.as_micros()).unwrap_or(u64::MAX).max(1)
}

/// Counts of one short window of one step of one target.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Window {
    pub count: u32,
    pub slow: u32,
    pub failed: u32,
    pub dropped: u32,
}

#[derive(Debug, Clone)]
pub struct Figures {
    pub histogram: Histogram<u32>,
    pub count: u64,
    pub failures: u64,
}

impl Default for Figures {
    fn default() -> Self {
        Self { histogram: histogram(), count: 0, failures: 0 }
    }
}

impl Figures {
    fn add(&mut self, latency_us: u64, ok: bool) {
        self.histogram.saturating_record(latency_us);
        self.count += 1;
        self.failures += u64::from(!ok);
    }

    pub fn merge(&mut self, other: &Self) {
        // Same bounds on both sides: adding cannot fail.
        let _ = self.histogram.add(&other.histogram);
        self.count += other.count;
        self.failures += other.failures;
    }

    /// Latency at quantile `q` in milliseconds; `None` without requests.
    pub fn quantile_ms(&self, q: f64) -> Option<f64> {
        (self.count > 0).then(|| self.histogram.value_at_quantile(q) as f64 / 1000.0)
    }

    pub fn max_ms(&self) -> Option<f64> {
        (self.count > 0).then(|| self.histogram.max() as f64 / 1000.0)
    }
}

#[derive(Debug, Clone, Default)]
pub struct TargetStep {
    pub figures: Figures,
    pub dropped: u64,
    pub windows: Vec<Window>,
}

#[derive(Debug, Clone)]
pub struct GeneratorStep {
    /// How late requests were sent, microseconds.
    pub lag: Histogram<u32>,
    /// The worst lag of each window, microseconds.
    pub window_lag_us: Vec<u64>,
    /// The generator's own CPU seconds while the step was being sent.
    pub cpu_seconds: Option<f64>,
}

#[derive(Debug, Clone)]
pub struct Recorder {
    pub window: Duration,
    /// At or above this latency a request counts as slow in its window (the pass mark's p95).
    pub slow_us: u64,
    /// Per target: per step.
    pub steps: Vec<Vec<TargetStep>>,
    /// Per target: per endpoint.
    pub endpoints: Vec<Vec<Figures>>,
    /// Per target: failures by kind (`status 503`, `timeout`, `connect: ...`).
    pub errors: Vec<BTreeMap<String, u64>>,
    pub generator: Vec<GeneratorStep>,
    /// Per target: steps whose figures changed since the last progress line.
    pub changed: Vec<BTreeSet<usize>>,
}

/// Where a request belongs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slot {
    pub target: usize,
    pub step: usize,
    pub window: usize,
    pub endpoint: usize,
}

impl Recorder {
    /// `windows_per_step`: the number of windows of each step.
    pub fn new(targets: usize, endpoints: usize, windows_per_step: &[usize], window: Duration, slow: Duration) -> Self {
        let step = |windows: usize| TargetStep { windows: vec![Window::default(); windows], ..TargetStep::default() };
        Self {
            window,
            slow_us: micros(slow),
            steps: (0..targets).map(|_| windows_per_step.iter().map(|w| step(*w)).collect()).collect(),
            endpoints: (0..targets).map(|_| (0..endpoints).map(|_| Figures::default()).collect()).collect(),
            errors: vec![BTreeMap::new(); targets],
            generator: windows_per_step
                .iter()
                .map(|w| GeneratorStep { lag: histogram(), window_lag_us: vec![0; *w], cpu_seconds: None })
                .collect(),
            changed: vec![BTreeSet::new(); targets],
        }
    }

    fn window_of(&mut self, slot: Slot) -> Option<&mut Window> {
        self.steps.get_mut(slot.target)?.get_mut(slot.step)?.windows.get_mut(slot.window)
    }

    pub fn request(&mut self, slot: Slot, latency: Duration, error: Option<String>) {
        let latency_us = micros(latency);
        let ok = error.is_none();
        if let Some(step) = self.steps.get_mut(slot.target).and_then(|s| s.get_mut(slot.step)) {
            step.figures.add(latency_us, ok);
        }
        if let Some(endpoint) = self.endpoints.get_mut(slot.target).and_then(|e| e.get_mut(slot.endpoint)) {
            endpoint.add(latency_us, ok);
        }
        let slow = latency_us >= self.slow_us;
        if let Some(window) = self.window_of(slot) {
            window.count += 1;
            window.slow += u32::from(slow);
            window.failed += u32::from(!ok);
        }
        if let Some(kind) = error {
            *self.errors[slot.target].entry(kind).or_default() += 1;
        }
        self.changed[slot.target].insert(slot.step);
    }

    /// An iteration not sent because the target already had its cap of requests in flight.
    pub fn dropped(&mut self, slot: Slot) {
        if let Some(step) = self.steps.get_mut(slot.target).and_then(|s| s.get_mut(slot.step)) {
            step.dropped += 1;
        }
        if let Some(window) = self.window_of(slot) {
            window.dropped += 1;
        }
        self.changed[slot.target].insert(slot.step);
    }

    pub fn lag(&mut self, step: usize, window: usize, lag: Duration) {
        if let Some(generator) = self.generator.get_mut(step) {
            let lag_us = micros(lag);
            generator.lag.saturating_record(lag_us);
            if let Some(worst) = generator.window_lag_us.get_mut(window) {
                *worst = (*worst).max(lag_us);
            }
        }
    }

    /// A target's figures over all its steps.
    pub fn target_total(&self, target: usize) -> Figures {
        let mut total = Figures::default();
        for step in &self.steps[target] {
            total.merge(&step.figures);
        }
        total
    }

    pub fn target_dropped(&self, target: usize) -> u64 {
        self.steps[target].iter().map(|s| s.dropped).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_land_in_their_step_window_and_endpoint() {
        let mut recorder = Recorder::new(2, 3, &[4, 4], Duration::from_millis(100), Duration::from_millis(50));
        let slot = Slot { target: 1, step: 1, window: 2, endpoint: 0 };
        recorder.request(slot, Duration::from_millis(3), None);
        recorder.request(slot, Duration::from_millis(80), Some("status 503".into()));
        recorder.dropped(slot);
        let step = &recorder.steps[1][1];
        assert_eq!((step.figures.count, step.figures.failures, step.dropped), (2, 1, 1));
        assert_eq!(step.windows[2], Window { count: 2, slow: 1, failed: 1, dropped: 1 });
        assert_eq!(recorder.endpoints[1][0].count, 2);
        assert_eq!(recorder.errors[1]["status 503"], 1);
        assert_eq!(recorder.steps[0][1].figures.count, 0, "the other target saw nothing");
        let p50 = recorder.target_total(1).quantile_ms(0.5).expect("p50");
        assert!((2.99..=3.01).contains(&p50), "{p50}");
        assert!(recorder.changed[1].contains(&1));
    }

    #[test]
    fn the_schedule_lag_keeps_the_worst_of_each_window() {
        let mut recorder = Recorder::new(1, 1, &[3], Duration::from_millis(100), Duration::from_millis(50));
        recorder.lag(0, 1, Duration::from_micros(40));
        recorder.lag(0, 1, Duration::from_millis(30));
        recorder.lag(0, 9, Duration::from_millis(1));
        assert_eq!(recorder.generator[0].window_lag_us, [0, 30_000, 0]);
        assert_eq!(recorder.generator[0].lag.len(), 3);
    }
}
