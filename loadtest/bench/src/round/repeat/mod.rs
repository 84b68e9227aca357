//! One repeat of a round, in named phases: `prepare` (everything before the load: reset, quiet
//! databases, plan log, lead-in, fairness gate, `/diagnostics` before), the load run itself
//! (`drive`: native generator or k6, live progress, early stop, polling, CPU sampling), `after`
//! (closing figures and files), `judge` (every step against the pass mark, stalls reviewed) and
//! `evidence` (the explaining figures and the CPU report). Raw files go to `repeat-<n>/`.

mod after;
mod evidence;
mod judge;
mod prepare;

pub(super) use evidence::explain_all;

use super::drive::{self, Driven};
use super::{RoundSpec, Setup};
use crate::budget::record;
use anyhow::{Context, Result};
use orders_bench_model::result::{RepeatResult, TargetResult};
use orders_core::Timestamp;
use orders_loadgen::summary::{LoadGenerator, Summary};
use std::collections::BTreeMap;
use std::path::Path;

fn write_json(path: &Path, value: &impl serde::Serialize) -> Result<()> {
    let text = serde_json::to_string_pretty(value).context("JSON")?;
    std::fs::write(path, text + "\n").with_context(|| format!("writing {}", path.display()))
}

pub async fn run(spec: &RoundSpec, setup: &Setup, round_dir: &Path, index: u32) -> Result<RepeatResult> {
    let label = format!("[{} {index}/{}]", spec.name, spec.repeats);
    let rel = format!("repeat-{index}");
    let dir = round_dir.join(&rel);
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let started_at = Timestamp::now().to_string();
    let prepare::Prepared { client, start_state, plan_log, before, fairness, wal_before, mut notes } =
        prepare::prepare(spec, setup, &dir, &label).await?;

    let prefix = spec.generator.file_prefix();
    let (summary_file, log_file) = (format!("{prefix}-summary.json"), format!("{prefix}.log"));
    let (summary_path, log_path) = (dir.join(&summary_file), dir.join(&log_file));
    let Driven {
        status,
        origin,
        exited_at,
        load_seconds,
        scenario_start,
        stopped_early,
        drop_samples,
        sampler,
        polled,
        fleet,
        probe,
    } = drive::run(spec, setup, &client, &summary_path, &log_path, &label).await?;

    let after::After { after, wal_after, notes: said_after } =
        after::collect(spec, setup, &client, origin, &polled, &dir, &label).await?;
    notes.extend(said_after);
    let files = after::files(spec, &rel, &summary_file, &log_file);
    // Several load machines: judge the merged summary, with every machine's drops.
    let fleet = fleet.map(|f| f.combine(&dir, &summary_path, &drop_samples, scenario_start)).transpose()?;
    let generator = spec.generator.process_name();
    let summary = Summary::read(&summary_path).with_context(|| {
        format!("{generator} exited with {status} without a usable summary; see {}", log_path.display())
    })?;

    let targets = judge::targets(spec, &summary, &drop_samples, scenario_start, fleet.as_ref(), &label);
    let labels: BTreeMap<String, String> = setup.targets.info().into_iter().map(|t| (t.name, t.label)).collect();
    notes.extend(targets.iter().filter_map(|(name, t)| retirement_note(&labels, name, t)));

    let mut explain = explain_all(&setup.targets, &before, &polled, &after, |name| summary.write_requests(name));
    evidence::add_wal(&mut explain, &setup.targets, &wal_before, &wal_after);
    if let Some((target, log)) = &plan_log {
        evidence::add_scans(&mut explain, target, log.as_ref()).await;
    }
    let requests: BTreeMap<String, u64> =
        setup.targets.names().into_iter().map(|n| (n.clone(), summary.requests(&n))).collect();
    let start = scenario_start.unwrap_or((exited_at - summary.run_seconds).max(0.0));
    let mut cpu =
        sampler.report(load_seconds, start, &summary.offered.steps, &requests, summary.load_generator.as_ref());
    cpu.probe = Some(probe);
    record::add_engine_caches(&mut cpu.budgets, &after, &setup.targets);
    evidence::add_limits(&mut cpu, &targets, &sampler.components);
    eprintln!("{label} {}", judge::said(&targets));
    let fleet = fleet.map(|f| f.report(&cpu));
    Ok(RepeatResult {
        index,
        reseeded: spec.reset.resets(),
        start: Some(start_state),
        started_at,
        fairness,
        run_seconds: summary.run_seconds,
        stopped_early,
        targets,
        explain,
        cpu,
        files,
        notes,
        load_generator: summary
            .load_generator
            .clone()
            .or(Some(LoadGenerator { kind: "k6".into(), ..LoadGenerator::default() })),
        fleet,
        plan: Some(spec.plan),
        superseded: None,
    })
}

