//! The flags of a staircase of offered rates (`--start-rate`, `--step`, `--max-rate`,
//! `--step-factor`, `--step-duration`) and of the pass mark (`--p95-ms`, `--max-failed-rate`),
//! declared once: `orders-bench load` and `orders-bench round` flatten the same two structs, so
//! their names, defaults, checks and help cannot drift apart. They are two structs because they
//! are two things: `load --rate` or `--clients` runs no staircase but is still judged by the pass
//! mark. Each turns into its model type here (`RatePlan`, `PassMark`), with every check the
//! command line needs. `--vu-budget-ms` is not here: its default differs on purpose (`load` 1000
//! like k6's script, `round` 200), so each command declares its own.

use crate::duration;
use anyhow::{Result, bail};
use clap::Args;
use orders_bench_model::result::RatePlan;
use orders_bench_model::verdict::PassMark;
use std::time::Duration;

/// A staircase of offered rates, per target.
#[derive(Debug, Clone, Args)]
pub struct StaircaseArgs {
    /// Staircase: first offered rate, requests/s per target.
    #[arg(long = "start-rate", default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..))]
    pub start_rate: u32,
    /// Staircase: rate added at every step, requests/s.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..))]
    pub step: u32,
    /// Staircase: highest offered rate, requests/s (the staircase stops at the last step not above
    /// it).
    #[arg(long = "max-rate", default_value_t = 1000, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_rate: u32,
    /// Staircase, instead of --step: each rate this many times the one before (above 1, at most 4,
    /// e.g. 1.2), rounded to two significant digits: the same relative resolution for a slow and a
    /// fast target.
    #[arg(long = "step-factor", value_parser = parse_factor, conflicts_with = "step")]
    pub step_factor: Option<f64>,
    /// Staircase: how long each rate is held: `30s`, `1m`, `1m30s` or seconds.
    #[arg(long = "step-duration", default_value = "30s", value_parser = duration::parse)]
    pub step_duration: Duration,
}

impl StaircaseArgs {
    /// The staircase these flags describe; refused when `--max-rate` is below `--start-rate`.
    pub fn plan(&self) -> Result<RatePlan> {
        if self.max_rate < self.start_rate {
            bail!("--max-rate ({}) is below --start-rate ({})", self.max_rate, self.start_rate);
        }
        Ok(RatePlan {
            start_rate: self.start_rate,
            step: self.step,
            max_rate: self.max_rate,
            step_seconds: self.step_duration,
            factor: self.step_factor,
        })
    }
}

/// What a step must do to pass, per target.
#[derive(Debug, Clone, Args)]
pub struct PassMarkArgs {
    /// Pass mark: p95 latency below this, milliseconds (also what counts as a slow request in a
    /// window).
    #[arg(long = "p95-ms", default_value_t = 50.0, value_parser = parse_milliseconds)]
    pub p95_ms: f64,
    /// Pass mark: share of failed requests below this (0.01 = 1%).
    #[arg(long = "max-failed-rate", default_value_t = 0.01, value_parser = parse_share)]
    pub max_failed_rate: f64,
}

impl PassMarkArgs {
    /// The pass mark these flags describe; no dropped iteration is allowed.
    pub fn pass_mark(&self) -> PassMark {
        PassMark { p95_ms: self.p95_ms, max_failed_rate: self.max_failed_rate, max_dropped: 0 }
    }
}

/// A growth factor of the staircase: above 1, at most 4.
fn parse_factor(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(f) if f > 1.0 && f <= 4.0 => Ok(f),
        _ => Err(format!("\"{text}\" is not a factor above 1 and at most 4, like 1.2")),
    }
}

/// A latency mark: a number of milliseconds above 0.
fn parse_milliseconds(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(ms) if ms > 0.0 && ms.is_finite() => Ok(ms),
        _ => Err(format!("\"{text}\" is not a number of milliseconds above 0, like 50")),
    }
}

/// A share of requests: from 0 to 1.
fn parse_share(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(share) if (0.0..=1.0).contains(&share) => Ok(share),
        _ => Err(format!("\"{text}\" is not a share from 0 to 1, like 0.01")),
    }
}
