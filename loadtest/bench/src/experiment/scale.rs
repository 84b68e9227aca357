//! How big an experiment runs: the data set, the repeats, the steps of its staircases (fixed, or
//! placed around a short closed loop) and the closed loop, for the three sizes `--quick` (CI),
//! the default (minutes on two cores) and `--full` (the studies' own scale), with flags on top.

use super::{ExperimentArgs, Name};
use serde::Serialize;
use std::time::Duration;

/// A staircase of offered rates.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Staircase {
    pub start: u32,
    pub step: u32,
    pub max: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Size {
    Quick,
    Default,
    Full,
}

/// How big an experiment runs.
#[derive(Debug, Clone, Serialize)]
pub struct Scale {
    pub size: Size,
    pub orders: u64,
    pub repeats: u32,
    #[serde(with = "orders_bench_model::seconds")]
    pub step_seconds: Duration,
    /// A fixed staircase; `None`: placed around a short closed loop per round.
    pub staircase: Option<Staircase>,
    pub clients: u32,
    #[serde(with = "orders_bench_model::seconds")]
    pub closed_seconds: Duration,
    pub closed_runs: u32,
    /// The closed loop that places a staircase.
    #[serde(with = "orders_bench_model::seconds")]
    pub calibrate_seconds: Duration,
}

impl Scale {
    pub fn of(name: Name, args: &ExperimentArgs) -> Self {
        let size = if args.quick {
            Size::Quick
        } else if args.full {
            Size::Full
        } else {
            Size::Default
        };
        let secs = Duration::from_secs;
        let tiny = Some(Staircase { start: 50, step: 50, max: 50 });
        let mut scale = match (name, size) {
            (Name::Gin, Size::Quick) => {
                Scale::new(size, 2_000, 1, secs(1), Some(Staircase { start: 100, step: 100, max: 200 }))
            }
            (Name::Gin, Size::Default) => {
                Scale::new(size, 100_000, 2, secs(3), Some(Staircase { start: 200, step: 200, max: 4_000 }))
            }
            (Name::Gin, Size::Full) => {
                Scale::new(size, 1_000_000, 3, secs(30), Some(Staircase { start: 500, step: 500, max: 10_000 }))
            }
            // Two rates: the line through them splits each database's marginal cost from its idle.
            (Name::Budget, Size::Quick) => {
                Scale::new(size, 200, 1, secs(1), Some(Staircase { start: 50, step: 50, max: 100 }))
            }
            (_, Size::Quick) => {
                Scale { clients: 2, closed_seconds: secs(1), ..Scale::new(size, 200, 1, secs(1), tiny) }
            }
            (Name::DocSize, Size::Default) => {
                Scale { closed_seconds: secs(10), closed_runs: 3, ..Scale::new(size, 2_000, 1, secs(3), None) }
            }
            // The demo's data and lead-in; each mix's staircase placed by a closed loop under the
            // smallest budget (`budget::staircase`), since the knees move threefold between machines.
            (Name::Budget, Size::Default) => {
                Scale { calibrate_seconds: secs(3), ..Scale::new(size, 100_000, 2, secs(4), None) }
            }
            // failover drives its own open loop (`failover::Plan`); no data set, no staircase.
            (Name::Failover, Size::Default) => Scale::new(size, 200, 1, secs(1), tiny),
            (Name::Replication, Size::Default) => {
                Scale { closed_seconds: secs(4), ..Scale::new(size, 1_000, 1, secs(2), None) }
            }
            (Name::Durability, Size::Default) => {
                Scale { closed_seconds: secs(3), ..Scale::new(size, 1_000, 1, secs(2), None) }
            }
            (_, Size::Full) => Scale {
                closed_seconds: secs(20),
                closed_runs: 5,
                calibrate_seconds: secs(5),
                ..Scale::new(size, 10_000, 3, secs(30), None)
            },
        };
        scale.orders = args.orders.unwrap_or(scale.orders);
        scale.repeats = args.repeats.unwrap_or(scale.repeats);
        scale.step_seconds = args.step_duration.unwrap_or(scale.step_seconds);
        if let (Some(start), Some(step), Some(max)) = (args.start_rate, args.step, args.max_rate) {
            scale.staircase = Some(Staircase { start, step, max });
        }
        scale.clients = args.clients.unwrap_or(scale.clients);
        scale.closed_seconds = args.closed_seconds.unwrap_or(scale.closed_seconds);
        scale.closed_runs = args.closed_runs.unwrap_or(scale.closed_runs);
        scale
    }

    /// The lead-in before every repeat's staircase (`RoundSpec::lead_in`): the quick experiments
    /// hold each rate 1 s over a few hundred orders, so 1 s; otherwise the demo's.
    pub fn lead_in(&self) -> Duration {
        match self.size {
            Size::Quick => Duration::from_secs(1),
            Size::Default | Size::Full => crate::round::lead_in::LENGTH,
        }
    }

    fn new(size: Size, orders: u64, repeats: u32, step_seconds: Duration, staircase: Option<Staircase>) -> Self {
        Self {
            size,
            orders,
            repeats,
            step_seconds,
            staircase,
            clients: 8,
            closed_seconds: Duration::from_secs(5),
            closed_runs: 1,
            calibrate_seconds: Duration::from_secs(2),
        }
    }

