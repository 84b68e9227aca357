//! Starting the load of a repeat with either generator, as a child process of this one (so its
//! CPU time is known exactly once it is reaped, and the machine accounting stays clean): the
//! native one (`orders-bench load`, this same binary, live figures as JSON lines on its stdout,
//! stopped early by a line `stop` on its stdin, a target retired by `retire NAME`) or k6
//! (`loadtest/k6/orders.js`, live figures and
//! early stop through its REST API). Either way the runner sees the same `LiveView` and reads the
//! same summary JSON afterwards.

use super::{RoundSpec, Setup};
use crate::k6;
use orders_loadgen::live::LiveView;

use anyhow::{Context, Result};
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Generator {
    /// orders-bench's own open-loop generator (`orders-bench load`): cheap enough to share a
    /// machine with the databases.
    #[default]
    Native,
    /// k6 with loadtest/k6/orders.js (for load machines of their own, and for those who want k6).
    K6,
}

impl Generator {
    /// The name of its process in the CPU figures.
    pub fn process_name(self) -> &'static str {
        match self {
            Self::Native => "orders-bench load",
            Self::K6 => "k6",
        }
    }

    /// Prefix of its files in a repeat folder: `load-summary.json`, `k6.log`.
    pub fn file_prefix(self) -> &'static str {
        match self {
            Self::Native => "load",
            Self::K6 => "k6",
        }
    }
}

/// What the native generator's progress lines said so far.
#[derive(Default)]
pub struct Progress {
    view: LiveView,
    /// When step 0 began, seconds after the origin (from the first line's `t`).
    scenario_start: Option<f64>,
}

/// The generator's process and how to talk to it.
pub enum Running {
    Native { child: tokio::process::Child, progress: Arc<Mutex<Progress>>, stdin: Option<tokio::process::ChildStdin> },
    K6(k6::Running),
}

impl Running {
    pub fn child(&mut self) -> &mut tokio::process::Child {
        match self {
            Self::Native { child, .. } => child,
            Self::K6(running) => &mut running.child,
        }
    }

    pub fn pid(&self) -> Option<u32> {
        match self {
            Self::Native { child, .. } => child.id(),
            Self::K6(running) => running.child.id(),
        }
    }

    /// k6's process and API (for the execution segments of `--followers`).
    pub fn k6(&mut self) -> Option<&mut k6::Running> {
        match self {
            Self::Native { .. } => None,
            Self::K6(running) => Some(running),
        }
    }

    /// The live figures now.
    pub async fn view(&self) -> Result<LiveView> {
        match self {
            Self::Native { progress, .. } => {
                Ok(progress.lock().map_err(|_| anyhow::anyhow!("progress lock"))?.view.clone())
            }
            Self::K6(running) => running.api.view().await,
        }
    }

    /// When step 0 began, seconds after `origin`, if the generator said so.
    pub fn scenario_start(&self) -> Option<f64> {
        match self {
            Self::Native { progress, .. } => progress.lock().ok()?.scenario_start,
            Self::K6(_) => None,
        }
    }

    /// Ends the run early; the generator still writes its summary.
    pub async fn stop(&mut self) -> Result<()> {
        match self {
            Self::Native { stdin, .. } => tell(stdin, "stop").await,
            Self::K6(running) => running.api.stop().await,
        }
    }

    /// Sends `target` no more requests while the others go on (native generator only: k6's
    /// scenarios cannot be changed while it runs); false when this generator cannot.
    pub async fn retire(&mut self, target: &str) -> Result<bool> {
        match self {
            Self::Native { stdin, .. } => tell(stdin, &format!("retire {target}")).await.map(|()| true),
            Self::K6(_) => Ok(false),
        }
    }
}

/// One line to the native generator (`loadgen::control`).
async fn tell(stdin: &mut Option<tokio::process::ChildStdin>, line: &str) -> Result<()> {
    let pipe = stdin.as_mut().context("the generator's stdin is closed")?;
    pipe.write_all(format!("{line}\n").as_bytes()).await.with_context(|| format!("telling the generator: {line}"))?;
    pipe.flush().await.with_context(|| format!("telling the generator: {line}"))
}

