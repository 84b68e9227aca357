//! `orders-bench experiment gin|doc-size|durability|budget|replication|failover`: one command per published
//! finding (gin: S1 F1; doc-size: S2 F2, S4, S1 F3; durability: S2 F4), each row beside the study's
//! own figure (docs/studies.md); `budget`, the regime the others run in; `replication`, the stack's
//! replicas against its single servers (issue 42); `failover`, each engine's primary killed under
//! inserts (issue 43).
//!
//! On the local stack it starts what it needs and stops what it started with `demo`'s scaffold
//! (`crate::scaffold`), under the demo's equal budgets (`crate::budget::local`); against deployed services (`--pg-url`,
//! `--mongo-url`, `--pgh-url`) it changes variants with `--apply CMD` or measures only the variant
//! they run. `--targets` says which services run (`engine::Selection`). Every round is a
//! `round::run_round` after a reload of the data, driven by the native generator; the folder gets
//! `result.json`, `report.md`, `report.html`, the charts and one round report per round.

mod baseline;
mod budget;
mod closed_loop;
mod compare;
mod doc_size;
mod durability;
pub mod engine;
mod failover;
mod figures;
mod gin;
mod hybrid_catalog;
mod output;
mod prefer;
mod replication;
mod rounds;
mod scale;
mod services;
mod studies;
mod timeline;
mod variant;

use crate::budget::BudgetArgs;
use crate::budget::local;
use crate::scaffold::{self, LocalStack, Started};
use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use engine::{Selection, Target, own_server};
use orders_bench_engines::databases::Databases;
use orders_bench_engines::hybrid::NAME as HYBRID;
use orders_bench_engines::mongo::snapshot::MongoSnapshot;
use orders_bench_engines::postgres::snapshot::PgSnapshot;
use orders_bench_engines::stack::Stack;
pub use scale::{Scale, Size, Staircase};
use serde::Serialize;
use services::{Deployed, Local, Services, Urls};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The environment variable that marks every process an experiment starts.
pub const MARKER: &str = "ORDERS_BENCH_EXPERIMENT";

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Name {
    /// S1 F1: the shop and insert mixes under defaults, fastupdate=off, force_custom_plan, unprepared.
    Gin,
    /// S2 F2, S4, S1 F3: status updates and reads of 1 KB, 10 KB, 100 KB documents and 40-item orders.
    DocSize,
    /// S2 F4: four durability settings (two UNFAIR on purpose), inserts and status updates.
    Durability,
    /// The regime: each database's CPU per request under budgets of 0.25 and 0.5 core and all cores.
    Budget,
    /// Issue 42: bytes shipped and the durable write's cost on 3 members per engine vs single servers.
    Replication,
    /// Issue 43: each engine's primary killed under constant-rate inserts: the gap, lost writes, duplicates.
    Failover,
}

impl Name {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Gin => "gin",
            Self::DocSize => "doc-size",
            Self::Durability => "durability",
            Self::Budget => "budget",
            Self::Replication => "replication",
            Self::Failover => "failover",
        }
    }

    /// The targets it measures without `--targets`: doc-size adds the hybrid layout, whose
    /// columns are S2's "counter in a column of its own" (part of what doc-size reproduces); gin's
    /// and durability's findings are about PostgreSQL jsonb against MongoDB (gin asks the hybrid's
    /// catalog whether F1 can happen to it instead of loading it).
    pub fn default_targets(self) -> &'static [Target] {
        match self {
            Self::DocSize => &Target::ALL,
            Self::Gin | Self::Durability | Self::Budget | Self::Replication | Self::Failover => {
                &[Target::Pg, Target::Mongo]
            }
        }
    }
}

