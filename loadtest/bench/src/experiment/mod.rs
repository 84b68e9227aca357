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

mod args;
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

pub use args::{ExperimentArgs, Name};

use crate::budget::local;
use crate::scaffold::{self, LocalStack, Started};
use anyhow::{Context, Result};
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