/// The native generator's command line for this repeat.
fn native_args(spec: &RoundSpec, setup: &Setup, summary: &Path) -> Vec<String> {
    let plan = &spec.plan;
    let mut args = vec![
        "load".into(),
        "--targets".into(),
        setup.targets.generator_arg(),
        "--mix".into(),
        spec.mix.clone(),
        "--manifest".into(),
        setup.manifest.display().to_string(),
        "--rates".into(),
        plan.rates().iter().map(u32::to_string).collect::<Vec<_>>().join(","),
        "--step-duration".into(),
        plan.step_seconds.as_secs_f64().to_string(),
        "--p95-ms".into(),
        spec.mark.p95_ms.to_string(),
        "--max-failed-rate".into(),
        spec.mark.max_failed_rate.to_string(),
        "--vu-budget-ms".into(),
        spec.vu_budget_ms.to_string(),
        "--summary".into(),
        summary.display().to_string(),
        "--progress".into(),
    ];
    if spec.prefer_minimal {
        args.extend(["--prefer".into(), "return=minimal".into()]);
    }
    if !spec.realtime {
        args.push("--no-realtime".into());
    }
    args
}

/// What k6 needs that the native generator does not: its environment and further flags (an
/// execution segment, `--paused`).
pub struct K6Extras {
    pub env: Vec<(String, String)>,
    pub args: Vec<String>,
}

/// Starts the generator; `log` gets its stderr (k6: stdout too).
pub fn spawn(
    generator: Generator,
    spec: &RoundSpec,
    setup: &Setup,
    k6: K6Extras,
    summary: &Path,
    log: &Path,
    origin: Instant,
) -> Result<Running> {
    match generator {
        Generator::K6 => {
            let launch = k6::Launch { binary: &setup.k6, script: &setup.script, env: k6.env, log, args: k6.args };
            Ok(Running::K6(k6::spawn(launch)?))
        }
        Generator::Native => {
            let binary = native_binary()?;
            let log_file = std::fs::File::create(log).with_context(|| format!("creating {}", log.display()))?;
            let mut command = std::process::Command::new(&binary);
            command
                .args(native_args(spec, setup, summary))
                .envs(setup.extra_env.iter().cloned())
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(log_file)
                .process_group(0);
            let mut child = tokio::process::Command::from(command)
                .kill_on_drop(true)
                .spawn()
                .with_context(|| format!("starting {} load", binary.display()))?;
            let progress = Arc::new(Mutex::new(Progress::default()));
            if let Some(stdout) = child.stdout.take() {
                let progress = progress.clone();
                tokio::spawn(async move {
                    let mut lines = tokio::io::BufReader::new(stdout).lines();
                    while let Ok(Some(line)) = lines.next_line().await {
                        let now = origin.elapsed().as_secs_f64();
                        let Ok(mut progress) = progress.lock() else { return };
                        if let Some(t) = orders_loadgen::live::apply(&mut progress.view, &line) {
                            progress.scenario_start.get_or_insert(now - t);
                        }
                    }
                });
            }
            let stdin = child.stdin.take();
            Ok(Running::Native { child, progress, stdin })
        }
    }
}

/// A run of the native generator as a child process, to its end: `load` against `targets` (as
/// `--targets` takes them) with `args` (mix, rate or clients, duration, seed), at ordinary
/// priority, its summary in `summary`. Returns the summary it wrote, or why there is none (its last
/// lines on stderr).
pub async fn run_native(
    targets: &str,
    manifest: &Path,
    args: &[String],
    summary: &Path,
    env: &[(String, String)],
) -> Result<orders_loadgen::summary::Summary> {
    let binary = native_binary()?;
    let _ = std::fs::remove_file(summary);
    let output = tokio::process::Command::new(&binary)
        .args(["load", "--targets", targets, "--manifest", &manifest.display().to_string()])
        .args(args)
        .args(["--no-realtime", "--summary", &summary.display().to_string()])
        .envs(env.iter().cloned())
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output()
        .await
        .with_context(|| format!("starting {} load", binary.display()))?;
    orders_loadgen::summary::Summary::read(summary).with_context(|| {
        format!(
            "orders-bench load exited with {} and no summary: {}",
            output.status,
            String::from_utf8_lossy(&output.stderr).lines().rev().take(5).collect::<Vec<_>>().join(" / ")
        )
    })
}