#[derive(Debug, Clone, Args)]
pub struct ExperimentArgs {
    #[arg(value_enum)]
    pub name: Name,
    /// The study's own scale (S1: 1,000,000 orders, 30 s steps, 3 repeats; S2: 8 clients × 20 s × 5
    /// runs): hours, meant for droplets.
    #[arg(long, conflicts_with = "quick")]
    pub full: bool,
    /// Smoke-test size (what CI runs): tiny data, one short step per round.
    #[arg(long)]
    pub quick: bool,
    /// Orders in the data set [default: per experiment, see loadtest/README.md].
    #[arg(long, value_parser = clap::value_parser!(u64).range(10..))]
    pub orders: Option<u64>,
    /// Repeats of every round (median reported) [default: gin 2, the others 1; 3 with --full].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub repeats: Option<u32>,
    /// How long each rate of a staircase is held [default: 3 s, durability 2 s; 30 s with --full].
    #[arg(long = "step-duration", value_parser = orders_loadgen::duration::parse)]
    pub step_duration: Option<std::time::Duration>,
    /// A fixed staircase for every round: first rate, requests/s per target (with --step and
    /// --max-rate) [default: gin 200/200/4,000; the others place it around a short closed loop].
    #[arg(long = "start-rate", requires_all = ["step", "max_rate"], value_parser = clap::value_parser!(u32).range(1..))]
    pub start_rate: Option<u32>,
    #[arg(long, requires = "start_rate", value_parser = clap::value_parser!(u32).range(1..))]
    pub step: Option<u32>,
    #[arg(long = "max-rate", requires = "start_rate", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_rate: Option<u32>,
    /// Closed loop: clients per target [default: 8, as S2].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub clients: Option<u32>,
    /// Closed loop: seconds per run [default: doc-size 10, durability 3; S2's 20 with --full].
    #[arg(long = "closed-seconds", value_parser = orders_loadgen::duration::parse)]
    pub closed_seconds: Option<std::time::Duration>,
    /// Closed loop: runs per size (median reported) [default: doc-size 3, durability 1; S2's 5 with --full].
    #[arg(long = "closed-runs", value_parser = clap::value_parser!(u32).range(1..))]
    pub closed_runs: Option<u32>,
    /// Only these variants (names as in the report, e.g. `defaults,fastupdate-off`).
    #[arg(long, value_delimiter = ',')]
    pub variants: Vec<String>,
    /// doc-size, durability and replication: only these sizes (`1k`, `10k`, `100k`, `40items`).
    #[arg(long, value_delimiter = ',')]
    pub sizes: Vec<String>,
    /// budget: the regimes to hold against the reference (`all`: a quota of every core, always run
    /// first), comma-separated: cores each (`0.25`), or `none` (out of the budgets' cgroups, as
    /// `--db-cpus none` runs the databases) [default: 0.25,0.5].
    #[arg(long, value_delimiter = ',', value_parser = budget::parse_quota)]
    pub budgets: Vec<budget::Quota>,
    /// budget: both services' pool sizes to repeat it with [default: the demo's 16].
    #[arg(long, value_delimiter = ',', value_parser = clap::builder::PossibleValuesParser::new(budget::POOL_CHOICES))]
    pub pools: Vec<String>,
    /// failover: requests per second offered to each service [default: 100]: all inserts, or with
    /// `--failover-mix shop` split by the shop mix's weights (inserts, orders by id, product searches).
    #[arg(long = "failover-rate", default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=2000))]
    pub failover_rate: u32,
    /// failover: `insert` (every request an insert) or `shop` (loadtest/mixes.json's shop weights;
    /// the reads are sent once each, the inserts retried as always) [default: insert].
    #[arg(long = "failover-mix", default_value = "insert", value_parser = ["insert", "shop"])]
    pub failover_mix: String,
    /// failover: how long the inserts arrive [default: 40 s; 30 s with --quick].
    #[arg(long = "failover-seconds", value_parser = orders_loadgen::duration::parse)]
    pub failover_seconds: Option<std::time::Duration>,
    /// failover: when both primaries are killed, from the first insert [default: 10 s; 5 s with --quick].
    #[arg(long = "kill-after", value_parser = orders_loadgen::duration::parse)]
    pub kill_after: Option<std::time::Duration>,
    /// failover: retries per insert at most (back-off 100 ms doubling to 1 s) [default: 40].
    #[arg(long = "failover-retries", default_value_t = 40, value_parser = clap::value_parser!(u32).range(0..=1000))]
    pub failover_retries: u32,
    /// failover: Patroni's `primary_start_timeout` during the run (0: fail over as soon as the
    /// primary's postgres is found dead; Patroni's default 300 restarts it in place first).
    #[arg(long = "primary-start-timeout", default_value_t = 0)]
    pub primary_start_timeout: u32,
    /// failover: Patroni's `ttl`, `loop_wait`, `retry_timeout` (seconds) during the run, put back
    /// after [default: the cluster's own]; Patroni raises a `ttl` under 20 to 20, so none is taken.
    #[arg(long = "patroni-ttl", value_parser = clap::value_parser!(u32).range(20..))]
    pub patroni_ttl: Option<u32>,
    #[arg(long = "patroni-loop-wait")]
    pub patroni_loop_wait: Option<u32>,
    #[arg(long = "patroni-retry-timeout")]
    pub patroni_retry_timeout: Option<u32>,
    /// failover: MongoDB's `electionTimeoutMillis` during the run (`replSetReconfig`), put back
    /// after [default: the set's own].
    #[arg(long = "election-timeout-ms", value_parser = clap::value_parser!(u32).range(500..=600_000))]
    pub election_timeout_ms: Option<u32>,
    /// failover: weaken both engines' durability on purpose (PostgreSQL `synchronous_commit=local`:
    /// a commit no longer waits for the synchronous standby; MongoDB `w: 1`), to see that the run
    /// can catch an acknowledged write lost.
    #[arg(long = "weak-durability")]
    pub weak_durability: bool,
    /// Folder for the report and every raw file [default: results/<timestamp>-experiment-<name>].
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// The services measured, comma-separated: `pg` and `mongo` always (every study row compares
    /// them), `pgh` for the hybrid layout (orders-pg-hybrid on a PostgreSQL server of its own, as
    /// its WAL per update is read from its server's WAL position) [default: doc-size pg,mongo,pgh,
    /// since S2's column is part of what it reproduces; gin and durability pg,mongo, their findings
    /// being about jsonb against MongoDB; gin reads the hybrid's catalog for F1 either way]. A
    /// default the machine cannot run (no hybrid server) is left out with a note.
    #[arg(long, value_delimiter = ',', value_parser = crate::demo::targets::parse_name)]
    pub targets: Vec<String>,
    /// Deployed services instead of local ones: the orders-pg URL (with --mongo-url).
    #[arg(long = "pg-url", requires = "mongo_url")]
    pub pg_url: Option<String>,
    #[arg(long = "mongo-url", requires = "pg_url")]
    pub mongo_url: Option<String>,
    /// With deployed services: the orders-pg-hybrid URL (its database: --database pgh=URL).
    #[arg(long = "pgh-url", requires = "pg_url")]
    pub pgh_url: Option<String>,
    /// With deployed services: the command that applies a variant's settings, `{}` standing for
    /// them as `NAME=value ...` (e.g. `infra/do/do.sh toggle {}`). Without it only the variant the
    /// services run is measured.
    #[arg(long, requires = "pg_url")]
    pub apply: Option<String>,
    /// With deployed services: where their databases are (the experiment reloads them).
    #[command(flatten)]
    pub databases: Databases,
    /// Local: the database created and loaded in every server, and the services use.
    #[arg(long = "db-name", default_value = "orders_experiment")]
    pub db_name: String,
    /// Local: where the service binaries come from.
    #[command(flatten)]
    pub binaries: crate::scaffold::services::Binaries,
    /// Local: equal budgets for the two databases, as the demo's [default: an eighth of the cores
    /// and a quarter of the memory each, at least 0.1 CPU and 1 GiB, at most 4 GiB; `none` runs
    /// without]. Refused with deployed services.
    #[command(flatten)]
    pub budget: BudgetArgs,
}

