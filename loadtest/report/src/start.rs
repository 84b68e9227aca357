//! How each repeat of a round started, in the report: how the data were reset, whether both
//! databases were quiet when the load began (and what was not), the data's fingerprint (the same in
//! every repeat when the data were), the memory each server's cgroup held and the page cache the
//! runner wrote to disk before the load, and the lead-in each target answered before the staircase.

use super::doc::Block;
use super::format::{self, NONE};
use orders_bench_model::result::RoundResult;
use orders_bench_model::start::StartState;

/// " (121 MiB of page cache written first, 0.8 s)": what the runner's `sync` wrote before the
/// quiet windows, when it recorded that.
fn flushed(start: &StartState) -> String {
    match (start.unwritten_mib_flushed, start.flush_seconds) {
        (Some(mib), Some(seconds)) => format!(" ({mib:.0} MiB of page cache written first, {seconds:.1} s)"),
        _ => String::new(),
    }
}

/// "340 req/s for 4 s: PostgreSQL 12.1 ms, MongoDB 3.2 ms": the lead-in's rate and each target's
/// p95 in it.
fn lead_in_words(start: &StartState, targets: &[orders_bench_model::target::TargetInfo]) -> String {
    let Some(lead_in) = &start.lead_in else { return NONE.into() };
    let each: Vec<String> = targets
        .iter()
        .map(|t| {
            let p95 = lead_in.targets.get(&t.name).and_then(|x| x.p95_ms);
            format!("{} {}", t.label, p95.map_or(NONE.to_owned(), |ms| format!("{ms:.1} ms")))
        })
        .collect();
    format!("{} req/s for {:.0} s: {}", lead_in.rate, lead_in.seconds, each.join(", "))
}

pub fn blocks(round: &RoundResult) -> Vec<Block> {
    let starts: Vec<(u32, &StartState)> =
        round.repeats.iter().filter_map(|r| Some((r.index, r.start.as_ref()?))).collect();
    if starts.is_empty() {
        return Vec::new();
    }
    let targets = round.targets();
    let lead_ins = starts.iter().any(|(_, s)| s.lead_in.is_some());
    let mut blocks = vec![Block::Heading(3, "How each repeat started".into())];
    let rows = starts
        .iter()
        .map(|(index, start)| {
            let short = |f: Option<&String>| f.map_or(NONE.into(), |f| f.chars().take(8).collect::<String>());
            let mut row = vec![
                index.to_string(),
                format!(
                    "{} ({} s{})",
                    start.reset,
                    format::seconds(start.reset_seconds, 1),
                    start
                        .cpu_budget_lifted
                        .as_ref()
                        .map_or(String::new(), |cpus| format!(", CPU budget of {cpus} lifted until the quiet check"))
                ),
                if start.quiet {
                    format!("yes, after {:.1} s{}", start.waited_seconds, flushed(start))
                } else {
                    format!(
                        "**no** after {:.0} s{}: {}",
                        start.waited_seconds,
                        flushed(start),
                        start.not_quiet.join("; ")
                    )
                },
            ];
            if lead_ins {
                row.push(lead_in_words(start, &targets));
            }
            for target in &targets {
                let entry = start.databases.get(&target.name);
                row.push(format!(
                    "{} · {} orders · {} disk · {} memory · {} cores",
                    short(entry.and_then(|d| d.data_fingerprint.as_ref())),
                    format::opt_count(entry.and_then(|d| d.orders.map(|o| o as f64))),
                    format::opt_bytes(entry.and_then(|d| d.bytes_on_disk)),
                    format::opt_bytes(entry.and_then(|d| d.cgroup_memory_bytes)),
                    format::seconds(entry.and_then(|d| d.cpu_cores), 3),
                ));
            }
            row
        })
        .collect();
    let mut header = vec!["repeat".to_owned(), "data".to_owned(), "quiet".to_owned()];
    if lead_ins {
        header.push("lead-in (unjudged), p95".to_owned());
    }
    header.extend(targets.iter().map(|t| format!("{}: fingerprint · orders · disk · memory · CPU", t.label)));
    blocks.push(Block::Table { header, rows });
    let refs: Vec<&StartState> = starts.iter().map(|(_, s)| *s).collect();
    let differences = StartState::differences(&refs);
    blocks.push(Block::Paragraph(if differences.is_empty() {
        "Every repeat started from the same data (equal fingerprints).".into()
    } else {
        format!("**The repeats did not start from the same data**: {}.", differences.join("; "))
    }));
    blocks
}
