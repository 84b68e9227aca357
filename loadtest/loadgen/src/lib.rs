//! `orders-loadgen`: the native load generator of the order services (`orders-bench load` is its
//! command line). Open loop by default (`open`: a staircase of arrival rates on one thread over
//! `wire`'s sockets, so its CPU per request stays a small fraction of a database's), or a closed
//! loop with `--clients N` (`closed`, study S2's way); the same mixes, ids, bodies and summary JSON
//! as `loadtest/k6/orders.js`. It prints live figures (`live`), takes `stop` / `retire NAME` on
//! stdin or a signal (`control`), and still writes its summary when stopped early. It knows nothing
//! of databases or of the runner: it depends only on the data set and the result model.

mod closed;
mod control;
pub mod duration;
pub mod flags;
mod http1;
pub mod live;
pub mod mixes;
mod open;
mod priority;
pub mod prometheus;
mod record;
mod request;
mod stamp;
pub mod summary;
mod wire;

use crate::flags::{PassMarkArgs, StaircaseArgs};
use crate::summary::OfferedStep;
use anyhow::{Context, Result, bail};
use clap::Args;
use control::Control;
use open::OpenLoop;
use record::Recorder;
use request::{EndpointPlan, RequestMaker};
use serde_json::json;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use summary::Retired;

#[derive(Debug, Clone, Args)]
pub struct LoadArgs {
    /// Services to drive at the same moment: name=http://host:port, comma-separated.
    #[arg(long, default_value = "pg=http://127.0.0.1:8080,mongo=http://127.0.0.1:8081")]
    pub targets: String,
    /// A mix of loadtest/mixes.json (read, customer, product, insert, status, shop) or weights such
    /// as `read:50,product:30,insert:20`.
    #[arg(long, default_value = "shop")]
    pub mix: String,
    /// The data set manifest written by `orders-bench seed` (id ranges, items per order, note size).
    #[arg(long, default_value = ".local/dataset.json")]
    pub manifest: PathBuf,
    /// One constant rate, requests/s per target, for --duration (instead of the staircase).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub rate: Option<u32>,
    /// Length of a constant-rate or closed-loop run.
    #[arg(long, default_value = "30s", value_parser = duration::parse)]
    pub duration: Duration,
    #[command(flatten)]
    pub staircase: StaircaseArgs,
    /// Staircase: these rates, in this order (comma-separated), instead of --start-rate, --step,
    /// --step-factor and --max-rate.
    #[arg(long, value_delimiter = ',', value_parser = clap::value_parser!(u32).range(1..), conflicts_with_all = ["rate", "step_factor"])]
    pub rates: Vec<u32>,
    /// Closed loop instead: this many clients per target, each sending its next request as soon as
    /// the previous one is answered, for --duration (study S2: 8 clients, 20 s).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=10_000), conflicts_with = "rate")]
    pub clients: Option<u32>,
    #[command(flatten)]
    pub pass_mark: PassMarkArgs,
    /// At rate R at most R × this many requests in flight per target (at least 20); an iteration
    /// due beyond that is dropped and counted, like k6's VU budget.
    #[arg(long = "vu-budget-ms", default_value_t = 1000)]
    pub vu_budget_ms: u32,
    /// A request unanswered after this fails.
    #[arg(long = "request-timeout", default_value = "10s", value_parser = duration::parse)]
    pub request_timeout: Duration,
    /// Length of the windows the stall recognition works with.
    #[arg(long = "window", default_value = "100ms", value_parser = duration::parse)]
    pub window: Duration,
    /// Seed of the ids and bodies (the same seed sends the same requests).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Where the summary JSON goes (parent folders are created).
    #[arg(long, default_value = "results/load-summary.json")]
    pub summary: PathBuf,
    /// `return=minimal`: writes carry `Prefer: return=minimal` and expect 201 / 204 without a body
    /// (what `orders-bench experiment` uses where it measures the write alone).
    #[arg(long, value_parser = ["return=minimal"])]
    pub prefer: Option<String>,
    /// Run the open loop at ordinary priority instead of asking for the real-time policy
    /// `SCHED_FIFO` (see loadgen/priority.rs; refused without root or CAP_SYS_NICE, and then the
    /// summary says so). A closed loop always runs at ordinary priority.
    #[arg(long = "no-realtime")]
    pub no_realtime: bool,
    /// Print live figures as JSON lines on stdout every half second (for `round`).
    #[arg(long)]
    pub progress: bool,
    /// Push the figures to Prometheus by remote write once a second, as k6's
    /// experimental-prometheus-rw output does and under its metric names (open loop only), e.g.
    /// http://127.0.0.1:9090/api/v1/write.
    #[arg(long = "prometheus-rw", env = prometheus::PUSH_URL_ENV, conflicts_with = "clients")]
    pub prometheus_rw: Option<String>,
    /// Only print the endpoints and mixes of loadtest/mixes.json and how --mix resolves, as JSON
    /// (the k6 script prints the same with PRINT_MIXES=1), and exit.
    #[arg(long = "print-mix")]
    pub print_mix: bool,
}

