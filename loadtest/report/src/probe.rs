//! The planner probe of a round in the report: per pending list size, the product search's
//! generic and custom plans and which plan a newly prepared statement kept, for `LIMIT 10` (S1's
//! form) and `LIMIT $2`, so a reader sees whether finding F1 can happen at the round's size and
//! from how many inserts on.

use super::doc::Block;
use super::format::{self, NONE};
use orders_bench_model::plans::PlanProbe;

fn cost(value: Option<f64>) -> String {
    value.map_or(NONE.into(), |c| format!("{c:.0}"))
}

pub fn blocks(probe: &PlanProbe) -> Vec<Block> {
    let mut blocks = vec![Block::Heading(3, "Planner probe".into())];
    if let Some(error) = &probe.error {
        blocks.push(Block::Paragraph(format!("The planner probe failed: {error}.")));
        return blocks;
    }
    let switch = match probe.switch_after_inserts {
        Some(inserts) => format!(
            "a newly prepared `LIMIT 10` search kept a sequential scan once {} orders had been inserted",
            format::count(inserts as f64)
        ),
        None => "no newly prepared `LIMIT 10` search kept a sequential scan".into(),
    };
    blocks.push(Block::Paragraph(format!(
        "Before any load, on a copy of the data ({} orders, GIN fastupdate {}, autovacuum off), orders were \
         inserted in batches and after each the product search planned: {switch}. A sequential scan that finds ten \
         of a product's orders took {} ms here. Custom plans: the median cost over the {} products searched, and \
         how many of them were sequential scans. Kept: generic / custom plans a new session's prepared statement \
         used in {} executions ({:.1} s in all).",
        format::count(probe.orders as f64),
        probe.fastupdate,
        format::ms(probe.seq_scan_ms),
        probe.rows.first().map_or(0, |r| r.custom_planned),
        probe.rows.first().map_or(0, |r| r.literal_generic_used + r.literal_custom_used),
        probe.seconds,
    )));
    let rows = probe
        .rows
        .iter()
        .map(|r| {
            vec![
                format::count(r.inserts as f64),
                format!("{} / {}", format::count(r.pending_pages as f64), format::count(r.pending_tuples as f64)),
                format!("{} (cost {})", r.generic, cost(r.generic_cost)),
                format!("{} ({} of {} scans)", cost(r.custom_cost), r.custom_seq_scans, r.custom_planned),
                format!("{} / {}", r.literal_generic_used, r.literal_custom_used),
                format!("{} (cost {})", r.parameter_generic, cost(r.parameter_generic_cost)),
                format!("{} / {}", r.parameter_generic_used, r.parameter_custom_used),
            ]
        })
        .collect();
    blocks.push(Block::Table {
        header: [
            "inserted",
            "pending list (pages / tuples)",
            "LIMIT 10: generic plan",
            "custom plans: median cost",
            "LIMIT 10 kept: generic / custom",
            "LIMIT $2: generic plan",
            "LIMIT $2 kept: generic / custom",
        ]
        .iter()
        .map(|h| (*h).to_owned())
        .collect(),
        rows,
    });
    blocks
}