/// Versions the experiment ran against, read from `/diagnostics`.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Versions {
    pub postgres: Option<String>,
    pub mongodb: Option<String>,
}

/// What every experiment works with.
pub struct Ctx {
    pub name: Name,
    pub scale: Scale,
    pub out: PathBuf,
    pub services: Services,
    /// The measured targets' databases: the hybrid's only when it is measured (`databases.other`).
    pub databases: Databases,
    /// The targets measured, in report order.
    pub targets: Vec<Target>,
    /// The hybrid layout's database wherever one is known on a server of its own, measured or not
    /// (gin reads its catalog).
    pub hybrid: Option<String>,
    pub script: PathBuf,
    pub manifest: PathBuf,
    pub marker: (String, String),
    /// Why the local databases run without budgets, when they do (the rounds' reports say it).
    pub budget_note: Option<String>,
    /// Whether the experiment sends `Prefer: return=minimal` where it measures writes: both
    /// services honour it (probed once, before the first reload; `gin` compares with S1, whose
    /// writes returned the order, and sends it nowhere).
    pub minimal: Option<bool>,
    pub versions: Versions,
    pub notes: Vec<String>,
    pub skipped: Vec<String>,
    /// The local stack, when the experiment runs on it: then every
    /// data set is loaded once and restored from snapshots before each repeat.
    pub local: Option<Stack>,
    /// The snapshots taken so far, one per data set.
    pub snapshots: Vec<(rounds::Data, crate::fresh::Snapshots)>,
    /// What the failover changed on the cluster and has not put back yet: put back on the way
    /// out, interrupted or not.
    pub undo: Option<failover::restore::Undo>,
}

