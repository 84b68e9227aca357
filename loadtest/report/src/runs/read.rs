//! Reading one folder of `results/` into a `Run`: a round, demo or report folder by its
//! `result.json` (the result model), an experiment by its own `result.json` (read loosely, as JSON,
//! with its rounds from their folders), anything else as a folder that is not a run, saying why.

use super::{Experiment, Run, What};
use orders_bench_model::result::{self, RoundResult};
use serde_json::Value;
use std::path::Path;

/// The schema prefix of an experiment's `result.json` (loadtest/RESULTS.md).
const EXPERIMENT: &str = "orders-bench/experiment/";

/// `dir` (called `folder` on the page) as a run, or as the reason it is not one.
pub fn folder(dir: &Path, folder: &str) -> Run {
    let what = match what(dir) {
        Ok(what) => what,
        Err(reason) => What::Unreadable(reason),
    };
    Run { folder: folder.to_owned(), has_report: dir.join("report.html").is_file(), what }
}

fn what(dir: &Path) -> Result<What, String> {
    let file = dir.join(result::FILE);
    if !file.is_file() {
        return Err("no result.json: not a run, or one still running or stopped before its end".into());
    }
    let text = std::fs::read_to_string(&file).map_err(|e| format!("result.json cannot be read: {e}"))?;
    let json: Value = serde_json::from_str(&text).map_err(|e| format!("result.json is not JSON: {e}"))?;
    let schema = json["schema"].as_str().unwrap_or_default();
    if schema.starts_with(EXPERIMENT) {
        return Ok(experiment(dir, &json));
    }
    let (_, rounds) = result::read(dir).map_err(|e| match e {
        result::FileError::Schema { schema, .. } => format!("result.json of an unknown schema: {schema}"),
        result::FileError::Parse { source, .. } => format!("result.json is not a result of orders-bench: {source}"),
        other => other.to_string(),
    })?;
    if rounds.is_empty() {
        return Err("result.json holds no round".into());
    }
    Ok(What::Rounds(rounds))
}

fn text(value: &Value) -> String {
    value.as_str().unwrap_or_default().to_owned()
}

/// An experiment's summary and the rounds its folder holds (those that read).
fn experiment(dir: &Path, json: &Value) -> What {
    let ours = &json["ours"];
    let scale = &ours["scale"];
    let number = |v: &Value| v.as_f64().map_or_else(|| "?".to_owned(), crate::format::count);
    let verdicts = json["comparisons"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            let row = format!(
                "{} ({}): ours {}; the study {}",
                text(&c["finding"]),
                text(&c["workload"]),
                text(&c["ours"]),
                text(&c["study"])
            );
            (row, text(&c["verdict"]).replace('_', " "))
        })
        .collect();
    let mut rounds: Vec<RoundResult> = Vec::new();
    let mut unread = 0;
    for round in json["rounds"].as_array().into_iter().flatten() {
        match result::read(&dir.join(text(&round["dir"]))) {
            Ok((_, found)) => rounds.extend(found),
            Err(_) => unread += 1,
        }
    }
    let summary = Experiment {
        name: text(&json["experiment"]),
        title: text(&json["title"]),
        started_at: text(&json["started_at"]),
        machine: format!("{} cores, {}", number(&ours["machine"]["cores"]), text(&ours["machine"]["os"])),
        commit: json["commit"].as_str().map(str::to_owned).or_else(|| rounds.iter().find_map(|r| r.commit.clone())),
        settings: format!(
            "{} size: {} orders, {} repeat(s), {} s steps; targets {}",
            text(&scale["size"]),
            number(&scale["orders"]),
            number(&scale["repeats"]),
            number(&scale["step_seconds"]),
            ours["targets"].as_array().into_iter().flatten().map(text).collect::<Vec<_>>().join(", "),
        ),
        budget: rounds.iter().find_map(|r| r.budget.clone()),
        verdicts,
        unread_rounds: unread,
    };
    What::Experiment(summary, rounds)
}
