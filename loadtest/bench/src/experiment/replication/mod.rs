//! `experiment replication` (issue 42): what a durable write costs once it must reach a second
//! machine, and what each engine ships over the network for it. For each deployment (the stack's
//! replicas: a MongoDB set of three, a PostgreSQL primary and two standbys under Patroni; then the
//! single servers, under the same budget per member), size (1 KB, 100 KB) and mix (insert,
//! status): a closed-loop write window measured by the servers' and the kernel's counters
//! (`counters`, `window`), then the staircase of a round; every row says what each engine's write
//! waited for, read back from the servers (`cluster`). Both engines are driven at the same moment.

pub(super) mod cluster;
mod counters;
mod lag;
mod spread;
mod tables;
mod window;

use super::closed_loop::Work;
use super::doc_size::{self, DocSize};
use super::figures::RoundFigures;
use super::output::{Outcome, RoundRef};
use super::rounds::{self, Data, RoundPlan};
use super::variant::{Variant, mongo, pg};
use super::{Ctx, closed_loop};
use crate::experiment::engine::Target;
use crate::experiment::services::Services;
use anyhow::{Context, Result, bail};
use cluster::{Replicas, Waited};
use counters::Probe;
use orders_bench_engines::databases::Databases;
use orders_bench_engines::stack::Stack;
use orders_bench_model::result::RoundResult;
use serde::Serialize;
use std::collections::BTreeMap;
use window::PerWrite;

const SIZES: [DocSize; 2] = [doc_size::SIZES[0], doc_size::SIZES[2]];

/// Both engines' durable defaults, spelled out and read back: `synchronous_commit=on` (with
/// Patroni's synchronous standby, a commit waits for it), `w: majority, j: true`.
pub(super) fn durable(name: &'static str, label: &'static str) -> Variant {
    Variant {
        name,
        label,
        pg_env: vec![("PG_SYNCHRONOUS_COMMIT", "on")],
        mongo_env: vec![("MONGO_WRITE_CONCERN", "majority"), ("MONGO_JOURNAL", "true")],
        expect: vec![pg("synchronous_commit", "on"), mongo("w", "majority"), mongo("j", "true")],
        fair: true,
    }
}

/// A deployment's services, databases and local stack, swapped into the context while measured.
struct Deployment {
    name: &'static str,
    variant: Variant,
    services: Services,
    databases: Databases,
    local: Option<Stack>,
    snapshots: Vec<(Data, crate::fresh::Snapshots)>,
}

impl Deployment {
    fn swap(&mut self, ctx: &mut Ctx) {
        std::mem::swap(&mut self.services, &mut ctx.services);
        std::mem::swap(&mut self.databases, &mut ctx.databases);
        std::mem::swap(&mut self.local, &mut ctx.local);
        std::mem::swap(&mut self.snapshots, &mut ctx.snapshots);
    }
}

/// One deployment, size and mix.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub deployment: &'static str,
    pub size: &'static str,
    pub mix: &'static str,
    pub approx_doc_bytes: u64,
    pub waited: Waited,
    /// The member each engine writes to, by the probe's names (`pg1`, `mongo2`).
    pub primaries: BTreeMap<String, String>,
    /// The write window (closed loop): per target, acknowledged writes/s, p95 and p99.
    pub window: BTreeMap<String, closed_loop::TargetRun>,
    pub pg: PerWrite,
    pub mongo: PerWrite,
    /// Each standby's and secondary's lag during the write window (none for single servers).
    pub lag: BTreeMap<String, lag::Lag>,
    /// Bytes/s each member sent and received with no load, just before the window.
    pub idle_bytes_per_second: BTreeMap<String, f64>,
    /// Cores each member used with no load, in the same seconds.
    pub idle_cores: BTreeMap<String, f64>,
    pub round: Option<RoundFigures>,
    /// Per target: p95 and p99 of the highest passing step.
    pub at_max_rate: BTreeMap<String, (Option<f64>, Option<f64>)>,
}

pub async fn run(ctx: &mut Ctx, sizes: &[String], budget: &[String]) -> Result<Outcome> {
    let sizes = doc_size::select(sizes, &SIZES)?;
    if ctx.measures(Target::Pgh) {
        bail!("experiment replication measures pg and mongo only (the hybrid layout has no replicated stack)");
    }
    let Some(stack) = ctx.local.clone() else {
        bail!("experiment replication runs on the local stack only (its replicas: root, network namespaces)")
    };
    let replicas = Replicas::ensure(&stack, budget).await?;
    let outcome = measure(ctx, &replicas, &sizes).await;
    ctx.services.stop().await;
    replicas.stop().await;
    outcome
}