/// The staircase (or the one constant step) and the executor name k6 would give it.
fn schedule(args: &LoadArgs) -> Result<(&'static str, Vec<OfferedStep>)> {
    if args.clients.is_some() {
        return Ok(("closed-loop", vec![OfferedStep { from_s: 0.0, to_s: args.duration.as_secs_f64(), rate: 0 }]));
    }
    if let Some(rate) = args.rate {
        return Ok((
            "constant-arrival-rate",
            vec![OfferedStep { from_s: 0.0, to_s: args.duration.as_secs_f64(), rate }],
        ));
    }
    let plan = args.staircase.plan()?;
    let rates = if args.rates.is_empty() { plan.rates() } else { args.rates.clone() };
    let step_seconds = plan.step_seconds.as_secs_f64();
    let steps = rates
        .iter()
        .enumerate()
        .map(|(i, rate)| {
            let from_s = i as f64 * step_seconds;
            OfferedStep { from_s, to_s: from_s + step_seconds, rate: *rate }
        })
        .collect();
    Ok(("ramping-arrival-rate", steps))
}

/// `name=http://host:port,...` → each target's name and URL (checked, not yet resolved).
fn parse_targets(text: &str) -> Result<Vec<(String, String)>> {
    let mut targets: Vec<(String, String)> = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let Some((name, url)) = part
            .split_once('=')
            .filter(|(n, _)| !n.is_empty() && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'))
        else {
            bail!("--targets: \"{part}\" is not name=http://host:port (name: letters, digits, _ or -)");
        };
        if targets.iter().any(|(n, _)| n == name) {
            bail!("--targets repeats {name}");
        }
        http1::authority(url).map_err(|e| anyhow::anyhow!("target {name}: {e}"))?;
        targets.push((name.to_owned(), url.trim_end_matches('/').to_owned()));
    }
    if targets.is_empty() {
        bail!("--targets names no target");
    }
    Ok(targets)
}

/// Sleeps of this thread end within a microsecond of their time, not Linux's default 50 µs.
fn precise_sleeps() {
    // Only a finer timer; where the kernel refuses, sleeps are as coarse as before.
    let _ = nix::sys::prctl::set_timerslack(1);
}

/// CPU seconds this process has used so far, all threads, user and system.
fn own_cpu_seconds() -> Option<f64> {
    use nix::sys::resource::{UsageWho, getrusage};
    let usage = getrusage(UsageWho::RUSAGE_SELF).ok()?;
    let seconds = |t: nix::sys::time::TimeVal| t.tv_sec() as f64 + t.tv_usec() as f64 / 1e6;
    Some(seconds(usage.user_time()) + seconds(usage.system_time()))
}

/// What either loop starts from.
struct Start {
    /// Each target's name and `http://host:port`.
    targets: Vec<(String, String)>,
    maker: RequestMaker,
    recorder: Recorder,
    request_timeout: Duration,
    /// Print live figures (`--progress`).
    progress: bool,
}

/// What either loop leaves for the summary.
struct Finished {
    recorder: Recorder,
    endpoints: Vec<EndpointPlan>,
    targets: Vec<summary::write::TargetFacts>,
    /// Seconds of the schedule that were sent.
    run_seconds: f64,
    stopped_early: bool,
    /// The generator's CPU from the first request to the last answer.
    cpu_seconds: Option<f64>,
    /// Requests still in flight at the end, counted as failed.
    abandoned: usize,
    retired: Vec<Option<Retired>>,
}

