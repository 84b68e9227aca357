//! The load machines of a round that ran on several (`round --followers`): per repeat and step,
//! what each machine offered (its segment's share of the rate), achieved and dropped per target,
//! and how busy its k6 and the whole machine were, then the merged row the steps table judges. A
//! machine with nearly all its cores busy was a limit itself, and the report shows it here.

use super::doc::Block;
use super::format::{self, NONE};
use orders_bench_model::fleet::MachineRun;
use orders_bench_model::result::{RepeatResult, RoundResult};
use orders_bench_model::target::TargetInfo;

fn rate(value: f64) -> String {
    if value >= 100.0 { format::count(value) } else { format!("{value:.1}") }
}

fn cores(used: Option<f64>, of: Option<usize>) -> String {
    match (used, of) {
        (Some(used), Some(of)) => format!("{used:.2} of {of}"),
        (Some(used), None) => format!("{used:.2}"),
        _ => NONE.into(),
    }
}

fn machine_rows(
    targets: &[TargetInfo],
    repeat: &RepeatResult,
    machine: &MachineRun,
    rows: &mut Vec<Vec<String>>,
    step: usize,
) {
    let Some(s) = machine.steps.iter().find(|s| s.step == step) else { return };
    let figure = |t: &TargetInfo, pick: &dyn Fn(&orders_bench_model::fleet::MachineFigures) -> String| {
        s.targets.get(&t.name).map_or_else(|| NONE.to_owned(), pick)
    };
    let mut row = vec![
        repeat.index.to_string(),
        (step + 1).to_string(),
        format!("{} ({})", machine.host, machine.segment),
        rate(s.offered_rate),
    ];
    row.extend(targets.iter().map(|t| figure(t, &|f| rate(f.achieved_rate))));
    row.push(targets.iter().map(|t| figure(t, &|f| format::count(f.dropped as f64))).collect::<Vec<_>>().join(" / "));
    row.extend([cores(s.k6_cores, None), cores(s.machine_busy_cores, Some(machine.cores))]);
    rows.push(row);
}

fn merged_row(targets: &[TargetInfo], repeat: &RepeatResult, step: usize, rows: &mut Vec<Vec<String>>) {
    let steps: Vec<_> = targets.iter().map(|t| repeat.targets.get(&t.name).and_then(|r| r.steps.get(step))).collect();
    let offered = steps.iter().flatten().map(|s| s.rate).next().map_or(NONE.into(), |r| rate(f64::from(r)));
    let achieved = |i: usize| steps[i].map_or(NONE.into(), |s| rate(s.achieved_rate));
    let dropped = |i: usize| steps[i].map_or(NONE.into(), |s| format::count(s.dropped as f64));
    let fleet = repeat.fleet.as_ref();
    let k6: Option<f64> = fleet.and_then(|f| {
        f.machines.iter().map(|m| m.steps.iter().find(|s| s.step == step).and_then(|s| s.k6_cores)).sum::<Option<f64>>()
    });
    let mut row = vec![repeat.index.to_string(), (step + 1).to_string(), "**all machines**".into(), offered];
    row.extend((0..targets.len()).map(achieved));
    row.push((0..targets.len()).map(dropped).collect::<Vec<_>>().join(" / "));
    row.extend([cores(k6, None), NONE.into()]);
    rows.push(row);
}

pub fn blocks(round: &RoundResult) -> Vec<Block> {
    let with_fleet: Vec<&RepeatResult> = round.repeats.iter().filter(|r| r.fleet.is_some()).collect();
    let Some(first) = with_fleet.first().and_then(|r| r.fleet.as_ref()) else { return Vec::new() };
    let latest = with_fleet
        .iter()
        .flat_map(|r| r.fleet.iter().flat_map(|f| f.machines.iter().map(|m| m.late_ms)))
        .fold(0.0_f64, f64::max);
    let targets = round.targets();
    let mut rows = Vec::new();
    for repeat in &with_fleet {
        let Some(fleet) = &repeat.fleet else { continue };
        let steps = fleet.machines.iter().map(|m| m.steps.len()).max().unwrap_or(0);
        for step in 0..steps {
            if !repeat.targets.values().any(|t| t.steps.get(step).is_some_and(|s| s.count > 0)) {
                continue;
            }
            for machine in &fleet.machines {
                machine_rows(&targets, repeat, machine, &mut rows, step);
            }
            merged_row(&targets, repeat, step, &mut rows);
        }
    }
    vec![
        Block::Heading(3, "Load machines".into()),
        Block::Paragraph(format!(
            "Every repeat ran as {} k6 execution segments, one per load machine, resumed at the same moment (the \
             latest {:.0} ms after it); the steps above are their merged figures (latency percentiles of all \
             requests together). Per machine: its share of each step's rate per target, what it achieved and \
             dropped, the cores its k6 used and how busy the whole machine was: a machine with nearly all its \
             cores busy limited the round itself.",
            first.machines.len(),
            latest
        )),
        Block::Table {
            header: ["repeat", "step", "machine (segment)", "offered req/s per target"]
                .into_iter()
                .map(String::from)
                .chain(targets.iter().map(|t| format!("{} achieved", t.name)))
                .chain([
                    format!("dropped {}", targets.iter().map(|t| t.name.as_str()).collect::<Vec<_>>().join(" / ")),
                    "k6 cores".into(),
                    "machine busy cores".into(),
                ])
                .collect(),
            rows,
        },
    ]
}