async fn measure(ctx: &mut Ctx, replicas: &Replicas, sizes: &[DocSize]) -> Result<Outcome> {
    let db = ctx.databases.mongodb_db.clone();
    let databases = replicas.databases(&db)?;
    for backend in orders_bench_engines::all(&databases) {
        backend.create_database().await.context("creating the database on the replicas")?;
    }
    let services = cluster::services_over(&ctx.services, &databases, &ctx.out.join("logs").join("replicated"))?;
    let mut replicated = Deployment {
        name: "replicated",
        variant: durable("replicated", "replicated: 3 members per engine"),
        services,
        databases,
        local: None,
        snapshots: Vec::new(),
    };
    let lan = format!("{}lan", replicas.get("REPLICA_NS_PREFIX")?);
    let patroni = replicas.get("REPLICA_PATRONI_URLS")?.split(',').next().map(str::to_owned);
    let mut rows = Vec::new();
    let mut refs = Vec::new();
    ctx.services.stop().await;
    replicated.swap(ctx);
    let single_note = ctx.budget_note.replace(members_budget(replicas));
    let mut probe = Probe::connect(&ctx.databases.database_url, &ctx.databases.mongodb_uri, &db, Some(lan)).await?;
    probe.find_replicas(replicas.get("REPLICA_NS_PREFIX")?).await?;
    let mut done = deployment(
        ctx,
        (replicated.name, &replicated.variant),
        &probe,
        patroni.as_deref(),
        sizes,
        &mut rows,
        &mut refs,
    )
    .await;
    let mut reads = Vec::new();
    if done.is_ok() {
        let logs = ctx.out.join("logs").join("reads-spread");
        let smallest = sizes.first().context("no size")?;
        let data = doc_size::data_for(smallest, ctx.scale.orders)?;
        let spread = spread::spread_services(&ctx.services, &logs);
        done = match spread {
            Ok(mut spread) => spread::measure(ctx, &replicated.variant, &mut spread, data, &mut refs).await,
            Err(error) => Err(error),
        }
        .map(|measured| reads = measured);
    }
    ctx.services.stop().await;
    replicated.swap(ctx);
    ctx.budget_note = single_note;
    done?;
    let single = durable("single", "single servers");
    let mut probe = Probe::connect(&ctx.databases.database_url, &ctx.databases.mongodb_uri, &db, None).await?;
    probe.single_servers(pg_port(&ctx.databases.database_url), mongo_port(&ctx.databases.mongodb_uri));
    deployment(ctx, ("single", &single), &probe, None, sizes, &mut rows, &mut refs).await?;
    Ok(tables::outcome(&rows, &reads, refs, replicas))
}

/// The replicas' budget as a round's report names it: every member's, from the stack's own account.
fn members_budget(replicas: &Replicas) -> String {
    let env = |k: &str| replicas.env.get(k).cloned().unwrap_or_else(|| "?".into());
    let memory =
        env("REPLICA_DB_MEMORY").parse::<f64>().map_or_else(|_| "?".into(), orders_bench_report::format::bytes);
    format!(
        "{} CPU and {memory} per member, {} members per engine in network namespaces of this machine",
        env("REPLICA_DB_CPUS"),
        env("REPLICA_COUNT")
    )
}