/// "MongoDB got no more load from step 6 (3,600 req/s) on: ..." for a retired target.
fn retirement_note(labels: &BTreeMap<String, String>, name: &str, target: &TargetResult) -> Option<String> {
    let retired = target.retired?;
    let label = labels.get(name).cloned().unwrap_or_else(|| name.to_owned());
    let rate = target.steps.get(retired.step).map_or(String::new(), |s| format!(" ({} req/s)", s.rate));
    Some(format!(
        "{label} got no more load from step {}{rate} on, {:.1} s into the staircase: it had failed three steps in \
         a row, so its limit was known, and the other target climbed the rest of the staircase alone",
        retired.step + 1,
        retired.at_s,
    ))
}

/// The mix's weights as the generator resolved them (from the first repeat's summary).
pub fn mix_weights(round_dir: &Path, repeats: &[RepeatResult]) -> BTreeMap<String, u32> {
    repeats
        .first()
        .and_then(|r| r.files.get("load_summary").or(r.files.get("k6_summary")))
        .and_then(|file| Summary::read(&round_dir.join(file)).ok())
        .map(|s| s.mix.weights)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::evidence::add_wal;
    use orders_bench_engines::databases::Databases;
    use orders_bench_engines::{Targets, WalStats};
    use orders_bench_model::explain::{EngineExplain, Explain, MongoExplain, PgExplain};
    use std::collections::BTreeMap;

    #[test]
    fn each_postgresql_target_gets_the_wal_of_its_own_server() {
        let pg = |writes| EngineExplain::Pg(Box::new(PgExplain { write_requests: writes, ..PgExplain::default() }));
        let mut explain = Explain::default();
        explain.0.insert("pg".into(), pg(100));
        explain.0.insert("mongo".into(), EngineExplain::Mongo(Box::default()));
        explain.0.insert("pgh".into(), pg(100));
        let wal = |records, fpi, flushes| WalStats { records, fpi, flushes };
        let before = BTreeMap::from([("pg".into(), wal(1000.0, 10.0, Some(5.0))), ("pgh".into(), wal(0.0, 0.0, None))]);
        let after =
            BTreeMap::from([("pg".into(), wal(1400.0, 30.0, Some(85.0))), ("pgh".into(), wal(250.0, 0.0, None))]);
        let databases =
            Databases { others: vec![("pgh".into(), "postgres://h:55433/o".into())], ..Databases::default() };
        let targets = Targets::new(&databases, &[]).expect("targets");
        add_wal(&mut explain, &targets, &before, &after);
        let (jsonb, hybrid) = (explain.pg_of("pg").expect("pg"), explain.pg_of("pgh").expect("pgh"));
        assert_eq!((jsonb.wal_records, jsonb.wal_fpi, jsonb.wal_flushes), (Some(400.0), Some(20.0), Some(80.0)));
        assert_eq!(
            (hybrid.wal_records, hybrid.wal_records_per_write, hybrid.wal_flushes),
            (Some(250.0), Some(2.5), None)
        );
        assert_eq!(explain.mongo_of("mongo"), Some(&MongoExplain::default()), "MongoDB has no WAL to add");
    }
}
