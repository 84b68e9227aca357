//! Who used the CPU during a run, when the databases, services and k6 share this machine: each
//! component is found by the port it listens on (services by their URL, databases by theirs; k6 is
//! our child), sampled every half second from `/proc`, and reported as CPU seconds, average cores
//! and CPU seconds per 1,000 requests (a database and its service per request of their target, k6
//! per request of both). Per step, the cores each used let the report say what limited a target at
//! the step it first failed: when the machine was saturated, the largest of k6, the target's
//! service and its database; when it was not, something other than CPU (disk flushes, locks).

use crate::k6::summary::OfferedStep;
use crate::procstat;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::Instant;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    Database,
    Service,
    LoadGenerator,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Component {
    pub name: String,
    pub role: Role,
    /// `pg` or `mongo`; none for k6, which drives both.
    pub target: Option<String>,
    pub pid: Option<u32>,
    /// Why it is not measured, when it is not.
    pub note: Option<String>,
}

/// The port of a URL whose host is this machine (`postgres://u@127.0.0.1:5432/db`,
/// `mongodb://localhost:27017`, `http://127.0.0.1:8080`), else `None`.
pub fn local_port(url: &str) -> Option<u16> {
    let (scheme, rest) = url.split_once("://")?;
    let authority = rest.split(['/', '?']).next()?;
    let host_port = authority.rsplit('@').next()?.split(',').next()?;
    let (host, port) = match host_port.rsplit_once(':') {
        Some((host, port)) if !port.contains(']') => (host, port.parse().ok()?),
        _ => (host_port, default_port(scheme)?),
    };
    matches!(host, "127.0.0.1" | "localhost" | "[::1]" | "::1").then_some(port)
}

fn default_port(scheme: &str) -> Option<u16> {
    match scheme {
        "postgres" | "postgresql" => Some(5432),
        "mongodb" => Some(27017),
        "http" => Some(80),
        _ => None,
    }
}

/// The component listening at `url` on this machine, or why it cannot be measured.
pub fn locate(name: &str, role: Role, target: &str, url: &str) -> Component {
    let (pid, note) = match local_port(url) {
        None => (None, Some(format!("{url} is not on this machine"))),
        Some(port) => match procstat::listening_pid(port) {
            Some(pid) => (Some(pid), None),
            None => (None, Some(format!("no readable process listens on port {port}"))),
        },
    };
    Component { name: name.into(), role, target: Some(target.into()), pid, note }
}

struct Sample {
    at: f64,
    machine_busy: Option<f64>,
    cpu: Vec<Option<f64>>,
}

pub struct Sampler {
    pub components: Vec<Component>,
    samples: Vec<Sample>,
    origin: Instant,
}

impl Sampler {
    /// `origin`: the moment k6 was started; sample times are seconds after it.
    pub fn new(components: Vec<Component>, origin: Instant) -> Self {
        Self { components, samples: Vec::new(), origin }
    }

    pub fn sample(&mut self) {
        let cpu = self.components.iter().map(|c| c.pid.and_then(procstat::tree_cpu_seconds)).collect();
        let machine_busy = procstat::machine_cpu().map(|m| m.busy_seconds);
        self.samples.push(Sample { at: self.origin.elapsed().as_secs_f64(), machine_busy, cpu });
    }

    /// Linear interpolation of a cumulative series at `at`, clamped to the sampled span.
    fn value_at(&self, at: f64, pick: impl Fn(&Sample) -> Option<f64>) -> Option<f64> {
        let points: Vec<(f64, f64)> = self.samples.iter().filter_map(|s| Some((s.at, pick(s)?))).collect();
        let first = *points.first()?;
        let last = *points.last()?;
        if at <= first.0 {
            return Some(first.1);
        }
        if at >= last.0 {
            return Some(last.1);
        }
        let after = points.iter().position(|p| p.0 >= at)?;
        let (a, b) = (points[after - 1], points[after]);
        Some(a.1 + (b.1 - a.1) * (at - a.0) / (b.0 - a.0).max(1e-9))
    }