/// How many of a side load's requests may fail: none for the prefill (every database must hold
/// the same orders), some for the pool warm-up, whose work is opening connections: a service that
/// sheds a request with 503 while its pool still forks PostgreSQL backends under the CPU budget has
/// not failed the benchmark (in one demo the warm-up's first 100 ms had 1 refusal in 1,670 reads
/// and stopped the whole run; in another, right after a restore, 4 in 291).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Tolerance {
    None,
    /// Any failures, as long as every target was sent requests: the lead-in's, whose failures are
    /// evidence for the report (F1 can arrive in it), not a reason to stop the round.
    Recorded,
    /// At most this share of each target's requests, and at least one answered.
    Share(f64),
}

impl Tolerance {
    pub(super) fn accepts(self, count: u64, failures: u64) -> bool {
        match self {
            Tolerance::None => count > 0 && failures == 0,
            Tolerance::Recorded => count > 0,
            Tolerance::Share(share) => count > failures && (failures as f64) <= share * count as f64,
        }
    }
}

/// A short run of the native generator beside a round's load (the prefill, the pool warm-up, the
/// lead-in), against every target. Returns its summary; fails unless every target's failures are
/// within `tolerance`.
pub(super) async fn side_load(
    setup: &Setup,
    args: &[String],
    summary: &Path,
    what: &str,
    tolerance: Tolerance,
) -> Result<orders_loadgen::summary::Summary> {
    let env = side_load_env(&setup.extra_env);
    let ran = run_native(&setup.targets.generator_arg(), &setup.manifest, args, summary, &env)
        .await
        .with_context(|| format!("the {what}"))?;
    let targets = answered(&ran);
    if targets.is_empty() || targets.iter().any(|(_, count, failures)| !tolerance.accepts(*count, *failures)) {
        let said: Vec<String> = targets
            .iter()
            .map(|(name, count, failures)| format!("{name} {count} requests, {failures} failed"))
            .collect();
        anyhow::bail!("the {what} failed: {}; see {}", said.join(", "), summary.display());
    }
    Ok(ran)
}

/// Each target's (name, requests, failures) in a side load's summary.
fn answered(summary: &orders_loadgen::summary::Summary) -> Vec<(String, u64, u64)> {
    summary.targets.iter().map(|(name, t)| (name.clone(), t.figures.count, t.figures.failures)).collect()
}

/// The native generator's arguments for `mix` at a constant `rate` per target for `length`,
/// drawn with `seed` (a side load's own, so its inserts repeat neither the seeded orders nor the
/// round's), with `Prefer: return=minimal` when the round asks for it.
pub(super) fn constant_rate(mix: &str, rate: u32, length: Duration, seed: u32, minimal: bool) -> Vec<String> {
    let mut args: Vec<String> =
        ["--mix", mix, "--rate", &rate.to_string(), "--seed", &seed.to_string()].map(String::from).to_vec();
    args.extend(["--duration".into(), length.as_secs_f64().to_string()]);
    if minimal {
        args.extend(["--prefer".into(), "return=minimal".into()]);
    }
    args
}

/// The round's environment for a side load: without the push to Prometheus, which is the round's
/// own load alone (a dashboard would show the warm-up as load, and the closed loop cannot push).
fn side_load_env(round_env: &[(String, String)]) -> Vec<(String, String)> {
    round_env.iter().filter(|(name, _)| name != orders_loadgen::prometheus::PUSH_URL_ENV).cloned().collect()
}

