//! `orders-bench`: the command line of the benchmark runner. It only parses the command line and
//! hands each subcommand to the crate that owns it: `load` to the native load generator
//! (`orders-loadgen`, on a one-thread runtime of its own, or none), every other command to the
//! orchestration (`orders_bench`, the library beside this file) on tokio's default runtime.

#[cfg(test)]
mod cli_tests;

use clap::{Parser, Subcommand};
use orders_bench::{demo, experiment, fleet, reports, round, seed};
use std::process::ExitCode;

#[derive(Debug, Parser)]
#[command(
    name = "orders-bench",
    version,
    about = "Seeds, drives and reports the PostgreSQL jsonb vs MongoDB order services"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// Every command: the load generator, which runs on a one-thread runtime of its own (and on none
/// in its open loop), and the runner's commands, which share tokio's default runtime.
#[derive(Debug, Subcommand)]
// Parsed once per process: the size of the largest variant does not matter.
#[allow(clippy::large_enum_variant)]
enum Command {
    #[command(flatten)]
    Runner(Runner),
    /// The native open-loop load generator (what `round` and `demo` run): a staircase or constant
    /// rate, or a closed loop with --clients; the k6 script's mixes and summary JSON.
    Load(orders_loadgen::LoadArgs),
}

#[derive(Debug, Subcommand)]
#[allow(clippy::large_enum_variant)]
enum Runner {
    /// Load the same deterministic orders into PostgreSQL and/or MongoDB and write the manifest.
    Seed(seed::SeedArgs),
    /// Drive both services at once up a staircase of arrival rates (the native generator, or k6),
    /// repeated, and judge every step: maximum passing rate per target, diagnostics and CPU that
    /// explain it, a fairness gate.
    Round(Box<round::RoundArgs>),
    /// Combine round folders into one report.md, a self-contained report.html and SVG charts.
    Report(reports::ReportArgs),
    /// Two runs side by side (a toggle, a rerun): per round and database both maximum passing
    /// rates with every repeat, the change and whether it is larger than the spread, and the
    /// settings that differ.
    Compare(reports::CompareArgs),
    /// Every run on one page: writes results/index.html, one row per folder of results/ (date,
    /// machine, commit, settings and budgets, the answer per mix; experiments too; a folder that
    /// is not a readable run says why) and a comparison page for every two runs with a round in
    /// common, linked from it. Plain files: open it in a browser, no server.
    Results(reports::ResultsArgs),
    /// The whole comparison on this machine: local stack, both services, read/insert/status/shop
    /// rounds (or your own: --mix, --mixes-file; your documents: --items, --note-bytes) and the
    /// report; stops everything it started (about twelve minutes, --quick under three).
    Demo(demo::DemoArgs),
    /// Serve as a follower load machine: run this machine's k6 execution segment of a leader's
    /// round (`round --followers`) and report its summary, drops and CPU.
    Agent(fleet::agent::AgentArgs),
    /// One published finding, reproduced: gin (S1 F1), doc-size (S2 F2, S4, S1 F3) or durability
    /// (S2 F4); each row of its table shows the study's figure beside ours.
    Experiment(experiment::ExperimentArgs),
}

async fn dispatch(command: Runner) -> anyhow::Result<()> {
    match command {
        Runner::Seed(args) => seed::run(args).await,
        Runner::Round(args) => round::run(*args).await,
        Runner::Report(args) => reports::report(args),
        Runner::Compare(args) => reports::compare(args),
        Runner::Results(args) => reports::results(args),
        Runner::Demo(args) => demo::run(args).await,
        Runner::Agent(args) => fleet::agent::run(args).await,
        Runner::Experiment(args) => experiment::run(args).await,
    }
}

/// mimalloc: the load generator allocates a little for every request (its task, the request's
/// path), and glibc's allocator was several per cent of its CPU per request.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let result = match Cli::parse().command {
        Command::Load(args) => orders_loadgen::run(args),
        Command::Runner(command) => tokio::runtime::Runtime::new()
            .map_err(anyhow::Error::from)
            .and_then(|runtime| runtime.block_on(dispatch(command))),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("orders-bench: error: {error:#}");
            ExitCode::FAILURE
        }
    }
}
