//! Who used the CPU during a run, when the databases, services and the load generator share this
//! machine: each component is found by the port it listens on (services by their URL, databases by
//! theirs; k6 is our child), sampled every half second, and reported as CPU seconds, average cores
//! and CPU seconds per 1,000 requests (a database and its service per request of their target, the
//! load generator and the runner per request of both).
//!
//! A database in a cgroup of its own (a budget of `infra/local/stack.sh`) is measured by the
//! kernel's accounting of that cgroup (`orders_budget`): exact CPU time, and per step the share of
//! its quota periods it was throttled in and the seconds it lost to throttling, beside its budget.
//! Everything else comes from `/proc` (a process tree's user + system time, the machine's busy
//! time). The runner is this process's own threads. Per step, these figures let `limit` name what
//! limited a target where it first failed.

use crate::budget::record::DbBudget;
use crate::procstat;
use orders_bench_model::cpu::{Component, ComponentCpu, CpuReport, DbStep, Role, StepCpu};
use orders_budget::{Placement, Reading};
use orders_loadgen::summary::{LoadGenerator, OfferedStep};
use std::collections::BTreeMap;
use std::time::Instant;

/// A database's cgroup, and whether its counters are the server's alone.
struct Account {
    placement: Placement,
    dedicated: bool,
}

struct Sample {
    at: f64,
    machine_busy: Option<f64>,
    /// The same counted process by process (`procstat::processes_cpu`).
    processes: Option<f64>,
    /// What processes outside the components' trees used (`procstat::processes_cpu`).
    others: Option<f64>,
    cpu: Vec<Option<f64>>,
    kernel: Vec<Option<Reading>>,
    /// The databases' context switches so far (voluntary, involuntary), as counts.
    switches: Vec<Option<(f64, f64)>>,
}

pub struct Sampler {
    pub components: Vec<Component>,
    samples: Vec<Sample>,
    origin: Instant,
    accounts: Vec<Option<Account>>,
}

impl Sampler {
    /// `origin`: the moment the load generator was started; sample times are seconds after it.
    pub fn new(components: Vec<Component>, origin: Instant) -> Self {
        let accounts = components
            .iter()
            .map(|c| {
                let pid = c.pid.filter(|_| c.role == Role::Database)?;
                let placement = orders_budget::placement(pid)?;
                let dedicated = placement.holds_only(&procstat::tree_pids(pid));
                Some(Account { placement, dedicated })
            })
            .collect();
        Self { components, samples: Vec::new(), origin, accounts }
    }

    fn account(&self, index: usize) -> Option<&Account> {
        self.accounts.get(index).and_then(Option::as_ref)
    }

