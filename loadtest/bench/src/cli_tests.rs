//! The shared flags as the real command line parses them: `orders-bench load` and
//! `orders-bench round`, each with its defaults and every check; and `demo --targets`.

use crate::{Cli, Command, Runner};
use clap::error::ErrorKind;
use clap::{CommandFactory as _, Parser as _};
use orders_bench::round::RoundLoadArgs;
use orders_bench_model::result::RatePlan;
use orders_bench_model::verdict::PassMark;
use orders_loadgen::LoadArgs;
use orders_loadgen::flags::{PassMarkArgs, StaircaseArgs};
use std::time::Duration;

fn load(line: &[&str]) -> Result<LoadArgs, clap::Error> {
    match Cli::try_parse_from(["orders-bench", "load"].iter().chain(line)).map(|cli| cli.command)? {
        Command::Load(args) => Ok(args),
        other => panic!("not load: {other:?}"),
    }
}

fn round(line: &[&str]) -> Result<RoundLoadArgs, clap::Error> {
    match Cli::try_parse_from(["orders-bench", "round"].iter().chain(line)).map(|cli| cli.command)? {
        Command::Runner(Runner::Round(args)) => Ok(args.load),
        other => panic!("not round: {other:?}"),
    }
}

fn demo_targets(line: &[&str]) -> Result<Vec<String>, clap::Error> {
    match Cli::try_parse_from(["orders-bench", "demo"].iter().chain(line)).map(|cli| cli.command)? {
        Command::Runner(Runner::Demo(args)) => Ok(args.targets),
        other => panic!("not demo: {other:?}"),
    }
}

/// The staircase and pass mark `line` gives on each command, in that order.
fn on_both(line: &[&str]) -> [Result<(StaircaseArgs, PassMarkArgs), clap::Error>; 2] {
    [load(line).map(|a| (a.staircase, a.pass_mark)), round(line).map(|a| (a.staircase, a.pass_mark))]
}

fn refused(line: &[&str]) -> [Option<ErrorKind>; 2] {
    on_both(line).map(|parsed| parsed.err().map(|e| e.kind()))
}

#[test]
fn both_commands_default_to_s1s_staircase_and_pass_mark() {
    for parsed in on_both(&[]) {
        let (staircase, mark) = parsed.expect("no flags at all");
        let plan = staircase.plan().expect("the default staircase");
        assert_eq!(
            plan,
            RatePlan {
                start_rate: 100,
                step: 100,
                max_rate: 1000,
                step_seconds: Duration::from_secs(30),
                factor: None
            }
        );
        assert_eq!(plan.rates(), [100, 200, 300, 400, 500, 600, 700, 800, 900, 1000]);
        assert_eq!(mark.pass_mark(), PassMark { p95_ms: 50.0, max_failed_rate: 0.01, max_dropped: 0 });
    }
}

#[test]
fn each_command_keeps_its_own_in_flight_budget() {
    assert_eq!(load(&[]).expect("load").vu_budget_ms, 1000, "k6's script default");
    assert_eq!(round(&[]).expect("round").vu_budget_ms, 200, "four times the p95 mark");
    assert_eq!(load(&["--vu-budget-ms", "300"]).expect("load").vu_budget_ms, 300);
    assert_eq!(round(&["--vu-budget-ms", "300"]).expect("round").vu_budget_ms, 300);
}

#[test]
fn a_step_factor_replaces_the_step_on_both_commands() {
    let line = ["--start-rate", "500", "--max-rate", "3000", "--step-factor", "1.2", "--step-duration", "1m30s"];
    for parsed in on_both(&line) {
        let plan = parsed.expect("a factor staircase").0.plan().expect("plan");
        assert_eq!((plan.factor, plan.step_seconds), (Some(1.2), Duration::from_secs(90)));
        assert_eq!(plan.rates(), [500, 600, 720, 860, 1000, 1200, 1400, 1700, 2000, 2400, 2900]);
    }
    for parsed in on_both(&["--step-factor", "4"]) {
        assert_eq!(parsed.expect("4 is the largest factor").0.step_factor, Some(4.0));
    }
}

