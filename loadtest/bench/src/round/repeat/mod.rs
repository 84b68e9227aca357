//! One repeat of a round: the data reset and the databases quiet (`fresh`), the plan log turned
//! on, a GIN pending list prefilled when asked, the lead-in (`lead_in`), fairness gate, `/diagnostics` before, one load run
//! (native generator or k6) with live progress, early stop, `/diagnostics` polling and CPU
//! sampling, `/diagnostics` after, then the verdicts (stalls of the shared machine reviewed), the
//! explaining figures and the CPU report (the load run itself is `drive`). Raw files go to
//! `repeat-<n>/`.

use super::drive::{self, Driven};
use super::fairness;
use super::{RoundSpec, Setup, plan_log};
use crate::backend::postgres;
use crate::budget::record;
use crate::diagnostics::{self, Snapshot};
use crate::fresh;
use anyhow::{Context, Result, bail};
use orders_bench_model::explain::{EngineExplain, Explain};
use orders_bench_model::fairness::Fairness;
use orders_bench_model::limit;
use orders_bench_model::plans::ScanAttribution;
use orders_bench_model::result::{RepeatResult, TargetResult};
use orders_bench_model::verdict::stall;
use orders_bench_model::verdict::{drops_by_target, judge_target, max_passing_rate};
use orders_core::Timestamp;
use orders_dataset::manifest;
use orders_loadgen::summary::{LoadGenerator, Summary};
use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::Path;
use std::time::Duration;

/// Every target's explaining figures from the snapshots before, during and after the run, each
/// backend reading its own engine's part; `writes` gives a target's write requests.
pub(super) fn explain_all(
    targets: &crate::backend::Targets,
    before: &Snapshot,
    polled: &[Snapshot],
    after: &Snapshot,
    writes: impl Fn(&str) -> u64,
) -> Explain {
    let mut explain = Explain::default();
    for target in targets.iter() {
        let name = target.name();
        let polled: Vec<(f64, &serde_json::Value)> = polled.iter().map(|p| (p.at_s, p.get(&name))).collect();
        let figures = target.backend.explain(before.get(&name), &polled, after.get(&name), writes(&name));
        explain.0.insert(name, figures);
    }
    explain
}

/// `pg_stat_wal` of every PostgreSQL target's server (a `postgres://` URL), by target. The figures
/// are server-wide: a target's own where its database has a server of its own (the hybrid's on the
/// local stack), orders-pg's and its together where they share one.
async fn wal_by_target(targets: &crate::backend::Targets) -> BTreeMap<String, postgres::WalStats> {
    let on_postgres = targets.iter().filter(|t| t.backend.database_url().starts_with("postgres"));
    let read = on_postgres.map(|t| async move { (t.name(), postgres::wal_stats(t.backend.database_url()).await) });
    futures_util::future::join_all(read).await.into_iter().filter_map(|(name, wal)| Some((name, wal?))).collect()
}

/// Each PostgreSQL target's WAL records, full-page images and flushes over the run.
fn add_wal(
    explain: &mut Explain,
    before: &BTreeMap<String, postgres::WalStats>,
    after: &BTreeMap<String, postgres::WalStats>,
) {
    for (name, figures) in explain.0.iter_mut() {
        if let (EngineExplain::Pg(pg), Some(b), Some(a)) = (figures, before.get(name), after.get(name)) {
            pg.add_wal_stats(a.records - b.records, a.fpi - b.fpi, a.flushes.zip(b.flushes).map(|(a, b)| a - b));
        }
    }
}

/// Pause before the closing snapshot, so the databases' statistics include the run's last second.
const STATS_LAG: Duration = Duration::from_millis(2500);

fn write_json(path: &Path, value: &impl serde::Serialize) -> Result<()> {
    let text = serde_json::to_string_pretty(value).context("JSON")?;
    std::fs::write(path, text + "\n").with_context(|| format!("writing {}", path.display()))
}

