//! The figures a round's limits rest on, for its section of the report: the budgets the databases
//! ran under (from the kernel), per repeat a table of every step's busy cores, each component's
//! cores and each database's use of its budget and throttling, and what the runner's own
//! sampling of the databases cost.

use super::doc::Block;
use super::format::{self, NONE};
use orders_bench_model::cpu::{self, CpuReport, StepCpu};
use orders_bench_model::result::RoundResult;

/// "0.25 CPU and 4.0 GiB each (cgroup v1, 10 ms quota period); caches: postgres 1.0 GiB, mongod 1.5 GiB".
pub fn budget_paragraph(round: &RoundResult) -> Option<Block> {
    let label = round.budget.as_deref()?;
    let caches: Vec<String> = round
        .repeats
        .first()
        .map(|r| {
            r.cpu
                .budgets
                .iter()
                .filter_map(|(name, b)| Some(format!("{name} {}", super::format::bytes(b.cache_bytes? as f64))))
                .collect()
        })
        .unwrap_or_default();
    let caches = if caches.is_empty() { String::new() } else { format!("; engine caches: {}", caches.join(", ")) };
    Some(Block::Paragraph(format!("Database budgets: {label}{caches}.{}", generator_sentence(round))))
}

/// " The load generator: native, SCHED_FIFO 1." (each different one once), or nothing.
fn generator_sentence(round: &RoundResult) -> String {
    let mut seen: Vec<String> = Vec::new();
    for generator in round.repeats.iter().filter_map(|r| r.load_generator.as_ref()) {
        let text = match &generator.scheduling {
            Some(scheduling) => format!("{}, {scheduling}", generator.kind),
            None => generator.kind.clone(),
        };
        if !seen.contains(&text) {
            seen.push(text);
        }
    }
    if seen.is_empty() { String::new() } else { format!(" The load generator: {}.", seen.join("; ")) }
}

/// "0.25/0.25 · 81%" for a database with kernel figures, else its cores.
fn database_cell(step: &StepCpu, name: &str) -> String {
    let Some(db) = step.databases.get(name) else {
        return step.cores.get(name).map_or(NONE.into(), |c| format!("{c:.2}"));
    };
    let cores = db.cores.map_or(NONE.into(), |c| format!("{c:.2}"));
    let budget = db.budget_cores.map_or("∞".to_owned(), |b| format!("{b:.2}"));
    let throttled = db.throttled_share.map_or(String::new(), |s| format!(" · {:.0}%", s * 100.0));
    format!("{cores}/{budget}{throttled}")
}

fn busy_cell(step: &StepCpu) -> String {
    match (step.machine_busy_cores, step.components_cores) {
        (Some(busy), Some(parts)) if parts > busy + 0.05 => format!("{busy:.2} (processes {parts:.2})"),
        (busy, _) => format::seconds(busy, 2),
    }
}

/// One repeat's steps: busy cores, each component's, the databases against their budgets.
pub fn steps_table(cpu: &CpuReport) -> Option<Block> {
    if cpu.steps.is_empty() {
        return None;
    }
    let names: Vec<&str> = cpu.components.iter().map(|c| c.name.as_str()).collect();
    let mut header = vec!["offered req/s".to_owned(), format!("busy cores (of {})", cpu.cores)];
    for name in &names {
        let database = cpu.steps.iter().any(|s| s.databases.contains_key(*name));
        header.push(if database { format!("{name} cores/budget · throttled") } else { (*name).to_owned() });
    }
    let rows = cpu
        .steps
        .iter()
        .map(|step| {
            let mut row = vec![format::count(f64::from(step.rate)), busy_cell(step)];
            row.extend(names.iter().map(|name| database_cell(step, name)));
            if let Some(lag) = step.generator.as_ref().and_then(|g| g.schedule_lag_p99_ms) {
                row[1].push_str(&format!(" (generator p99 lag {lag:.1} ms)"));
            }
            row
        })
        .collect();
    Some(Block::Table { header, rows })
}

/// "12 PostgreSQL queries, 24 MongoDB commands": what the runner sent each database itself (by
/// `<target>_<unit>`).
fn sent_words(round: &RoundResult, probe: &orders_bench_model::cpu::ProbeCost) -> String {
    let words: Vec<String> = probe
        .sent
        .iter()
        .map(|(key, n)| match key.split_once('_') {
            Some((target, unit)) => format!("{n} {} {unit}", round.label(target)),
            None => format!("{n} {key}"),
        })
        .collect();
    words.join(", ")
}

/// What the runner's own sampling cost: its queries per step and its measured CPU.
pub fn runner_cost(round: &RoundResult, cpu: &CpuReport) -> Option<String> {
    let probe = cpu.probe.as_ref()?;
    let steps = cpu.steps.len().max(1) as f64;
    let sent = probe.sent.values().sum::<u64>() + probe.service_diagnostics;
    let runner = cpu.components.iter().find(|c| c.name == cpu::RUNNER);
    let via_services = if probe.service_diagnostics > 0 {
        format!(", {} /diagnostics requests to the services", probe.service_diagnostics)
    } else {
        String::new()
    };
    let notes = if probe.notes.is_empty() { String::new() } else { format!(" ({})", probe.notes.join("; ")) };
    Some(format!(
        "the runner sampled the databases {} times, every {:.1} s, from its own connections ({}{via_services}: {:.1} \
         per step){notes}; its own CPU, sampling and live readings included: {} s ({} cores)",
        probe.samples,
        probe.interval_seconds,
        sent_words(round, probe),
        sent as f64 / steps,
        format::seconds(runner.and_then(|r| r.cpu_seconds), 1),
        format::seconds(runner.and_then(|r| r.cores_used), 3),
    ))
}

/// The blocks for one round: per repeat the steps table and the runner's cost.
pub fn blocks(round: &RoundResult) -> Vec<Block> {
    let mut blocks = Vec::new();
    for repeat in &round.repeats {
        if let Some(table) = steps_table(&repeat.cpu) {
            blocks.push(Block::Paragraph(format!("CPU per step, repeat {}:", repeat.index)));
            blocks.push(table);
        }
    }
    let costs: Vec<String> = round
        .repeats
        .iter()
        .filter_map(|r| Some(format!("repeat {}: {}", r.index, runner_cost(round, &r.cpu)?)))
        .collect();
    if !costs.is_empty() {
        blocks.push(Block::List(costs));
    }
    blocks
}