pub fn run(args: LoadArgs) -> Result<()> {
    if args.print_mix {
        let definitions = mixes::Definitions::embedded()?;
        let mix = definitions.mix(&args.mix)?;
        let value = json!({"endpoints": definitions.endpoints, "mixes": definitions.mixes, "mix": mix});
        println!("{value}");
        return Ok(());
    }
    precise_sleeps();
    // Before anything else, so every thread of the generator has the same policy.
    let scheduling =
        if args.clients.is_some() { "ordinary (closed loop)".to_owned() } else { priority::claim(!args.no_realtime) };
    let definitions = mixes::Definitions::embedded()?;
    let mix = definitions.mix(&args.mix)?;
    let manifest = orders_dataset::manifest::read(&args.manifest)
        .with_context(|| format!("the data set manifest {} (written by orders-bench seed)", args.manifest.display()))?;
    let (executor, steps) = schedule(&args)?;
    let mut maker = RequestMaker::new(&definitions, &mix, &manifest, args.seed)?;
    if args.prefer.is_some() {
        maker = maker.prefer_minimal();
    }
    let targets = parse_targets(&args.targets)?;
    let windows: Vec<usize> =
        steps.iter().map(|s| ((s.to_s - s.from_s) / args.window.as_secs_f64()).ceil().max(1.0) as usize).collect();
    let recorder = Recorder::new(
        targets.len(),
        maker.endpoints.len(),
        &windows,
        args.window,
        Duration::from_secs_f64(args.pass_mark.p95_ms / 1000.0),
    );
    let control = Arc::new(Control::new(targets.iter().map(|(name, _)| name.clone()).collect()));
    control.listen();
    let request_timeout = args.request_timeout;
    let budget = Duration::from_millis(u64::from(args.vu_budget_ms));
    let push = match &args.prometheus_rw {
        Some(url) => {
            let names: Vec<String> = targets.iter().map(|(name, _)| name.clone()).collect();
            let routes: Vec<String> = maker
                .endpoints
                .iter()
                .map(|e| definitions.endpoints.get(&e.name).map_or_else(String::new, |d| d.path.clone()))
                .collect();
            Some(prometheus::Push::start(url, &names, &maker.endpoints, &routes)?)
        }
        None => None,
    };
    let start = Start { targets, maker, recorder, request_timeout, progress: args.progress };
    let finished = match args.clients {
        Some(clients) => closed::run(start, clients, args.duration, control)?,
        None => run_open(start, &steps, budget, &control, push)?,
    };
    let offered: Vec<u64> = steps.iter().map(open::iterations).collect();
    let settings = match args.clients {
        Some(clients) => json!({"clients": clients, "duration": format!("{}s", args.duration.as_secs_f64())}),
        None => json!({
            "in_flight_cap": steps.iter().map(|s| open::in_flight_cap(s.rate, budget)).collect::<Vec<_>>(),
            "vu_budget_ms": args.vu_budget_ms,
            "request_timeout_s": args.request_timeout.as_secs_f64(),
        }),
    };
    let facts = summary::write::RunFacts {
        executor,
        executor_settings: settings,
        steps: &steps,
        run_seconds: finished.run_seconds,
        stopped_early: finished.stopped_early,
        mix: &mix,
        p95_ms: args.pass_mark.p95_ms,
        max_failed_rate: args.pass_mark.max_failed_rate,
        manifest: &manifest,
        offered,
        cpu_seconds: finished.cpu_seconds,
        scheduling: &scheduling,
        retired: &finished.retired,
    };
    let value = summary::write::build(&facts, &finished.recorder, &finished.targets, &finished.endpoints);
    if let Some(parent) = args.summary.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
    }
    let text = serde_json::to_string_pretty(&value).context("summary JSON")? + "\n";
    std::fs::write(&args.summary, text).with_context(|| format!("writing {}", args.summary.display()))?;
    eprintln!("{}", summary::write::text(&value));
    if finished.abandoned > 0 {
        eprintln!(
            "load: {} request(s) still in flight at the end were counted as failed (interrupted)",
            finished.abandoned
        );
    }
    eprintln!("summary: {}", args.summary.display());
    Ok(())
}