    pub fn sample(&mut self) {
        let kernel: Vec<Option<Reading>> =
            (0..self.components.len()).map(|i| self.account(i).map(|a| a.placement.read())).collect();
        let cpu = self
            .components
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let pid = c.pid?;
                match (c.role, self.account(i), kernel[i]) {
                    (Role::Runner, _, _) => procstat::own_cpu_seconds(pid),
                    (_, Some(account), Some(reading)) if account.dedicated && reading.usage_seconds.is_some() => {
                        reading.usage_seconds
                    }
                    _ => procstat::tree_cpu_seconds(pid),
                }
            })
            .collect();
        let switches = self
            .components
            .iter()
            .map(|c| {
                let pid = c.pid.filter(|_| c.role == Role::Database)?;
                procstat::tree_switches(pid).map(|(v, i)| (v as f64, i as f64))
            })
            .collect();
        let machine_busy = procstat::machine_cpu().map(|m| m.busy_seconds);
        let roots: Vec<u32> = self.components.iter().filter_map(|c| c.pid).collect();
        let counted = procstat::processes_cpu(&roots);
        let (processes, others) = (counted.map(|c| c.all), counted.map(|c| c.others));
        let at = self.origin.elapsed().as_secs_f64();
        self.samples.push(Sample { at, machine_busy, processes, others, cpu, kernel, switches });
    }

    /// The budget every database ran under, as the kernel reported it at the last sample.
    pub fn budgets(&self) -> BTreeMap<String, DbBudget> {
        let last = self.samples.last();
        self.components
            .iter()
            .enumerate()
            .filter(|(_, c)| c.role == Role::Database)
            .map(|(i, c)| {
                let reading = last.and_then(|s| s.kernel.get(i).copied().flatten()).unwrap_or_default();
                let budget = match (self.account(i), c.pid) {
                    (Some(account), _) => {
                        crate::budget::record::from_kernel(&account.placement, &reading, account.dedicated)
                    }
                    (None, Some(_)) => DbBudget::not_here("its cgroup could not be read"),
                    (None, None) => DbBudget::not_here(c.note.as_deref().unwrap_or("not measured")),
                };
                (c.name.clone(), budget)
            })
            .collect()
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

    /// The largest sampled value between `from` and `to`.
    fn max_in(&self, from: f64, to: f64, pick: impl Fn(&Sample) -> Option<f64>) -> Option<f64> {
        self.samples.iter().filter(|s| s.at >= from && s.at <= to).filter_map(pick).reduce(f64::max)
    }

    /// A database's kernel figures over one step.
    fn database_step(&self, index: usize, from: f64, to: f64) -> Option<DbStep> {
        self.account(index).filter(|a| a.dedicated)?;
        let kernel = |pick: fn(&Reading) -> Option<f64>| {
            move |s: &Sample| s.kernel.get(index).copied().flatten().and_then(|r| pick(&r))
        };
        let delta = |pick: fn(&Reading) -> Option<f64>| {
            Some(self.value_at(to, kernel(pick))? - self.value_at(from, kernel(pick))?)
        };
        let span = (to - from).max(1e-9);
        let switches = |pick: fn((f64, f64)) -> f64| {
            let at = |t: f64| self.value_at(t, |s: &Sample| s.switches.get(index).copied().flatten().map(pick));
            Some(at(to)? - at(from)?)
        };
        let periods = delta(|r| r.periods.map(|p| p as f64));
        let throttled = delta(|r| r.throttled_periods.map(|p| p as f64));
        Some(DbStep {
            cores: delta(|r| r.usage_seconds).map(|s| s / span),
            budget_cores: self.value_at(to, kernel(|r| r.quota_cores)),
            periods,
            throttled_share: throttled.zip(periods).filter(|(_, p)| *p >= 1.0).map(|(t, p)| (t / p).clamp(0.0, 1.0)),
            throttled_seconds: delta(|r| r.throttled_seconds),
            memory_peak_bytes: self.max_in(from, to, kernel(|r| r.memory_bytes.map(|b| b as f64))),
            memory_limit_bytes: self.value_at(to, kernel(|r| r.memory_limit_bytes.map(|b| b as f64))),
            voluntary_switches: switches(|(v, _)| v),
            involuntary_switches: switches(|(_, i)| i),
        })
    }

    /// The report: `k6_seconds` is k6's exact total when known (it is reaped before the last
    /// sample); `scenario_start` is when the first step began, seconds after the origin;
    /// `generator` the load generator's own per-step figures, when its summary has them.
    pub fn report(
        &self,
        k6_seconds: Option<f64>,
        scenario_start: f64,
        steps: &[OfferedStep],
        requests: &BTreeMap<String, u64>,
        generator: Option<&LoadGenerator>,
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
        // The larger of the two counts of the machine's busy time: `/proc/stat` misses short bursts
        // on a tickless virtual machine, the processes miss what the kernel does outside them.
        let span = |pick: fn(&Sample) -> Option<f64>| pick(last).zip(pick(first)).map(|(end, start)| end - start);
        let machine_busy_seconds = larger(span(|s| s.machine_busy), span(|s| s.processes));
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
                let cores: BTreeMap<String, f64> = self
                    .components
                    .iter()
                    .enumerate()
                    .filter_map(|(i, c)| Some((c.name.clone(), rate(&|x: &Sample| x.cpu[i])?)))
                    .collect();
                let databases = self
                    .components
                    .iter()
                    .enumerate()
                    .filter_map(|(i, c)| Some((c.name.clone(), self.database_step(i, from, to)?)))
                    .collect();
                StepCpu {
                    step: index,
                    rate: s.rate,
                    machine_busy_cores: larger(rate(&|x: &Sample| x.machine_busy), rate(&|x: &Sample| x.processes)),
                    components_cores: Some(cores.values().sum()),
                    others_cores: rate(&|x: &Sample| x.others),
                    cores,
                    databases,
                    generator: generator.and_then(|g| g.at_step(index, span)),
                }
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
            budgets: self.budgets(),
            probe: None,
        }
    }
}

