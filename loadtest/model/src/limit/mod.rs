//! What limited a target at the step it first failed, named from evidence and in this order:
//!
//! 1. **database**: its cgroup was throttled in at least a fifth of the step's quota periods while
//!    its CPU was at its budget (at least 75% of the quota on the step's average: a CPU-bound
//!    server's latency knee lies about there, and within the step the quota bit in one period of
//!    five): the budget bound, whatever else happened (the text says when the machine was
//!    saturated too);
//! 2. **load generator**: it fell behind its own schedule (p99 lag of 10 ms or more);
//! 3. the machine was **saturated** (busy cores at least 80% of all; a step's average hides its
//!    busiest moments, and queues grow well before 100%): the **load generator** or the target's
//!    **service** when one of them used at least 40% of the busy cores and more than anything
//!    else (its CPU near all it could get), otherwise the **machine**: everyone shared it and
//!    nobody was at a limit of its own (an unbudgeted database has none), or processes outside
//!    the comparison took it (the text names them);
//! 4. otherwise **not CPU**: cores were idle and the database was below its budget, so it waited
//!    on something else (disk flushes, locks).
//!
//! The busy cores are the larger of `/proc/stat`'s busy time and the measured components added
//! up: the two come from different counters, and a step that needed 2.2 cores of the
//! components on a 2-core machine was saturated whatever the machine counter said.

use crate::cpu::{Component, DbStep, Evidence, Limit, LimitKind, Role, StepCpu};

/// At least this share of all cores busy: saturated.
pub const SATURATED: f64 = 0.8;
/// A database at its budget: at least this share of its quota used...
pub const AT_BUDGET: f64 = 0.75;
/// ...and throttled in at least this share of its periods.
pub const THROTTLED: f64 = 0.2;
/// A load generator this late (p99) has fallen behind its schedule.
pub const LAG_MS: f64 = 10.0;
/// On a saturated machine, a component with this share of the busy cores (and the largest) took it.
pub const DOMINANT: f64 = 0.4;

impl Evidence {
    pub fn gather(target: &str, step: &StepCpu, components: &[Component], machine_cores: usize) -> Self {
        let find = |role: Role| {
            components
                .iter()
                .find(|c| c.role == role && (role == Role::LoadGenerator || c.target.as_deref() == Some(target)))
        };
        let cores_of = |c: Option<&Component>| c.and_then(|c| step.cores.get(&c.name).copied());
        let (database, service, generator) = (find(Role::Database), find(Role::Service), find(Role::LoadGenerator));
        let db: Option<&DbStep> = database.and_then(|d| step.databases.get(&d.name));
        let components_cores =
            step.components_cores.or_else(|| Some(step.cores.values().sum::<f64>()).filter(|s| *s > 0.0));
        // Without the machine's figure the idle cores are unknown: no busy figure at all.
        let busy_cores = step.machine_busy_cores.map(|machine| components_cores.map_or(machine, |p| machine.max(p)));
        let (database_cores, service_cores) =
            (db.and_then(|d| d.cores).or_else(|| cores_of(database)), cores_of(service));
        let generator_cores = step.generator.as_ref().and_then(|g| g.cores).or_else(|| cores_of(generator));
        let own: f64 = [database_cores, service_cores, cores_of(generator)].iter().flatten().sum();
        Self {
            machine_cores,
            machine_busy_cores: step.machine_busy_cores,
            components_cores,
            busy_cores,
            database: database.map(|c| c.name.clone()),
            database_cores,
            budget_cores: db.and_then(|d| d.budget_cores),
            throttled_share: db.and_then(|d| d.throttled_share),
            throttled_seconds: db.and_then(|d| d.throttled_seconds),
            service: service.map(|c| c.name.clone()),
            service_cores,
            generator: generator.map(|c| c.name.clone()),
            generator_cores,
            generator_lag_p99_ms: step.generator.as_ref().and_then(|g| g.schedule_lag_p99_ms),
            rest_cores: components_cores.map(|parts| (parts - own).max(0.0)),
            unmeasured_cores: step.machine_busy_cores.zip(components_cores).map(|(m, parts)| (m - parts).max(0.0)),
        }
    }

    fn database_at_budget(&self) -> bool {
        match (self.database_cores, self.budget_cores, self.throttled_share) {
            (Some(cores), Some(budget), Some(share)) => cores >= AT_BUDGET * budget && share >= THROTTLED,
            _ => false,
        }
    }

    /// "postgres 0.24 of its 0.25-core budget, throttled in 64% of its periods (1.9 s)".
    fn database_words(&self) -> String {
        let name = self.database.as_deref().unwrap_or("the database");
        let cores = self.database_cores.map_or("?".to_owned(), |c| format!("{c:.2}"));
        match self.budget_cores {
            None => format!("{name} ({cores} cores) had no CPU budget"),
            Some(budget) => format!(
                "{name} used {cores} of its {budget:.2}-core budget, throttled in {} of its quota periods ({} s)",
                self.throttled_share.map_or("?".to_owned(), |s| format!("{:.0}%", s * 100.0)),
                self.throttled_seconds.map_or("?".to_owned(), |s| format!("{s:.1}"))
            ),
        }
    }