/// The fairness gate, retried for a few seconds while only the data set differs (statistics may
/// lag a freshly loaded table); a mismatch of settings is final at once.
async fn gate(
    client: &diagnostics::Client,
    setup: &Setup,
    inserted: &BTreeMap<String, u64>,
    settle: Duration,
) -> Result<(Snapshot, Fairness)> {
    let mut attempt = 0;
    loop {
        let manifest = manifest::read(&setup.manifest).ok();
        let snapshot = client.settled(0.0, settle).await?;
        let seen = fairness::look(&setup.targets, &snapshot, manifest.as_ref()).await;
        let verdict = fairness::check_all(manifest.as_ref(), inserted, &seen);
        attempt += 1;
        if !fairness::may_settle(&verdict) || attempt >= 4 {
            return Ok((snapshot, verdict));
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

pub async fn run(spec: &RoundSpec, setup: &Setup, round_dir: &Path, index: u32) -> Result<RepeatResult> {
    let label = format!("[{} {index}/{}]", spec.name, spec.repeats);
    let rel = format!("repeat-{index}");
    let dir = round_dir.join(&rel);
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let started_at = Timestamp::now().to_string();
    let mut notes = Vec::new();
    let mut start_state = fresh::reset(&spec.reset, &setup.targets, &label).await?;
    // The plan log's threshold in effect: the one asked for, or the server's own.
    let plan_log_ms = match spec.plan_log_ms {
        Some(threshold) => match plan_log::enable(&setup.databases.database_url, threshold).await {
            Ok(in_effect) => Some(in_effect),
            Err(error) => {
                notes.push(format!("no plan log: {error:#}"));
                None
            }
        },
        None => None,
    };
    let client = diagnostics::Client::new(&setup.targets)?;
    client.wait_ready(spec.settle).await?;
    if spec.warm_pools {
        super::launch::fill_pools(setup, &dir, pool_clients(&client, setup).await).await?;
    }
    fresh::wait_quiet(&setup.targets, spec.quiet_wait, &mut start_state, &label).await;
    if spec.prefill > 0 {
        super::launch::prefill(spec, setup, &dir, spec.prefill).await?;
    }
    let mut inserted: BTreeMap<String, u64> =
        setup.targets.iter().map(|t| (t.name(), u64::from(spec.prefill))).collect();
    if let Some(length) = spec.lead_in {
        let (lead_in, orders) = super::lead_in::run(spec, setup, &dir, length).await?;
        for (name, n) in orders {
            *inserted.entry(name).or_default() += n;
        }
        if let Some(failed) = super::lead_in::failures_said(&lead_in) {
            notes.push(format!("the lead-in had failures, recorded and not judged: {failed}"));
        }
        start_state.lead_in = Some(lead_in);
    }
    let (before, fairness) = gate(&client, setup, &inserted, spec.settle).await?;
    let wal_before = wal_by_target(&setup.targets).await;
    write_json(&dir.join("diagnostics-before.json"), &before)?;
    if !fairness.ok {
        let list = fairness.mismatches().join("\n  ");
        if !spec.allow_mismatch {
            bail!(
                "fairness gate: the comparison would be unfair, refusing to run (--allow-mismatch overrides):\n  {list}"
            );
        }
        eprintln!("{label} WARNING: fairness gate failed, running anyway (--allow-mismatch):\n  {list}");
    }

    let mut files = BTreeMap::new();
    let (summary_file, log_file) =
        (format!("{}-summary.json", spec.generator.file_prefix()), format!("{}.log", spec.generator.file_prefix()));
    let summary_path = dir.join(&summary_file);
    let log_path = dir.join(&log_file);
    let log_position = match plan_log_ms {
        Some(_) => plan_log::position(&setup.databases.database_url)
            .await
            .map_err(|error| notes.push(format!("no plan log: {error:#}")))
            .ok(),
        None => None,
    };
    let driven = drive::run(spec, setup, &client, &summary_path, &log_path, &label).await?;
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
    } = driven;
    // PostgreSQL backends report their counters at most once a second: let the last second land.
    tokio::time::sleep(STATS_LAG).await;
    let wal_after = wal_by_target(&setup.targets).await;
    let mut after = match client.settled(origin.elapsed().as_secs_f64(), spec.settle).await {
        Ok(after) => after,
        Err(error) => {
            let last = polled.last().cloned().with_context(|| format!("no diagnostics after the run: {error:#}"))?;
            let note = format!(
                "the services did not answer /diagnostics within {} s after the run ({error:#}); the figures end at \
                 the last poll, {:.0} s into the run",
                spec.settle.as_secs(),
                last.at_s
            );
            eprintln!("{label} note: {note}");
            notes.push(note);
            last
        }
    };
    // Every PostgreSQL target's: the hybrid's HOT share and growth lag like orders-pg's.
    for target in setup.targets.iter().filter(|t| t.backend.database_url().starts_with("postgres")) {
        match flushed_counters(target).await {
            Ok(table) => {
                if let Some(diagnostics) = after.services.get_mut(&target.name()) {
                    diagnostics["table"] = table;
                }
            }
            Err(error) => notes.push(format!(
                "{}: the table counters after the run may miss its last seconds (backends send them up to 10 s late, \
                 and their sessions could not be ended: {error:#})",
                target.name()
            )),
        }
    }
    write_json(&dir.join("diagnostics-after.json"), &after)?;
    let mut lines = std::fs::File::create(dir.join("diagnostics-polled.jsonl")).context("diagnostics-polled.jsonl")?;
    for snapshot in &polled {
        writeln!(lines, "{}", serde_json::to_string(snapshot).context("JSON")?).context("diagnostics-polled.jsonl")?;
    }
    for (key, file) in [
        ("load_summary", summary_file.as_str()),
        ("load_log", log_file.as_str()),
        ("diagnostics_before", "diagnostics-before.json"),
        ("diagnostics_after", "diagnostics-after.json"),
        ("diagnostics_polled", "diagnostics-polled.jsonl"),
    ] {
        files.insert(key.to_owned(), format!("{rel}/{file}"));
    }
    if spec.lead_in.is_some() {
        files.insert("lead_in_summary".into(), format!("{rel}/lead-in-summary.json"));
    }

    // Several load machines: judge the merged summary, with every machine's drops.
    let fleet = fleet.map(|f| f.combine(&dir, &summary_path, &drop_samples, scenario_start)).transpose()?;
    let generator = spec.generator.process_name();
    let summary = Summary::read(&summary_path).with_context(|| {
        format!("{generator} exited with {status} without a usable summary; see {}", log_path.display())
    })?;
    let start = scenario_start.unwrap_or((exited_at - summary.run_seconds).max(0.0));
    let read_drops =
        (!drop_samples.is_empty() && scenario_start.is_some()).then(|| drops_by_target(&drop_samples, start, &summary));
    let mut judged = BTreeMap::new();
    for (name, target) in &summary.targets {
        let drops = match &fleet {
            Some(fleet) => Some(fleet.drops(name)),
            None => read_drops.as_ref().and_then(|drops| drops.get(name).cloned()),
        };
        judged.insert(name.clone(), judge_target(target, summary.run_seconds, &spec.mark, drops.as_deref()));
    }
    stall::review(&mut judged, &summary, &spec.mark);
    let mut target_results = BTreeMap::new();
    for (name, target) in &summary.targets {
        let steps = judged.remove(name).unwrap_or_default();
        for (step, stall) in steps.iter().filter_map(|s| Some((s, s.stall.as_ref()?))) {
            if stall.mattered() {
                eprintln!("{label} {name} step {} @ {} req/s: {}", step.step + 1, step.rate, stall.note);
            }
        }
        let max_rate = max_passing_rate(&steps);
        target_results.insert(
            name.clone(),
            TargetResult {
                max_rate,
                requests: target.figures.count,
                failures: target.figures.failures,
                dropped_iterations: target.dropped_iterations,
                latency_ms: target.figures.latency_ms,
                endpoints: target.endpoints.iter().map(|(e, f)| (e.clone(), f.count)).collect(),
                steps,
                retired: target.retired,
            },
        );
    }
    let labels: BTreeMap<String, String> = setup.targets.info().into_iter().map(|t| (t.name, t.label)).collect();
    notes.extend(target_results.iter().filter_map(|(name, t)| retirement_note(&labels, name, t)));
    let mut explain = explain_all(&setup.targets, &before, &polled, &after, |name| summary.write_requests(name));
    add_wal(&mut explain, &wal_before, &wal_after);
    if let (Some(threshold), Some(position)) = (plan_log_ms, &log_position) {
        let mut scans = plan_log::read(&setup.databases.database_url, position, threshold)
            .await
            .unwrap_or_else(|error| ScanAttribution::failed(threshold, format!("{error:#}")));
        if let Some(pg) = explain.pg_mut() {
            scans.unattributed = pg.seq_scans.map(|counted| counted - scans.seq_scans() as f64);
            pg.scans = Some(scans);
        }
    }
    let requests: BTreeMap<String, u64> =
        setup.targets.names().into_iter().map(|n| (n.clone(), summary.requests(&n))).collect();
    let mut cpu =
        sampler.report(load_seconds, start, &summary.offered.steps, &requests, summary.load_generator.as_ref());
    cpu.probe = Some(probe);
    record::add_engine_caches(&mut cpu.budgets, &after, &setup.targets);
    for (name, target) in &target_results {
        // The step that set the limit: the first failure the rate search did not step over.
        let failed = target
            .max_rate
            .first_failed_rate
            .and_then(|rate| target.steps.iter().find(|s| s.complete && !s.passed && s.rate == rate));
        if let Some(step_cpu) = failed.and_then(|f| cpu.steps.iter().find(|s| s.step == f.step)) {
            let limit = limit::limit(name, step_cpu, &sampler.components, cpu.cores);
            cpu.limits.insert(name.clone(), limit);
        }
    }
    let verdicts: Vec<String> = target_results
        .iter()
        .map(|(name, t)| match t.max_rate.first_failed_rate {
            Some(failed) => format!("{name} max {} req/s (failed at {failed})", t.max_rate.rate),
            None => format!("{name} passed every step (≥ {} req/s)", t.max_rate.rate),
        })
        .collect();
    eprintln!("{label} {}", verdicts.join("; "));
    let fleet = fleet.map(|f| f.report(&cpu));
    Ok(RepeatResult {
        index,
        reseeded: spec.reset.resets(),
        start: Some(start_state),
        started_at,
        fairness,
        run_seconds: summary.run_seconds,
        stopped_early,
        targets: target_results,
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

/// Clients enough to open every pooled connection of every service: the largest pool, at least 16.
async fn pool_clients(client: &diagnostics::Client, setup: &Setup) -> u32 {
    let snapshot = client.snapshot(0.0).await.ok();
    let pools = snapshot.map(|s| {
        let pools = setup.targets.iter().filter_map(|t| t.backend.facts(s.get(&t.name()), None).pool_size);
        pools.filter_map(|p| p.parse::<f64>().ok()).fold(0.0, f64::max)
    });
    (pools.unwrap_or(0.0) as u32).max(16)
}

/// The table counters of `orders` once every session on its database has sent its own: a backend
/// sends them at most once a second, and an idle one only ten seconds later, but always when its
/// session ends. So the round's sessions are ended (the services' pools reconnect on their next
/// request; their plan counts were read before) and the counters read again, by the target's own
/// sample (each layout knows its tables).
async fn flushed_counters(target: &crate::backend::Target) -> Result<serde_json::Value> {
    let (client, _connection) = crate::databases::pg_session(target.backend.database_url()).await?;
    let name: String = client.query_one("SELECT current_database()", &[]).await?.get(0);
    orders_pg::admin::end_sessions(&client, &name).await.context("ending the round's sessions")?;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let sampler = target.backend.sampler().await.map_err(|error| anyhow::anyhow!(error))?;
    let sample = sampler.sample().await;
    sample.get("table").cloned().with_context(|| format!("no table counters in the sample: {sample}"))
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
    use super::*;
    use orders_bench_model::explain::{MongoExplain, PgExplain};

    #[test]
    fn each_postgresql_target_gets_the_wal_of_its_own_server() {
        let pg = |writes| EngineExplain::Pg(Box::new(PgExplain { write_requests: writes, ..PgExplain::default() }));
        let mut explain = Explain::default();
        explain.0.insert("pg".into(), pg(100));
        explain.0.insert("mongo".into(), EngineExplain::Mongo(Box::default()));
        explain.0.insert("pgh".into(), pg(100));
        let wal = |records, fpi, flushes| postgres::WalStats { records, fpi, flushes };
        let before = BTreeMap::from([("pg".into(), wal(1000.0, 10.0, Some(5.0))), ("pgh".into(), wal(0.0, 0.0, None))]);
        let after =
            BTreeMap::from([("pg".into(), wal(1400.0, 30.0, Some(85.0))), ("pgh".into(), wal(250.0, 0.0, None))]);
        add_wal(&mut explain, &before, &after);
        let (jsonb, hybrid) = (explain.pg_of("pg").expect("pg"), explain.pg_of("pgh").expect("pgh"));
        assert_eq!((jsonb.wal_records, jsonb.wal_fpi, jsonb.wal_flushes), (Some(400.0), Some(20.0), Some(80.0)));
        assert_eq!(
            (hybrid.wal_records, hybrid.wal_records_per_write, hybrid.wal_flushes),
            (Some(250.0), Some(2.5), None)
        );
        assert_eq!(explain.mongo_of("mongo"), Some(&MongoExplain::default()), "MongoDB has no WAL to add");
    }
}
