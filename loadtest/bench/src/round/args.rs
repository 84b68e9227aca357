//! `round`'s command line: how it loads the services and judges them (`RoundLoadArgs`, shared
//! with the demo and the experiments) and the rest of `orders-bench round`'s flags (`RoundArgs`).
//! Kept apart from the round itself, which takes a `RoundSpec` built from them.

use super::{launch, lead_in};
use clap::Args;
use orders_loadgen::flags::{PassMarkArgs, StaircaseArgs};
use std::path::PathBuf;
use std::time::Duration;

/// How `round` loads both services and judges them: the staircase, its repeats, the pass mark and
/// the generator's in-flight cap.
#[derive(Debug, Clone, Args)]
pub struct RoundLoadArgs {
    #[command(flatten)]
    pub staircase: StaircaseArgs,
    /// Runs of the whole staircase; the report gives the median and the range.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..))]
    pub repeats: u32,
    #[command(flatten)]
    pub pass_mark: PassMarkArgs,
    /// Run every step even after both targets have failed (default: stop one step after that).
    #[arg(long = "run-all-steps")]
    pub run_all_steps: bool,
    /// Latency the in-flight cap is sized for (k6: VU_BUDGET_MS, which sizes its VU pool): at rate
    /// R at most R × this many requests are in flight per target, later ones are dropped (and the step fails). Four times
    /// the p95 mark keeps an overloaded service from queueing thousands of requests that outlive
    /// the run.
    #[arg(long = "vu-budget-ms", default_value_t = 200)]
    pub vu_budget_ms: u32,
    /// Run even when the fairness gate finds a mismatch (durability, data, pools); the report then
    /// says so at the top.
    #[arg(long = "allow-mismatch")]
    pub allow_mismatch: bool,
    /// Run the native generator at ordinary priority instead of `SCHED_FIFO` (see `load
    /// --no-realtime`).
    #[arg(long = "no-realtime")]
    pub no_realtime: bool,
    /// Do not fill both services' connection pools (1 s of reads by as many clients as the larger
    /// pool) before each repeat's load: without it, the first step pays for opening connections.
    #[arg(long = "no-warm-up")]
    pub no_warm_up: bool,
    /// Run the round's own mix this long right before each repeat's staircase, unjudged, at 0.6 of
    /// its first rate on every target at once (`0` or `none`: none): the databases' start transients (the
    /// full-page images after PostgreSQL's checkpoint, a restarted mongod) fall in it, not in the
    /// first step. Its inserts count as the round's (the fairness gate expects them).
    #[arg(long = "lead-in", default_value = "4s", value_parser = lead_in::parse_length)]
    pub lead_in: Duration,
    /// Seconds between the runner's samples of both databases during a run (pending list, table
    /// counters, WAL; from its own connections) [default: once per step].
    #[arg(long = "poll-interval", value_parser = orders_loadgen::duration::parse)]
    pub poll_interval: Option<Duration>,
}

#[derive(Debug, Clone, Args)]
pub struct RoundArgs {
    /// The mix: read, customer, product, insert, status, shop, or weights such as
    /// `read:50,product:30,insert:20` (see loadtest/README.md).
    #[arg(long, default_value = "shop")]
    pub mix: String,
    /// Name of the round (folder and report); default: the mix.
    #[arg(long)]
    pub name: Option<String>,
    #[command(flatten)]
    pub load: RoundLoadArgs,
    /// A target's service, `NAME=URL` (repeatable): `pg=http://10.0.0.5:8080`. Every known target
    /// is driven; those not named here at their service's default URL (pg :8080, mongo :8081).
    #[arg(long = "target", value_parser = orders_bench_engines::parse_target)]
    pub targets: Vec<(String, String)>,
    /// Base URL of the orders-pg service (the same as `--target pg=URL`).
    #[arg(long = "pg-url")]
    pub pg_url: Option<String>,
    /// Base URL of the orders-mongo service (the same as `--target mongo=URL`).
    #[arg(long = "mongo-url")]
    pub mongo_url: Option<String>,
    /// Reload the data set into both databases before every repeat (`--reset` seeding with the
    /// profile below, or the manifest's when none is given). The services keep running.
    #[arg(long)]
    pub reseed: bool,
    /// Orders to reseed [default: the manifest's, else 1,000,000].
    #[arg(long, requires = "reseed")]
    pub orders: Option<u64>,
    /// Items per order when reseeding [default: the manifest's, else 3].
    #[arg(long, requires = "reseed")]
    pub items: Option<u32>,
    /// Note bytes per order when reseeding [default: the manifest's, else 0].
    #[arg(long = "note-bytes", requires = "reseed")]
    pub note_bytes: Option<u32>,
    /// The data set manifest (written by `orders-bench seed`, read by the load generator and the
    /// fairness gate).
    #[arg(long, default_value = ".local/dataset.json")]
    pub manifest: PathBuf,
    /// Where the databases are (reseeding, exact counts, WAL; CPU when they are local).
    #[command(flatten)]
    pub databases: orders_bench_engines::databases::Databases,
    /// Equal budgets for the databases, when they are the local stack's [default: leave them as
    /// they are; the report says what they were].
    #[command(flatten)]
    pub budget: crate::budget::BudgetArgs,
    /// The load generator: orders-bench's own (`native`, cheap enough to share the machine with the
    /// databases) or k6 with loadtest/k6/orders.js (what load droplets and --followers use).
    #[arg(long, value_enum, default_value_t = launch::Generator::Native)]
    pub generator: launch::Generator,
    /// The k6 binary, with --generator k6 [default: the local stack's .venv/bin/k6, else k6 on the PATH].
    #[arg(long, env = "K6")]
    pub k6: Option<PathBuf>,
    /// The k6 script [default: loadtest/k6/orders.js of this repository].
    #[arg(long)]
    pub script: Option<PathBuf>,
    /// Folder for the round's files [default: results/<timestamp>-<name>].
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Log the plan of every statement that runs at least this many milliseconds (PostgreSQL's
    /// `auto_explain`, enabled on the round's database; needs a superuser), so the report can say
    /// which plan, generic or custom, ran each sequential scan. Ends the services' database
    /// sessions once per repeat (their pools reconnect).
    #[arg(long = "plan-log-ms")]
    pub plan_log_ms: Option<f64>,
    /// Agents (`orders-bench agent`) on other load machines, as base URLs, e.g.
    /// `http://10.110.0.7:9400,http://10.110.0.8:9400`: every repeat then runs in k6 execution
    /// segments, this machine's and one per agent, started together and merged into one result.
    #[arg(long, value_delimiter = ',')]
    pub followers: Vec<String>,
    /// Push the load generator's figures to this Prometheus remote-write URL while the round runs,
    /// e.g. http://127.0.0.1:9090/api/v1/write: the native generator's `--prometheus-rw`, or k6's
    /// experimental-prometheus-rw output with native histograms (same metric names either way).
    #[arg(long = "prometheus-rw")]
    pub prometheus_rw: Option<String>,
}

impl RoundArgs {
    /// Every target's service URL the flags name: `--target NAME=URL`, and its aliases.
    pub fn target_urls(&self) -> Vec<(String, String)> {
        let aliases = [("pg", &self.pg_url), ("mongo", &self.mongo_url)];
        let named = aliases.into_iter().filter_map(|(name, url)| Some((name.to_owned(), url.clone()?)));
        named.chain(self.targets.iter().cloned()).collect()
    }
}