fn larger(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let report = sampler.report(None, 0.0, &[], &BTreeMap::from([("pg".to_owned(), 2000)]), None);
        let me = &report.components[0];
        assert!(me.cpu_seconds.is_some_and(|s| s >= 0.0), "{me:?}");
        assert_eq!(me.per_1k_requests, me.cpu_seconds.map(|s| s / 2.0));
    }
    /// A CPU burner in a budget of 0.3 CPU made through `orders_budget` (as `stack.sh` makes the
    /// databases'); needs root and cgroups, and says so where they are missing.
    #[test]
    fn the_cpu_sampler_reports_a_budgeted_databases_use_and_throttling_per_step() {
        use orders_bench_model::cpu::{Component, Role};
        use orders_budget::{Limits, Method, apply};
        use std::os::unix::process::CommandExt as _;
        use std::time::Duration;
        let method = Method::detect();
        if !matches!(method, Method::CgroupV1(_) | Method::CgroupV2(_)) {
            eprintln!("SKIPPED: no root cgroup budgets here: {method:?}");
            return;
        }
        let name = format!("test-sampler-{}", std::process::id());
        let mut burner =
            std::process::Command::new("sh").args(["-c", "while :; do :; done"]).process_group(0).spawn().expect("sh");
        let pid = burner.id();
        let budgeted = apply::set(&method, &name, Limits { cpus: Some(0.3), memory: Some(512 << 20) })
            .and_then(|()| apply::move_tree(&method, &name, pid));
        let database = Component {
            name: "burner".into(),
            role: Role::Database,
            target: Some("pg".into()),
            pid: Some(pid),
            note: None,
        };
        let mut sampler = Sampler::new(vec![database], Instant::now());
        for _ in 0..5 {
            sampler.sample();
            std::thread::sleep(Duration::from_millis(400));
        }
        sampler.sample();
        let _ = burner.kill();
        let _ = burner.wait();
        std::thread::sleep(Duration::from_millis(100));
        let _ = apply::remove(&method, &name);
        budgeted.expect("the burner in its budget");
        let steps =
            [OfferedStep { from_s: 0.0, to_s: 1.0, rate: 100 }, OfferedStep { from_s: 1.0, to_s: 2.0, rate: 200 }];
        let report = sampler.report(None, 0.0, &steps, &BTreeMap::from([("pg".to_owned(), 300)]), None);

        let budget = &report.budgets["burner"];
        assert_eq!((budget.cpus, budget.memory_bytes, budget.dedicated), (Some(0.3), Some(512 << 20), true));
        assert_eq!(budget.period_ms, Some(10.0));
        for step in &report.steps {
            let db = &step.databases["burner"];
            eprintln!("step {}: {db:?}", step.step);
            let cores = db.cores.expect("cores");
            assert!((0.15..=0.33).contains(&cores), "step {}: {cores:.3} cores under a 0.3 budget", step.step);
            assert_eq!(db.budget_cores, Some(0.3));
            assert!(db.throttled_share.is_some_and(|s| s > 0.5), "{db:?}");
            assert!(db.throttled_seconds.is_some_and(|s| s > 0.0), "{db:?}");
            assert_eq!(step.cores["burner"], cores, "the database's cores are the kernel's");
        }
    }
}