    /// The staircase of a round: the fixed one, or twenty steps of a tenth of `capacity` (the
    /// slower target's closed-loop rate), in round numbers. A closed loop of a few clients is
    /// bounded by their concurrency, and an open loop on a shared machine by the machine, so the
    /// passing rate can lie well below or somewhat above it: the steps are fine enough for the
    /// first and reach twice as far for the second; the round stops once both have failed.
    pub fn staircase(&self, capacity: f64) -> Staircase {
        if let Some(fixed) = self.staircase {
            return fixed;
        }
        let raw = (capacity / 10.0).max(10.0);
        let magnitude = 10f64.powf(raw.log10().floor());
        let nice = [1.0, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0].map(|m| m * magnitude);
        let step = nice.iter().copied().min_by(|a, b| (a - raw).abs().total_cmp(&(b - raw).abs())).unwrap_or(raw);
        let step = step.round() as u32;
        Staircase { start: step, step, max: step * 20 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: ExperimentArgs,
    }

    fn args(line: &[&str]) -> ExperimentArgs {
        Cli::try_parse_from(std::iter::once("x").chain(line.iter().copied())).expect("arguments").args
    }

    #[test]
    fn each_size_has_its_scale_and_flags_override_it() {
        let gin = Scale::of(Name::Gin, &args(&["gin"]));
        assert_eq!((gin.orders, gin.repeats, gin.step_seconds), (100_000, 2, Duration::from_secs(3)));
        let full = Scale::of(Name::Gin, &args(&["gin", "--full"]));
        assert_eq!(
            (full.orders, full.repeats, full.step_seconds),
            (1_000_000, 3, Duration::from_secs(30)),
            "S1's scale"
        );
        let s2 = Scale::of(Name::DocSize, &args(&["doc-size", "--full"]));
        assert_eq!(
            (s2.clients, s2.closed_seconds, s2.closed_runs),
            (8, Duration::from_secs(20), 5),
            "S2's closed loop"
        );
        let mine = Scale::of(
            Name::DocSize,
            &args(&["doc-size", "--orders", "500", "--start-rate", "10", "--step", "10", "--max-rate", "50"]),
        );
        assert_eq!(mine.orders, 500);
        assert_eq!(mine.staircase, Some(Staircase { start: 10, step: 10, max: 50 }));
        let json = serde_json::to_string(&Scale::of(Name::DocSize, &args(&["doc-size", "--step-duration", "2.5"])))
            .expect("JSON");
        for seconds in [r#""step_seconds":2.5"#, r#""closed_seconds":10.0"#, r#""calibrate_seconds":2.0"#] {
            assert!(json.contains(seconds), "result.json's scale in seconds: {json}");
        }
        assert!(Cli::try_parse_from(["x", "gin", "--quick", "--full"]).is_err());
        assert!(Cli::try_parse_from(["x", "gin", "--start-rate", "10"]).is_err(), "a staircase needs all three");
        assert!(Cli::try_parse_from(["x", "gin", "--apply", "true"]).is_err(), "--apply needs deployed services");
    }

    #[test]
    fn targets_default_per_experiment_and_an_unknown_one_is_refused_by_name() {
        use crate::experiment::engine::{Selection, Target};
        let selection = |line: &[&str]| {
            let args = args(line);
            Selection::parse(&args.targets, args.name.default_targets()).expect("targets").targets
        };
        assert_eq!(selection(&["doc-size"]), Target::ALL, "S2's column is part of doc-size");
        assert_eq!(selection(&["gin"]), [Target::Pg, Target::Mongo]);
        assert_eq!(selection(&["durability"]), [Target::Pg, Target::Mongo]);
        assert_eq!(selection(&["doc-size", "--targets", "pg,mongo"]), [Target::Pg, Target::Mongo]);
        assert_eq!(selection(&["gin", "--targets", "pg,mongo,pgh"]), Target::ALL);
        let error = Cli::try_parse_from(["x", "doc-size", "--targets", "pg,mongo,pgx"]).err().expect("refused");
        assert!(error.to_string().contains("no target named \"pgx\" (known: pg, mongo, pgh"), "{error}");
        assert!(Cli::try_parse_from(["x", "doc-size", "--pgh-url", "http://h"]).is_err(), "deployed needs --pg-url");
    }

    #[test]
    fn a_placed_staircase_reaches_past_the_closed_loop_rate_in_round_steps() {
        let scale = Scale::of(Name::Durability, &args(&["durability"]));
        assert_eq!(scale.staircase(3252.0), Staircase { start: 300, step: 300, max: 6000 });
        assert_eq!(scale.staircase(977.0), Staircase { start: 100, step: 100, max: 2000 });
        assert_eq!(scale.staircase(360.0), Staircase { start: 40, step: 40, max: 800 });
        assert_eq!(scale.staircase(0.0), Staircase { start: 10, step: 10, max: 200 });
        let fixed = Scale::of(Name::Gin, &args(&["gin"]));
        assert_eq!(fixed.staircase(1e6), Staircase { start: 200, step: 200, max: 4000 });
    }
}
