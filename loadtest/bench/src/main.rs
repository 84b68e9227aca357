//! `orders-bench`: the benchmark runner of the two order services. `main` only parses the command
//! line and hands each subcommand to its module (`seed` now; rounds, reports and the local demo
//! join it as modules of their own). `dataset` and `prng` generate the orders, `manifest` records
//! what was seeded where.

mod dataset;
mod manifest;
mod prng;
mod seed;

use clap::{Parser, Subcommand};
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

#[derive(Debug, Subcommand)]
enum Command {
    /// Load the same deterministic orders into PostgreSQL and/or MongoDB and write the manifest.
    Seed(seed::SeedArgs),
}

#[tokio::main]
async fn main() -> ExitCode {
    let result = match Cli::parse().command {
        Command::Seed(args) => seed::run(args).await,
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("orders-bench: error: {error:#}");
            ExitCode::FAILURE
        }
    }
}