    /// The report: `k6_seconds` is k6's exact total when known (it is reaped before the last
    /// sample); `scenario_start` is when the first step began, seconds after the origin.
    pub fn report(
        &self,
        k6_seconds: Option<f64>,
        scenario_start: f64,
        steps: &[OfferedStep],
        requests: &BTreeMap<String, u64>,
    ) -> CpuReport {
        let (Some(first), Some(last)) = (self.samples.first(), self.samples.last()) else {
            return CpuReport::default();
        };
        let wall = (last.at - first.at).max(1e-9);
        let total_requests: u64 = requests.values().sum();
        let components: Vec<ComponentCpu> = self
            .components
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let sampled = self.value_at(f64::INFINITY, |s| s.cpu[i]).zip(self.value_at(0.0, |s| s.cpu[i]));
                let mut seconds = sampled.map(|(end, start)| end - start);
                if c.role == Role::LoadGenerator {
                    // A new process: everything it used counts, and the exact total beats the samples.
                    seconds = k6_seconds.or(sampled.map(|(end, _)| end));
                }
                let n = c.target.as_ref().map_or(total_requests, |t| requests.get(t).copied().unwrap_or(0));
                ComponentCpu {
                    name: c.name.clone(),
                    role: c.role,
                    target: c.target.clone(),
                    note: if seconds.is_none() { c.note.clone().or(Some("not measured".into())) } else { None },
                    cpu_seconds: seconds,
                    cores_used: seconds.map(|s| s / wall),
                    per_1k_requests: seconds.filter(|_| n > 0).map(|s| s / (n as f64 / 1000.0)),
                }
            })
            .collect();
        let machine_busy_seconds = last.machine_busy.zip(first.machine_busy).map(|(end, start)| end - start);
        let known: f64 = components.iter().filter_map(|c| c.cpu_seconds).sum();
        let step_cpu = steps
            .iter()
            .enumerate()
            .filter(|(_, s)| scenario_start + s.to_s <= last.at + 0.25)
            .map(|(index, s)| {
                let (from, to) = (scenario_start + s.from_s, scenario_start + s.to_s);
                let span = (s.to_s - s.from_s).max(1e-9);
                let rate = |pick: &dyn Fn(&Sample) -> Option<f64>| {
                    Some((self.value_at(to, pick)? - self.value_at(from, pick)?) / span)
                };
                let cores = self
                    .components
                    .iter()
                    .enumerate()
                    .filter_map(|(i, c)| Some((c.name.clone(), rate(&|x: &Sample| x.cpu[i])?)))
                    .collect();
                StepCpu { step: index, rate: s.rate, machine_busy_cores: rate(&|x: &Sample| x.machine_busy), cores }
            })
            .collect();
        CpuReport {
            cores: procstat::cores(),
            seconds: wall,
            machine_busy_seconds,
            other_seconds: machine_busy_seconds.map(|m| (m - known).max(0.0)),
            components,
            steps: step_cpu,
            limits: BTreeMap::new(),
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuReport {
    pub cores: usize,
    /// Wall seconds the samples span.
    pub seconds: f64,
    pub machine_busy_seconds: Option<f64>,
    /// Busy seconds of the machine not used by any measured component.
    pub other_seconds: Option<f64>,
    pub components: Vec<ComponentCpu>,
    pub steps: Vec<StepCpu>,
    /// Per target, what limited it at its first failing step.
    pub limits: BTreeMap<String, Limit>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ComponentCpu {
    pub name: String,
    pub role: Role,
    pub target: Option<String>,
    pub note: Option<String>,
    pub cpu_seconds: Option<f64>,
    pub cores_used: Option<f64>,
    pub per_1k_requests: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepCpu {
    pub step: usize,
    pub rate: u32,
    pub machine_busy_cores: Option<f64>,
    /// Cores used by each component during the step.
    pub cores: BTreeMap<String, f64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LimitKind {
    LoadGenerator,
    Service,
    Database,
    /// The machine had idle CPU: the target waited on something else (disk flushes, locks).
    NotCpu,
    Unknown,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Limit {
    pub step: usize,
    pub rate: u32,
    pub kind: LimitKind,
    pub text: String,
}

/// Saturated: at least this share of all cores busy (queues, and so latency, grow well before a
/// machine is 100% busy; a step's average also hides its busiest moments).
const SATURATED: f64 = 0.8;

/// What limited `target` at the step it first failed, from that step's CPU.
pub fn limit(target: &str, step: &StepCpu, components: &[Component], cores: usize) -> Limit {
    let find = |role: Role| {
        components
            .iter()
            .find(|c| c.role == role && (role == Role::LoadGenerator || c.target.as_deref() == Some(target)))
            .and_then(|c| Some((c.name.clone(), step.cores.get(&c.name).copied()?)))
    };
    let parts: Vec<(LimitKind, (String, f64))> = [
        (LimitKind::LoadGenerator, find(Role::LoadGenerator)),
        (LimitKind::Service, find(Role::Service)),
        (LimitKind::Database, find(Role::Database)),
    ]
    .into_iter()
    .filter_map(|(kind, part)| Some((kind, part?)))
    .collect();
    let shares: Vec<String> = parts.iter().map(|(_, (name, c))| format!("{name} {c:.2}")).collect();
    let (kind, text) = match step.machine_busy_cores {
        None => (LimitKind::Unknown, "machine CPU not measured".to_owned()),
        Some(busy) if busy >= SATURATED * cores as f64 => {
            let top = parts.iter().max_by(|a, b| a.1.1.total_cmp(&b.1.1));
            let kind = top.map_or(LimitKind::Unknown, |(kind, _)| *kind);
            let who = top.map_or("unknown".to_owned(), |(_, (name, _))| name.clone());
            (
                kind,
                format!(
                    "the machine was (nearly) saturated ({busy:.2} of {cores} cores busy) and {who} used most [{}]",
                    shares.join(", ")
                ),
            )
        }
        Some(busy) => (
            LimitKind::NotCpu,
            format!(
                "only {busy:.2} of {cores} cores were busy, so it waited on something else [{}]",
                shares.join(", ")
            ),
        ),
    };
    Limit { step: step.step, rate: step.rate, kind, text }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_ports_come_from_urls_on_this_machine_only() {
        assert_eq!(local_port("postgres://postgres@127.0.0.1:55432/orders"), Some(55432));
        assert_eq!(local_port("mongodb://localhost"), Some(27017));
        assert_eq!(local_port("mongodb://127.0.0.1:57017,127.0.0.1:57018/?replicaSet=r"), Some(57017));
        assert_eq!(local_port("http://127.0.0.1:8080/"), Some(8080));
        assert_eq!(local_port("http://10.0.0.5:8080"), None);
        assert_eq!(local_port("no url"), None);
    }

    fn parts() -> Vec<Component> {
        let c = |name: &str, role, target: Option<&str>| Component {
            name: name.into(),
            role,
            target: target.map(str::to_owned),
            pid: Some(1),
            note: None,
        };
        vec![
            c("postgres", Role::Database, Some("pg")),
            c("orders-pg", Role::Service, Some("pg")),
            c("mongod", Role::Database, Some("mongo")),
            c("k6", Role::LoadGenerator, None),
        ]
    }

    fn step(busy: f64, k6: f64, service: f64, db: f64) -> StepCpu {
        let cores = [("k6", k6), ("orders-pg", service), ("postgres", db), ("mongod", 0.5)];
        StepCpu {
            step: 3,
            rate: 400,
            machine_busy_cores: Some(busy),
            cores: cores.iter().map(|(n, c)| ((*n).to_owned(), *c)).collect(),
        }
    }

    #[test]
    fn a_saturated_machine_blames_the_largest_of_k6_service_and_database() {
        assert_eq!(limit("pg", &step(1.95, 0.9, 0.2, 0.4), &parts(), 2).kind, LimitKind::LoadGenerator);
        assert_eq!(limit("pg", &step(1.95, 0.3, 0.6, 0.4), &parts(), 2).kind, LimitKind::Service);
        let db = limit("pg", &step(1.9, 0.3, 0.2, 0.9), &parts(), 2);
        assert_eq!((db.kind, db.rate), (LimitKind::Database, 400));
        assert!(db.text.contains("postgres 0.90"), "{}", db.text);
    }

    #[test]
    fn idle_cores_mean_the_limit_was_not_cpu() {
        assert_eq!(limit("pg", &step(1.5, 0.3, 0.2, 0.4), &parts(), 2).kind, LimitKind::NotCpu);
        assert_eq!(limit("pg", &step(1.6, 0.3, 0.2, 0.4), &parts(), 2).kind, LimitKind::Database, "80% counts");
    }

    #[test]
    fn the_sampler_measures_this_process() {
        let me = Component {
            name: "me".into(),
            role: Role::Service,
            target: Some("pg".into()),
            pid: Some(std::process::id()),
            note: None,
        };
        let mut sampler = Sampler::new(vec![me], Instant::now());
        sampler.sample();
        let spin = Instant::now();
        while spin.elapsed().as_millis() < 60 {
            std::hint::black_box(spin.elapsed());
        }
        sampler.sample();
        let report = sampler.report(None, 0.0, &[], &BTreeMap::from([("pg".to_owned(), 2000)]));
        let me = &report.components[0];
        assert!(me.cpu_seconds.is_some_and(|s| s >= 0.0), "{me:?}");
        assert_eq!(me.per_1k_requests, me.cpu_seconds.map(|s| s / 2.0));
    }
}