/// Inserts `orders` new orders through both services at once (the `insert` mix at a constant rate
/// of at most `PREFILL_RATE` per target, with a seed of its own so the round's inserts do not
/// repeat them) and waits for them; its summary goes to `dir/prefill-summary.json`. Fails unless
/// every insert was answered 201 on both.
pub async fn prefill(spec: &RoundSpec, setup: &Setup, dir: &Path, orders: u32) -> Result<()> {
    const PREFILL_RATE: u32 = 250;
    let rate = orders.clamp(1, PREFILL_RATE);
    let length = Duration::from_secs_f64(f64::from(orders) / f64::from(rate));
    let args = constant_rate("insert", rate, length, 2, spec.prefer_minimal);
    let done = side_load(setup, &args, &dir.join("prefill-summary.json"), "prefill", Tolerance::None).await?;
    let counts: Vec<String> = answered(&done).iter().map(|(name, count, _)| format!("{name} {count}")).collect();
    eprintln!("prefill: inserted {} through both services", counts.join(", "));
    Ok(())
}

/// Fills both services' connection pools before the load: `clients` concurrent readers per
/// target (at least the larger pool) for `WARM_UP_SECONDS`, so that neither database forks its
/// backends or opens its connections inside the first step (a step PostgreSQL failed in every
/// repeat of the demo without it, its backends forking under the CPU budget). Reads only: the data
/// stay as the reset left them. A warm-up in which a service refused reads (its pool still
/// opening) runs again, up to `ATTEMPTS` in all, until one is clean; the last may have up to half
/// refused. Its summary goes to `dir/warm-up-summary.json` (the last attempt's).
pub async fn fill_pools(setup: &Setup, dir: &Path, clients: u32) -> Result<()> {
    const WARM_UP_SECONDS: &str = "1";
    const ATTEMPTS: u32 = 3;
    let args: Vec<String> =
        ["--mix", "read", "--clients", &clients.to_string(), "--duration", WARM_UP_SECONDS, "--seed", "3"]
            .map(String::from)
            .to_vec();
    for attempt in 1..=ATTEMPTS {
        let tolerance = if attempt == ATTEMPTS { Tolerance::Share(0.5) } else { Tolerance::Share(1.0) };
        let done = side_load(setup, &args, &dir.join("warm-up-summary.json"), "pool warm-up", tolerance).await?;
        let refused: Vec<String> = answered(&done)
            .iter()
            .filter(|(_, _, failures)| *failures > 0)
            .map(|(name, count, failures)| format!("{name} refused {failures} of {count} reads"))
            .collect();
        if refused.is_empty() {
            return Ok(());
        }
        eprintln!("pool warm-up {attempt}/{ATTEMPTS}: {} while its pool opened", refused.join(", "));
    }
    Ok(())
}