async fn deployment(
    ctx: &mut Ctx,
    (name, variant): (&'static str, &Variant),
    probe: &Probe,
    patroni: Option<&str>,
    sizes: &[DocSize],
    rows: &mut Vec<Row>,
    refs: &mut Vec<RoundRef>,
) -> Result<()> {
    for size in sizes {
        let data = doc_size::data_for(size, ctx.scale.orders)?;
        for (mix, work) in [("insert", Work::Insert), ("status", Work::Status)] {
            let Some(urls) = ctx.use_variant(variant).await? else { bail!("the services cannot run {}", name) };
            let minimal = ctx.minimal();
            let manifest = rounds::reload(ctx, data).await?;
            let diagnostics = crate::diagnostics::Client::for_services(urls.services())?.snapshot(0.0).await?;
            let idle_start = probe.sample().await?;
            tokio::time::sleep(ctx.scale.calibrate_seconds).await;
            let before = probe.sample().await?;
            let waited = cluster::waited(&diagnostics, &before, patroni).await;
            eprintln!("experiment: {} {mix} {}: PostgreSQL {}; MongoDB {}", name, size.label, waited.pg, waited.mongo);
            let window = rounds::closed_loop(ctx, &urls, work, 1, ctx.scale.closed_seconds, minimal);
            let (runs, lag) = lag::during(probe, window).await;
            let runs = runs?;
            let after = probe.sample().await?;
            let oplog = match (before.oplog_last, after.oplog_last) {
                (Some(from), Some(to)) => Some(probe.oplog_since(from, to).await?),
                _ => None,
            };
            let run = runs.first().context("the write window ran no closed loop")?;
            let acked = |t: Target| run.targets.get(t.name()).map_or(0, |r| r.requests.saturating_sub(r.failures));
            let pg = window::postgres(&before, &after, acked(Target::Pg));
            let mongo = window::mongo(&before, &after, oplog.as_ref(), acked(Target::Mongo));
            let plan = RoundPlan {
                variant,
                name: format!("{mix} {} ({})", size.label, name),
                dir: rounds::folder(&[name, size.key, mix]),
                mix,
                data,
                staircase: ctx.scale.staircase(run.slower()),
                minimal,
                prefill: 0,
            };
            let measured = rounds::measure(ctx, &plan).await?;
            refs.push(RoundRef { name: plan.name.clone(), variant: variant.label.into(), dir: plan.dir.clone() });
            rows.push(Row {
                deployment: name,
                size: size.label,
                mix,
                approx_doc_bytes: manifest.approx_doc_bytes,
                primaries: primaries(probe, &waited),
                waited,
                window: run.targets.clone(),
                pg,
                mongo,
                lag,
                idle_bytes_per_second: window::idle_rates(&idle_start, &before),
                idle_cores: window::idle_cores(&idle_start, &before),
                at_max_rate: measured.as_ref().map(|m| at_max_rate(&m.round)).unwrap_or_default(),
                round: measured.map(|m| m.figures),
            });
        }
    }
    Ok(())
}

/// The members the services write to, by the probe's names.
fn primaries(probe: &Probe, waited: &Waited) -> BTreeMap<String, String> {
    let host = |a: &Option<String>| a.as_deref().map(|a| a.rsplit_once(':').map_or(a, |(h, _)| h).to_owned());
    let (pg, mongo) = (host(&waited.pg_member), host(&waited.mongo_member));
    probe
        .members
        .iter()
        .filter(|m| m.address.is_some() && m.address == if m.postgres { pg.clone() } else { mongo.clone() })
        .map(|m| ((if m.postgres { "pg" } else { "mongo" }).to_owned(), m.name.clone()))
        .collect()
}

/// p95 and p99 of each target's highest passing step (the first repeat).
fn at_max_rate(round: &RoundResult) -> BTreeMap<String, (Option<f64>, Option<f64>)> {
    let Some(repeat) = round.repeats.first() else { return BTreeMap::new() };
    repeat
        .targets
        .iter()
        .filter_map(|(name, t)| {
            let step = t.steps.iter().filter(|s| s.passed && s.rate <= t.max_rate.rate).max_by_key(|s| s.rate)?;
            Some((name.clone(), (step.p95_ms, step.p99_ms)))
        })
        .collect()
}

fn pg_port(url: &str) -> Option<u16> {
    let config: tokio_postgres::Config = url.parse().ok()?;
    config.get_ports().first().copied().or(Some(5432))
}

fn mongo_port(uri: &str) -> Option<u16> {
    let hosts = uri.strip_prefix("mongodb://")?.split(['/', '?']).next()?;
    hosts.split(',').next()?.rsplit_once(':')?.1.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn single_server_ports_come_from_the_urls() {
        assert_eq!(pg_port("postgres://postgres@127.0.0.1:56432/orders"), Some(56432));
        assert_eq!(mongo_port("mongodb://127.0.0.1:58017"), Some(58017));
        assert_eq!(mongo_port("mongodb://127.0.0.1:58017/?directConnection=true"), Some(58017));
        assert_eq!(mongo_port("postgres://x"), None);
    }

    #[test]
    fn both_deployments_ask_for_the_same_durable_settings() {
        let (a, b) = (durable("replicated", "r"), durable("single", "s"));
        assert_eq!((a.pg_env.clone(), a.mongo_env.clone(), a.expect.clone()), (b.pg_env, b.mongo_env, b.expect));
        assert_eq!(a.assignments(), "PG_SYNCHRONOUS_COMMIT=on MONGO_WRITE_CONCERN=majority MONGO_JOURNAL=true");
    }
}