impl Ctx {
    /// Puts `variant` in effect and returns the services' URLs, or `None` (and a note) when
    /// deployed services cannot run it. The first time, it also probes `Prefer: return=minimal`
    /// and reads the server versions.
    pub async fn use_variant(&mut self, variant: &variant::Variant) -> Result<Option<Urls>> {
        let urls = match self.services.prepare(variant).await? {
            services::Prepared::Ready { urls, how } => {
                let note = format!("Variants in effect: {how}, and read back from `/diagnostics` before measuring.");
                if !self.notes.contains(&note) {
                    self.notes.push(note);
                }
                urls
            }
            services::Prepared::Skip(why) => {
                eprintln!("experiment: skipping: {why}");
                if !self.skipped.contains(&why) {
                    self.skipped.push(why);
                }
                return Ok(None);
            }
        };
        if self.minimal.is_none() && self.name != Name::Gin {
            let profile =
                orders_dataset::Profile { seed: 1, orders: 1, customers: 1, products: 3, items: 3, note_bytes: 0 };
            let support = prefer::probe(&urls, &closed_loop::new_order_body(&profile, 2)?).await?;
            if let Some(note) = support.note() {
                self.notes.push(note);
            }
            self.minimal = Some(support.all());
        }
        if self.versions.postgres.is_none() {
            let snapshot = crate::diagnostics::Client::for_services(urls.services())?.snapshot(0.0).await?;
            let (pg, mongo) =
                (PgSnapshot::from_json(snapshot.get("pg")), MongoSnapshot::from_json(snapshot.get("mongo")));
            self.versions = Versions { postgres: pg.server_version, mongodb: mongo.version };
        }
        Ok(Some(urls))
    }

    /// How each repeat on `data` starts: on the local stack, restored from the snapshots of the
    /// data set's first load (loading and snapshotting it the first time); elsewhere, and for data
    /// sets too small for a restore to pay (`fresh::RESTORE_FROM_ORDERS`), reloaded.
    pub async fn reset_for(&mut self, data: rounds::Data) -> Result<crate::fresh::Reset> {
        let Some(stack) = self.local.clone().filter(|_| self.restores()) else {
            let stack = self.local.as_ref().map(Stack::unmarked);
            return Ok(crate::fresh::Reset::reload(rounds::reload_args(self, data), stack));
        };
        if let Some((_, snapshots)) = self.snapshots.iter().find(|(d, _)| *d == data) {
            return Ok(crate::fresh::Reset::Restore(snapshots.clone()));
        }
        let label = format!("i{}_n{}", data.items, data.note_bytes);
        // Neither the load nor the snapshots are measured: both run without the CPU budgets.
        let databases = self.databases.clone();
        let load_and_snapshot = async {
            rounds::load(self, data).await?;
            eprintln!("experiment: snapshots of the data set ({label}) for the repeats to restore");
            crate::fresh::Snapshots::take(&stack, &databases, &label).await
        };
        let (snapshots, _) = crate::fresh::unbudgeted::without_cpu_budget(&stack, load_and_snapshot).await?;
        self.snapshots.push((data, snapshots.clone()));
        Ok(crate::fresh::Reset::Restore(snapshots))
    }

