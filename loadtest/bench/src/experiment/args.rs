//! `orders-bench experiment`'s command line: which experiment (`Name`) and the flags they share
//! (`ExperimentArgs`: targets, services, staircase, budgets), apart from the running in `mod.rs`.

use super::budget;
use super::engine::Target;
use crate::budget::BudgetArgs;
use clap::{Args, ValueEnum};
use orders_bench_engines::databases::Databases;
use serde::Serialize;
use std::path::PathBuf;

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
