//! Whether PostgreSQL's GIN pending-list merges set its limit: with `fastupdate` on, inserts append
//! their index entries to the pending list, and when it outgrows `gin_pending_list_limit` the insert
//! that finds it full merges it into the index tree (autovacuum may too). The polls show where the
//! list shrank; this holds those moments against the steps: which steps had a merge, whether they
//! failed, and whether each repeat's first failure fell on one. It can say no.

use crate::doc::Block;
use orders_bench_model::result::RoundResult;

/// Per target with merges: (label, lines) — one line per repeat, then the tally.
fn of_target(round: &RoundResult, name: &str, label: &str) -> Option<Vec<String>> {
    let seconds = round.plan.step_seconds.as_secs_f64();
    let (mut with, mut without) = ((0, 0), (0, 0));
    let (mut first_on_merge, mut first_failures) = (0, 0);
    let mut lines = Vec::new();
    for repeat in &round.repeats {
        let merges = &repeat.explain.pg_of(name)?.pending_merges;
        let steps = &repeat.targets.get(name)?.steps;
        // Steps count from 0, each `seconds` long from the load's start.
        let merged = |step: usize| merges.iter().any(|m| m.within(step as f64 * seconds, (step + 1) as f64 * seconds));
        let lowest = steps.iter().filter(|s| merged(s.step)).map(|s| s.rate).min();
        let mut said = Vec::new();
        for step in steps.iter().filter(|s| s.complete && lowest.is_some_and(|low| s.rate >= low)) {
            let tally = if merged(step.step) { &mut with } else { &mut without };
            tally.0 += usize::from(!step.passed);
            tally.1 += 1;
            if merged(step.step) {
                said.push(format!("{} req/s {}", step.rate, if step.passed { "passed" } else { "failed" }));
            }
        }
        if let Some(first) = steps.iter().find(|s| !s.passed) {
            first_failures += 1;
            first_on_merge += usize::from(merged(first.step));
        }
        if !said.is_empty() {
            lines.push(format!("repeat {}: merges during the steps at {}", repeat.index, said.join(", ")));
        }
    }
    if with.1 == 0 {
        return None;
    }
    lines.push(format!(
        "{label}'s first failure fell on a step with a merge in {first_on_merge} of {first_failures} repeats; from the \
         lowest rate with a merge up, steps with a merge failed {} of {}, steps without {} of {}",
        with.0, with.1, without.0, without.1
    ));
    Some(lines)
}

/// The round's paragraph and list, when a PostgreSQL target's pending list was merged during it.
pub fn blocks(round: &RoundResult) -> Vec<Block> {
    let mut blocks = Vec::new();
    for target in round.targets() {
        let Some(lines) = of_target(round, &target.name, &target.label) else { continue };
        blocks.push(Block::Paragraph(format!(
            "**{}'s GIN pending list was merged into the index during these steps** (the polls, once a step, found it \
             shorter than the step before: with fastupdate on, the insert that finds the list over \
             gin_pending_list_limit merges it while the other inserts wait for CPU and the index):",
            target.label
        )));
        blocks.push(Block::List(lines));
    }
    blocks
}