    /// Whether repeats start from a restored snapshot rather than a reload: on the local stack, and
    /// for gin whatever the size (its planner probe works on a copy of the snapshot).
    pub fn restores(&self) -> bool {
        self.local.is_some() && (self.scale.orders >= crate::fresh::RESTORE_FROM_ORDERS || self.name == Name::Gin)
    }

    /// Drops the PostgreSQL copies the experiment made.
    pub async fn drop_snapshots(&mut self) {
        for (_, snapshots) in self.snapshots.drain(..) {
            snapshots.drop_copies().await;
        }
    }

    /// `Prefer: return=minimal` for the writes of a round that measures the write alone.
    pub fn minimal(&self) -> bool {
        self.minimal.unwrap_or(false)
    }

    pub fn measures(&self, target: Target) -> bool {
        self.targets.contains(&target)
    }
}

/// What the experiment changed on a cluster is put back, then its services, once it has them, are
/// stopped (with the stack): whether it finished, failed or was interrupted.
impl scaffold::Stop for Option<Ctx> {
    async fn stop(&mut self) {
        if let Some(ctx) = self.as_mut() {
            if let Some(mut undo) = ctx.undo.take().filter(|u| !u.is_empty()) {
                eprintln!("experiment: putting back what the run changed on the cluster");
                if let Err(error) = undo.restore().await {
                    eprintln!("experiment: not everything was put back: {error:#}");
                }
            }
            ctx.services.stop().await;
        }
    }
}

pub async fn run(args: ExperimentArgs) -> Result<()> {
    let began = Instant::now();
    let repo = crate::repo::root()?;
    let name = args.name;
    let out = crate::repo::absolute(&args.out.clone().unwrap_or_else(|| {
        repo.join("results").join(format!("{}-experiment-{}", crate::repo::folder_stamp(), name.as_str()))
    }));
    std::fs::create_dir_all(out.join("logs")).with_context(|| format!("creating {}", out.display()))?;
    let marker = (MARKER.to_owned(), out.display().to_string());
    let table =
        scaffold::run("experiment", None, async |started| body(&args, &repo, &out, &marker, started).await).await?;
    println!("\n{table}");
    println!(
        "experiment {} finished in {:.0} s; report: {} (and report.html, result.json, charts/)",
        name.as_str(),
        began.elapsed().as_secs_f64(),
        out.join("report.md").display()
    );
    Ok(())
}

fn failover_plan(args: &ExperimentArgs) -> failover::Plan {
    let secs = std::time::Duration::from_secs;
    let (run, kill) = if args.quick { (secs(30), secs(5)) } else { (secs(40), secs(10)) };
    failover::Plan {
        rate: args.failover_rate,
        run: args.failover_seconds.unwrap_or(run),
        kill_after: args.kill_after.unwrap_or(kill),
        retries: args.failover_retries,
        primary_start_timeout: args.primary_start_timeout,
        patroni: [
            ("ttl", args.patroni_ttl),
            ("loop_wait", args.patroni_loop_wait),
            ("retry_timeout", args.patroni_retry_timeout),
        ],
        election_timeout_ms: args.election_timeout_ms,
        weak_durability: args.weak_durability,
        shop: args.failover_mix == "shop",
    }
}