/// The open loop's whole run: connections opened ahead, the schedule, then the requests still in
/// flight (up to their timeout, or two seconds when stopped early); with `push`, the figures go to
/// Prometheus meanwhile and once more at the end.
fn run_open(
    start: Start,
    steps: &[OfferedStep],
    budget: Duration,
    control: &Control,
    push: Option<prometheus::Push>,
) -> Result<Finished> {
    let Start { targets, mut maker, recorder, request_timeout, progress } = start;
    let endpoints = maker.endpoints.clone();
    let mut open = OpenLoop::new(&targets, recorder, endpoints, request_timeout, progress)?;
    open.push = push;
    for (t, error) in open.warm_up(2) {
        eprintln!("load: {} ({}): {error}; its requests will fail", targets[t].0, targets[t].1);
    }
    let cpu_before = own_cpu_seconds();
    // A moment for the kernel to switch receive timestamps on (asked for by the connections just
    // opened) before the first request.
    let origin = Instant::now() + Duration::from_millis(50);
    let ran = open.run(&mut maker, steps, budget, origin, control).context("the open loop")?;
    let patience = if ran.stopped_early { Duration::from_secs(2) } else { request_timeout + Duration::from_secs(1) };
    let abandoned = open.drain(patience).context("the open loop")?;
    if let Some(push) = open.push.take() {
        push.finish(&open.recorder);
    }
    let cpu_seconds = cpu_before.zip(own_cpu_seconds()).map(|(before, after)| after - before);
    let facts = targets
        .iter()
        .enumerate()
        .map(|(t, (name, url))| {
            let connections = open.connections(t);
            summary::write::TargetFacts {
                name: name.clone(),
                url: url.clone(),
                connections: connections.opened,
                untimed_answers: connections.untimed_answers,
            }
        })
        .collect();
    Ok(Finished {
        retired: open.retired.clone(),
        recorder: open.recorder,
        endpoints: open.endpoints,
        targets: facts,
        run_seconds: ran.sent_seconds,
        stopped_early: ran.stopped_early,
        cpu_seconds,
        abandoned,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        load: LoadArgs,
    }

    fn args(line: &[&str]) -> LoadArgs {
        Cli::parse_from(std::iter::once("load").chain(line.iter().copied())).load
    }

    #[test]
    fn the_staircase_holds_every_rate_for_a_step() {
        let (executor, steps) =
            schedule(&args(&["--start-rate", "100", "--step", "150", "--max-rate", "500", "--step-duration", "4s"]))
                .expect("plan");
        assert_eq!(executor, "ramping-arrival-rate");
        assert_eq!(
            steps.iter().map(|s| (s.from_s, s.to_s, s.rate)).collect::<Vec<_>>(),
            [(0.0, 4.0, 100), (4.0, 8.0, 250), (8.0, 12.0, 400)]
        );
        let (_, steps) = schedule(&args(&["--rates", "500,600,720", "--step-duration", "2s"])).expect("plan");
        assert_eq!(steps.iter().map(|s| (s.to_s, s.rate)).collect::<Vec<_>>(), [(2.0, 500), (4.0, 600), (6.0, 720)]);
        let (executor, steps) = schedule(&args(&["--rate", "50", "--duration", "5s"])).expect("plan");
        assert_eq!((executor, steps.len(), steps[0].rate), ("constant-arrival-rate", 1, 50));
        let factor = ["--start-rate", "500", "--max-rate", "1000", "--step-factor", "1.2", "--step-duration", "2s"];
        let (executor, steps) = schedule(&args(&factor)).expect("plan");
        assert_eq!(executor, "ramping-arrival-rate");
        assert_eq!(
            steps.iter().map(|s| (s.to_s, s.rate)).collect::<Vec<_>>(),
            [(2.0, 500), (4.0, 600), (6.0, 720), (8.0, 860), (10.0, 1000)]
        );
        assert!(schedule(&args(&["--start-rate", "500", "--max-rate", "100"])).is_err());
        assert_eq!(schedule(&args(&["--clients", "8", "--duration", "20s"])).expect("plan").0, "closed-loop");
    }

    #[test]
    fn targets_are_named_base_urls() {
        let targets = parse_targets("pg=http://127.0.0.1:1, mongo=http://127.0.0.1:2/").expect("targets");
        assert_eq!(
            targets,
            [("pg".into(), "http://127.0.0.1:1".into()), ("mongo".into(), "http://127.0.0.1:2".into())]
        );
        for bad in ["", "pg", "=http://h:1", "p g=http://h:1", "pg=http://h:1,pg=http://h:2"] {
            assert!(parse_targets(bad).is_err(), "{bad}");
        }
    }
}