#[test]
fn bad_staircases_are_refused_on_both_commands() {
    let conflict = Some(ErrorKind::ArgumentConflict);
    assert_eq!(refused(&["--step", "50", "--step-factor", "1.2"]), [conflict; 2]);
    let invalid = Some(ErrorKind::ValueValidation);
    for flag in ["--start-rate", "--step", "--max-rate", "--step-duration"] {
        assert_eq!(refused(&[flag, "0"]), [invalid; 2], "{flag} 0");
    }
    for factor in ["1", "0.8", "4.01", "x"] {
        assert_eq!(refused(&["--step-factor", factor]), [invalid; 2], "--step-factor {factor}");
    }
    for parsed in on_both(&["--start-rate", "500", "--max-rate", "100"]) {
        let error = parsed.expect("parses").0.plan().expect_err("a staircase that goes down");
        assert_eq!(error.to_string(), "--max-rate (100) is below --start-rate (500)");
    }
    for parsed in on_both(&["--start-rate", "500", "--max-rate", "500"]) {
        assert_eq!(parsed.expect("parses").0.plan().expect("one step").rates(), [500]);
    }
}

#[test]
fn bad_pass_marks_are_refused_on_both_commands() {
    let invalid = Some(ErrorKind::ValueValidation);
    for bad in ["--p95-ms=0", "--p95-ms=-5", "--p95-ms=nan", "--p95-ms=inf", "--p95-ms=50ms"] {
        assert_eq!(refused(&[bad]), [invalid; 2], "{bad}");
    }
    for bad in ["--max-failed-rate=1.5", "--max-failed-rate=-0.1", "--max-failed-rate=1%"] {
        assert_eq!(refused(&[bad]), [invalid; 2], "{bad}");
    }
    for parsed in on_both(&["--p95-ms", "250", "--max-failed-rate", "0"]) {
        let mark = parsed.expect("a strict pass mark").1.pass_mark();
        assert_eq!(mark, PassMark { p95_ms: 250.0, max_failed_rate: 0.0, max_dropped: 0 });
    }
}

#[test]
fn load_takes_a_list_of_rates_or_a_step_factor_not_both() {
    let error = load(&["--rates", "100,200", "--step-factor", "1.2"]).expect_err("two staircases");
    assert_eq!(error.kind(), ErrorKind::ArgumentConflict);
    assert_eq!(load(&["--rates", "100,200", "--step-duration", "2s"]).expect("the round's way").rates, [100, 200]);
}

#[test]
fn both_commands_list_every_shared_flag_with_its_help() {
    let cli = Cli::command();
    for name in ["load", "round"] {
        let command = cli.find_subcommand(name).expect(name);
        for flag in [
            "start-rate",
            "step",
            "max-rate",
            "step-factor",
            "step-duration",
            "p95-ms",
            "max-failed-rate",
            "vu-budget-ms",
        ] {
            let arg = command.get_arguments().find(|a| a.get_long() == Some(flag));
            let arg = arg.unwrap_or_else(|| panic!("{name} has no --{flag}"));
            assert!(!arg.is_hide_set() && arg.get_help().is_some(), "{name} --{flag} has no help");
        }
    }
}

#[test]
fn other_databases_come_from_the_flag_or_from_the_environment_several_at_once() {
    let cli = Cli::command();
    for name in ["seed", "round"] {
        let command = cli.find_subcommand(name).expect(name);
        let arg = command.get_arguments().find(|a| a.get_long() == Some("database")).expect("--database");
        assert_eq!(arg.get_env(), Some(std::ffi::OsStr::new("ORDERS_BENCH_DATABASE")), "{name}");
        assert!(arg.is_hide_env_values_set(), "{name}: its URL holds a password, which --help must not show");
    }
    let line = ["orders-bench", "seed", "--database", "pgh=postgres://a/x pg2=postgres://b/y"];
    match Cli::try_parse_from(line).expect("two in one value").command {
        Command::Runner(Runner::Seed(args)) => {
            assert_eq!(args.databases.other("pgh"), Some("postgres://a/x"));
            assert_eq!(args.databases.other("pg2"), Some("postgres://b/y"));
        }
        other => panic!("not seed: {other:?}"),
    }
}

#[test]
fn the_demo_compares_pg_and_mongo_and_adds_the_hybrid_when_told() {
    assert_eq!(demo_targets(&[]).expect("default"), ["pg", "mongo"]);
    assert_eq!(demo_targets(&["--targets", "pg,mongo,pgh"]).expect("three"), ["pg", "mongo", "pgh"]);
    let error = demo_targets(&["--targets", "pg,mongo,pgx"]).expect_err("unknown");
    assert_eq!(error.kind(), ErrorKind::ValueValidation);
    assert!(error.to_string().contains("no target named \"pgx\" (known: pg, mongo, pgh)"), "{error}");
}