/// Local stack, services and databases, or the deployed ones; then the experiment.
async fn body(
    args: &ExperimentArgs,
    repo: &Path,
    out: &Path,
    marker: &(String, String),
    started: &mut Started<Option<Ctx>>,
) -> Result<String> {
    scaffold::check_db_name(&args.db_name)?;
    let started_at = orders_core::Timestamp::now().to_string();
    let mut selection = Selection::parse(&args.targets, args.name.default_targets())?;
    let mut notes = Vec::new();
    let (services, mut databases, budget_note, local, hybrid) = match (&args.pg_url, &args.mongo_url) {
        (Some(pg), Some(mongo)) => {
            local::local_only(&args.budget)?;
            let databases = args.databases.clone();
            let hybrid = databases.other(HYBRID).map(str::to_owned);
            let mut urls = vec![(Target::Pg, pg.clone()), (Target::Mongo, mongo.clone())];
            if selection.includes(Target::Pgh) {
                let hybrid = own_server(&databases.database_url, hybrid.as_deref());
                match (hybrid, &args.pgh_url) {
                    (Ok(_), Some(url)) => urls.push((Target::Pgh, url.clone())),
                    (Ok(_), None) => selection.leave_out_hybrid("deployed, it needs --pgh-url", &mut notes)?,
                    (Err(why), _) => selection.leave_out_hybrid(&why, &mut notes)?,
                }
            }
            let urls = urls.into_iter().map(|(t, url)| (t, url.trim_end_matches('/').to_owned())).collect();
            (Services::Deployed(Deployed::new(Urls(urls), args.apply.clone())), databases, None, None, hybrid)
        }
        _ => {
            let LocalStack { stack, env, budget_note, mut databases } =
                started.local_stack(repo, marker, &args.budget, &args.db_name).await?;
            // The demo's rule for where the hybrid's database goes: the stack's hybrid server.
            let hybrid = crate::demo::targets::other_databases(&[HYBRID.into()], &env, &args.db_name)
                .map_err(|error| format!("{error:#}"))
                .and_then(|others| own_server(&databases.database_url, others.first().map(|(_, url)| url.as_str())));
            if selection.includes(Target::Pgh) {
                match &hybrid {
                    Ok(url) => databases.others.push((HYBRID.into(), url.clone())),
                    Err(why) => selection.leave_out_hybrid(why, &mut notes)?,
                }
            }
            let backends = scaffold::create_databases(&databases).await?;
            let bin_dir = args.binaries.folder(repo).await?;
            let threads = started.session.service_threads();
            let envs = selection
                .targets
                .iter()
                .map(|target| {
                    let backend = backends.iter().find(|b| b.info().name == target.name());
                    let env = backend.map(|b| scaffold::services::local_env(b.as_ref(), &threads, marker));
                    (*target, env.unwrap_or_default())
                })
                .collect();
            let services = Services::Local(Local::new(bin_dir, out.join("logs"), envs));
            (services, databases, budget_note, Some(stack), hybrid.ok())
        }
    };
    if !selection.includes(Target::Pgh) {
        databases.others.retain(|(name, _)| name != HYBRID);
    }
    let ctx = started.services.insert(Ctx {
        name: args.name,
        scale: Scale::of(args.name, args),
        out: out.to_path_buf(),
        services,
        databases,
        targets: selection.targets,
        hybrid,
        script: repo.join(crate::repo::SCRIPT),
        manifest: out.join("dataset.json"),
        marker: marker.clone(),
        budget_note,
        minimal: None,
        versions: Versions::default(),
        notes,
        skipped: Vec::new(),
        local,
        snapshots: Vec::new(),
        undo: None,
    });
    let outcome = match args.name {
        Name::Gin => gin::run(ctx, &args.variants).await,
        Name::DocSize => doc_size::run(ctx, &args.sizes).await,
        Name::Durability => durability::run(ctx, &args.variants, &args.sizes).await,
        Name::Replication => {
            let budget = crate::budget::demo_default(crate::procstat::cores(), crate::budget::machine_memory())
                .overridden_by(&args.budget);
            replication::run(ctx, &args.sizes, &budget.stack_args()).await
        }
        Name::Failover => {
            let budget = crate::budget::demo_default(crate::procstat::cores(), crate::budget::machine_memory())
                .overridden_by(&args.budget);
            failover::run(ctx, failover_plan(args), &budget.stack_args()).await
        }
        Name::Budget => {
            let memory = crate::budget::demo_default(crate::procstat::cores(), crate::budget::machine_memory())
                .overridden_by(&args.budget)
                .memory;
            budget::run(ctx, &args.budgets, &args.pools, memory).await
        }
    };
    ctx.drop_snapshots().await;
    output::write(ctx, &outcome?, &started_at)
}