    /// "k6 0.90, orders-pg 0.35, postgres 0.35, the other target and the runner 0.62, other
    /// processes 0.05".
    fn shares(&self) -> String {
        let rest = Some("the other target and the runner".to_owned());
        let unmeasured = Some("other processes".to_owned());
        let parts = [
            (&self.generator, self.generator_cores),
            (&self.service, self.service_cores),
            (&self.database, self.database_cores),
            (&rest, self.rest_cores),
            (&unmeasured, self.unmeasured_cores.filter(|c| *c >= 0.01)),
        ];
        let listed: Vec<String> =
            parts.iter().filter_map(|(name, cores)| Some(format!("{} {:.2}", name.as_deref()?, (*cores)?))).collect();
        listed.join(", ")
    }

    /// "1.30 of 2 cores busy", with a note when the two sources of that figure disagree.
    fn busy_words(&self, busy: f64) -> String {
        let mut words = format!("{busy:.2} of {} cores busy", self.machine_cores);
        if let (Some(machine), Some(parts)) = (self.machine_busy_cores, self.components_cores)
            && parts > machine + 0.05 * self.machine_cores as f64
        {
            words.push_str(&format!(
                "; the processes add up to {parts:.2} cores, more than the {machine:.2} /proc/stat counted busy, so the \
                 larger is used"
            ));
        }
        words
    }
}

/// What limited `target` at the step it first failed, from that step's figures.
pub fn limit(target: &str, step: &StepCpu, components: &[Component], cores: usize) -> Limit {
    let evidence = Evidence::gather(target, step, components, cores);
    let (kind, text) = judge(&evidence);
    Limit { step: step.step, rate: step.rate, kind, text, evidence: Some(evidence) }
}

fn judge(e: &Evidence) -> (LimitKind, String) {
    let n = e.machine_cores as f64;
    let saturated = e.busy_cores.map(|b| b >= SATURATED * n);
    if e.database_at_budget() {
        let around = match (e.busy_cores, saturated) {
            (Some(busy), Some(true)) => format!(
                "; the machine was saturated too ({}: {}), so the load path may have added latency",
                e.busy_words(busy),
                e.shares()
            ),
            (Some(busy), _) => format!("; the load path had headroom ({}: {})", e.busy_words(busy), e.shares()),
            (None, _) => String::new(),
        };
        return (LimitKind::Database, format!("{} — at its budget{around}", e.database_words()));
    }
    if let Some(lag) = e.generator_lag_p99_ms.filter(|lag| *lag >= LAG_MS) {
        let name = e.generator.as_deref().unwrap_or("the load generator");
        return (
            LimitKind::LoadGenerator,
            format!("{name} fell behind its schedule (p99 {lag:.1} ms late) [{}]", e.shares()),
        );
    }
    let Some(busy) = e.busy_cores else {
        return (LimitKind::Unknown, format!("machine CPU not measured; {}", e.database_words()));
    };
    if saturated != Some(true) {
        return (
            LimitKind::NotCpu,
            format!(
                "only {} and {}: it waited on something else (disk flushes, locks, or a stall of the machine that \
                 the step's average hides) [{}]",
                e.busy_words(busy),
                e.database_words(),
                e.shares()
            ),
        );
    }
    let unmeasured = Some("other processes on this machine".to_owned());
    let contenders = [
        (LimitKind::LoadGenerator, &e.generator, e.generator_cores),
        (LimitKind::Service, &e.service, e.service_cores),
        (LimitKind::Database, &e.database, e.database_cores),
        (LimitKind::Machine, &unmeasured, e.unmeasured_cores),
    ];
    let top = contenders
        .iter()
        .filter_map(|(kind, name, cores)| Some((*kind, name.as_deref()?, (*cores)?)))
        .max_by(|a, b| a.2.total_cmp(&b.2));
    match top {
        Some((kind @ (LimitKind::LoadGenerator | LimitKind::Service), name, cores)) if cores >= DOMINANT * busy => (
            kind,
            format!(
                "the machine was saturated ({}) and {name} took the most of it, {cores:.2} cores [{}]; {}",
                e.busy_words(busy),
                e.shares(),
                e.database_words()
            ),
        ),
        Some((LimitKind::Machine, name, cores)) if cores >= DOMINANT * busy => (
            LimitKind::Machine,
            format!(
                "the machine was saturated ({}) and {name} took the most of it, {cores:.2} cores [{}]; {}",
                e.busy_words(busy),
                e.shares(),
                e.database_words()
            ),
        ),
        _ => (
            LimitKind::Machine,
            format!(
                "the machine was saturated ({}: {}) and nobody was at a limit of its own: {}",
                e.busy_words(busy),
                e.shares(),
                e.database_words()
            ),
        ),
    }
}

#[cfg(test)]
mod tests;