/// This very program: `orders-bench load` is one of its subcommands. When its file was replaced
/// while it runs (a `cargo build` during a demo), Linux names it `... (deleted)`; the running image
/// is still reachable as `/proc/self/exe`, and it is the one whose summary format this runner reads.
fn native_binary() -> Result<PathBuf> {
    let path = std::env::current_exe().context("finding the orders-bench binary (for orders-bench load)")?;
    if path.to_string_lossy().ends_with(" (deleted)") {
        return Ok(PathBuf::from("/proc/self/exe"));
    }
    Ok(path)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use orders_bench_model::result::RatePlan;

    #[test]
    fn side_loads_keep_the_rounds_environment_but_never_push_to_prometheus() {
        let mut round_env = orders_loadgen::prometheus::round_env("http://10.0.0.9:9090/api/v1/write").expect("env");
        round_env.push(("ORDERS_BENCH_MARK".into(), "demo".into()));
        let side = side_load_env(&round_env);
        assert!(side.iter().all(|(name, _)| name != orders_loadgen::prometheus::PUSH_URL_ENV), "{side:?}");
        assert_eq!(side.len(), round_env.len() - 1, "everything else stays: {side:?}");
    }

    #[test]
    fn a_constant_rate_lasts_its_length_in_seconds() {
        let args = constant_rate("insert", 250, Duration::from_secs(8), 2, true);
        assert_eq!(args.join(" "), "--mix insert --rate 250 --seed 2 --duration 8 --prefer return=minimal");
        let args = constant_rate("shop", 250, Duration::from_secs_f64(333.0 / 250.0), 4, false);
        assert_eq!(args.join(" "), "--mix shop --rate 250 --seed 4 --duration 1.332");
    }

    #[test]
    fn the_prefill_tolerates_no_failure_and_the_warm_up_refusals_while_connections_open() {
        assert!(Tolerance::None.accepts(250, 0));
        assert!(!Tolerance::None.accepts(250, 1), "every prefill insert must land on every database");
        assert!(!Tolerance::None.accepts(0, 0), "nothing answered");
        let last_warm_up = Tolerance::Share(0.5);
        assert!(last_warm_up.accepts(1670, 1), "the demo that stopped on one refusal in 1,670 reads");
        assert!(last_warm_up.accepts(291, 4), "and the one right after a restore");
        assert!(!last_warm_up.accepts(300, 200), "two thirds refused is a service in trouble");
        assert!(!Tolerance::Share(1.0).accepts(3, 3) && !last_warm_up.accepts(0, 0), "at least one read answered");
    }

    /// The round the tests of launching and of the lead-in use, on `plan`.
    pub(crate) fn spec_with(plan: RatePlan) -> RoundSpec {
        RoundSpec {
            poll_interval: Duration::from_secs(2),
            settle: Duration::from_secs(1),
            quiet_wait: Duration::from_secs(1),
            warm_pools: false,
            prefer_minimal: true,
            ..RoundSpec::new("shop", "shop", plan)
        }
    }

    #[test]
    fn the_native_generator_gets_the_rounds_staircase_and_pass_mark() {
        let spec = spec_with(RatePlan {
            start_rate: 200,
            step: 100,
            max_rate: 900,
            step_seconds: Duration::from_secs(4),
            factor: Some(1.5),
        });
        let databases = orders_bench_engines::databases::Databases {
            database_url: String::new(),
            mongodb_uri: String::new(),
            mongodb_db: String::new(),
            ..orders_bench_engines::databases::Databases::default()
        };
        let urls = [("pg", "http://127.0.0.1:1"), ("mongo", "http://127.0.0.1:2")].map(|(n, u)| (n.into(), u.into()));
        let setup = Setup {
            targets: orders_bench_engines::Targets::new(&databases, &urls).expect("targets"),
            databases,
            k6: PathBuf::new(),
            script: PathBuf::new(),
            manifest: PathBuf::from("/d/dataset.json"),
            extra_env: Vec::new(),
            fleet: None,
            budget_note: None,
        };
        let args = native_args(&spec, &setup, Path::new("/r/load-summary.json"));
        assert_eq!(
            args.join(" "),
            "load --targets pg=http://127.0.0.1:1,mongo=http://127.0.0.1:2 --mix shop --manifest /d/dataset.json \
             --rates 200,300,450,680 --step-duration 4 --p95-ms 50 --max-failed-rate 0.01 \
             --vu-budget-ms 200 --summary /r/load-summary.json --progress --prefer return=minimal"
        );
        // And `orders-bench load` itself accepts them, meaning what the round meant.
        #[derive(clap::Parser)]
        struct Load {
            #[command(flatten)]
            args: orders_loadgen::LoadArgs,
        }
        let parsed =
            <Load as clap::Parser>::try_parse_from(&args).expect("orders-bench load accepts the round's flags").args;
        assert_eq!(parsed.rates, vec![200, 300, 450, 680]);
        assert_eq!(
            (parsed.staircase.step_duration.as_secs_f64(), parsed.pass_mark.p95_ms, parsed.vu_budget_ms),
            (4.0, 50.0, 200)
        );
        assert_eq!(parsed.prefer.as_deref(), Some("return=minimal"));
        assert!(parsed.progress);
    }
}
