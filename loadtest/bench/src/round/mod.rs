//! `orders-bench round`: one mix, repeated (default three times). Each repeat optionally reseeds
//! identical data into both databases (`--reseed`, as study S1 did before every round), passes the
//! fairness gate, snapshots both services' `/diagnostics`, drives both at the same moment with one
//! load run (the native generator, or k6) up a staircase of arrival rates (sampling the databases from its own connections about
//! once per step and CPU every half second meanwhile, and stopping once every target has failed),
//! snapshots again, and judges every step against the pass mark. With `--db-cpus`/`--db-memory`
//! it first puts the local stack's databases under equal budgets (and puts back the old ones
//! afterwards). The round folder gets the raw files, `result.json`, `report.md`/`report.html` and
//! the charts.

mod args;
pub mod cpu;
mod drive;
pub mod early_stop;
pub mod fairness;
pub mod launch;
pub mod lead_in;
pub mod live_line;
mod lowering;
mod repeat;
#[cfg(test)]
mod report_tests;

pub use args::{RoundArgs, RoundLoadArgs};

use crate::seed::{SeedArgs, Selection};
use anyhow::{Context, Result, bail};
use orders_bench_model::result::{self, DataSet, Machine, RatePlan, RepeatResult, RoundResult};
use orders_bench_model::verdict::PassMark;
use orders_core::Timestamp;
use orders_dataset::manifest;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// One round to run: what to offer and how to judge it.
#[derive(Debug, Clone)]
pub struct RoundSpec {
    pub name: String,
    pub mix: String,
    pub plan: RatePlan,
    pub repeats: u32,
    pub mark: PassMark,
    pub early_stop: bool,
    pub allow_mismatch: bool,
    pub poll_interval: Duration,
    pub vu_budget_ms: u32,
    /// How long to wait for `/diagnostics` from services still busy with an overload.
    pub settle: Duration,
    /// How the data are reset before every repeat (the repeat then waits for quiet databases).
    pub reset: crate::fresh::Reset,
    /// Repeats added, one at a time, while the comparison within each repeat (the leader's rate
    /// over another's) spreads more than `mix_verdict::TOLERANCE` around its median, as long as
    /// another fits before `deadline`. Rates that move together between repeats (the shared
    /// machine's speed) do not call for one: the comparison within each repeat cancels them.
    pub extra_repeats: u32,
    pub deadline: Option<std::time::Instant>,
    /// How long a repeat waits for quiet databases before its load (then goes on, saying so).
    pub quiet_wait: Duration,
    /// Fill both services' connection pools with a short read-only closed loop before the load
    /// (`launch::fill_pools`).
    pub warm_pools: bool,
    /// Run the round's own mix this long before the staircase, unjudged, at a share of its first
    /// rate (`lead_in`); `None`: the staircase starts right after the checkpoint.
    pub lead_in: Option<Duration>,
    /// The native generator asks for the real-time policy `SCHED_FIFO` (its default); false runs it
    /// at ordinary priority.
    pub realtime: bool,
    /// Orders inserted through both services (the `insert` mix at a low rate) after the reset
    /// and before the load, so the round starts with a GIN pending list of that many orders.
    pub prefill: u32,
    /// Log the plan of every statement that runs at least this long (`auto_explain`), to attribute
    /// each sequential scan to the plan that ran it; `None`: no plan log.
    pub plan_log_ms: Option<f64>,
    pub generator: launch::Generator,
    /// Writes carry `Prefer: return=minimal` (201 / 204 without a body): the round measures the
    /// write rather than returning the order.
    pub prefer_minimal: bool,
    /// Where the whole run is, for the line in progress on a terminal ("demo round 2 of 4, about
    /// 9 min left"); `None`: the round is the run.
    pub progress: Option<String>,
}

impl RoundSpec {
    /// A round of `mix` on `plan` with the usual settings, which callers override by name: one
    /// repeat, S1's pass mark, early stop, no mismatch allowed, a poll per step, k6's VU budget of
    /// 200 ms, 60 s to settle, the data kept, the pools warmed, no lead-in, the native generator
    /// at real-time priority, full answers.
    pub fn new(name: impl Into<String>, mix: impl Into<String>, plan: RatePlan) -> Self {
        Self {
            name: name.into(),
            mix: mix.into(),
            plan,
            repeats: 1,
            mark: PassMark::default(),
            early_stop: true,
            allow_mismatch: false,
            poll_interval: plan.step_seconds,
            vu_budget_ms: 200,
            settle: Duration::from_secs(60),
            reset: crate::fresh::Reset::Keep,
            extra_repeats: 0,
            deadline: None,
            quiet_wait: crate::fresh::QUIET_WAIT,
            warm_pools: true,
            lead_in: None,
            realtime: true,
            prefill: 0,
            plan_log_ms: None,
            generator: launch::Generator::Native,
            prefer_minimal: false,
            progress: None,
        }
    }
}

/// Where the services, databases and tools are.
#[derive(Debug, Clone)]
pub struct Setup {
    /// The systems under test: every engine and its service.
    pub targets: orders_bench_engines::Targets,
    pub databases: orders_bench_engines::databases::Databases,
    pub k6: PathBuf,
    pub script: PathBuf,
    pub manifest: PathBuf,
    /// Extra environment for k6 (the demo marks every process it starts).
    pub extra_env: Vec<(String, String)>,
    /// Other load machines that share every repeat's load (`--followers`).
    pub fleet: Option<crate::fleet::leader::Fleet>,
    /// Why the databases run without budgets, when the caller knows (the report says it).
    pub budget_note: Option<String>,
}

fn folder_name(name: &str) -> String {
    name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' }).collect()
}

pub async fn run(args: RoundArgs) -> Result<()> {
    if !args.followers.is_empty() && args.generator != launch::Generator::K6 {
        bail!("--followers runs k6 execution segments on every load machine: add --generator k6");
    }
    let name = args.name.clone().unwrap_or_else(|| args.mix.clone());
    let repo = crate::repo::root().ok();
    let script = match (&args.script, &repo) {
        (Some(script), _) => crate::repo::absolute(script),
        (None, Some(repo)) => repo.join(crate::repo::SCRIPT),
        (None, None) => bail!("pass --script: the k6 script was not found"),
    };
    let manifest = crate::repo::absolute(&args.manifest);
    let reseed = args.reseed.then(|| {
        let known = manifest::read(&manifest).ok();
        SeedArgs {
            seed: known.as_ref().map_or(1, |m| m.seed),
            orders: args.orders.or(known.as_ref().map(|m| m.orders)).unwrap_or(1_000_000),
            customers: known.as_ref().filter(|m| args.orders.is_none_or(|o| o == m.orders)).map(|m| m.customers),
            products: known.as_ref().filter(|m| args.orders.is_none_or(|o| o == m.orders)).map(|m| m.products),
            items: args.items.or(known.as_ref().map(|m| m.items_per_order)).unwrap_or(3),
            note_bytes: args.note_bytes.or(known.as_ref().map(|m| m.note_bytes)).unwrap_or(0),
            target: Selection::all(),
            reset: true,
            databases: args.databases.clone(),
            manifest: manifest.clone(),
        }
    });
    let spec = RoundSpec {
        repeats: args.load.repeats,
        mark: args.load.pass_mark.pass_mark(),
        early_stop: !args.load.run_all_steps,
        allow_mismatch: args.load.allow_mismatch,
        poll_interval: args.load.poll_interval.unwrap_or(args.load.staircase.step_duration),
        vu_budget_ms: args.load.vu_budget_ms,
        settle: Duration::from_secs(90),
        reset: reseed.map_or(crate::fresh::Reset::Keep, |seed| crate::fresh::Reset::Reload(seed, None)),
        warm_pools: !args.load.no_warm_up,
        lead_in: Some(args.load.lead_in).filter(|length| !length.is_zero()),
        realtime: !args.load.no_realtime,
        plan_log_ms: args.plan_log_ms,
        generator: args.generator,
        ..RoundSpec::new(name.clone(), args.mix.clone(), args.load.staircase.plan()?)
    };
    let setup = Setup {
        targets: orders_bench_engines::Targets::new(&args.databases, &args.target_urls())?,
        databases: args.databases.clone(),
        k6: match args.generator {
            launch::Generator::K6 => crate::k6::binary(args.k6.as_deref(), repo.as_deref())?,
            launch::Generator::Native => PathBuf::new(),
        },
        script,
        manifest,
        extra_env: match &args.prometheus_rw {
            Some(url) => orders_loadgen::prometheus::round_env(url)?,
            None => Vec::new(),
        },
        fleet: (!args.followers.is_empty()).then(|| crate::fleet::leader::Fleet { followers: args.followers.clone() }),
        budget_note: None,
    };
    let out = match &args.out {
        Some(out) => out.clone(),
        None => repo.clone().unwrap_or_default().join("results").join(format!(
            "{}-{}",
            crate::repo::folder_stamp(),
            folder_name(&name)
        )),
    };
    let budget = match (&args.budget, &repo) {
        (flags, Some(repo)) if flags.given() => {
            Some(crate::budget::apply_to_round(flags, &setup.databases, repo).await?)
        }
        (flags, None) if flags.given() => bail!("--db-cpus/--db-memory need the repository's infra/local/stack.sh"),
        _ => None,
    };
    let round = run_round(&spec, &setup, &out).await;
    if let Some(budget) = budget {
        budget.restore().await?;
    }
    let round = round?;
    orders_bench_report::write(&out, &[(out.clone(), round)])?;
    println!("report: {}", out.join("report.md").display());
    Ok(())
}

/// Runs every repeat of `spec` into `out` and writes `out/result.json`.
pub async fn run_round(spec: &RoundSpec, setup: &Setup, out: &Path) -> Result<RoundResult> {
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let started_at = Timestamp::now().to_string();
    eprintln!(
        "round {}: mix {}, {} req/s per target in steps of {} s, {} repeat(s), into {}",
        spec.name,
        spec.mix,
        spec.plan.rates().iter().map(u32::to_string).collect::<Vec<_>>().join("/"),
        spec.plan.step_seconds.as_secs_f64(),
        spec.repeats,
        out.display()
    );
    let plan_probe = planner_probe(spec, setup).await;
    // The staircase may move down between repeats (`lowering`); the round records the last one.
    let mut spec = RoundSpec { plan_log_ms: plan_log_threshold(spec, plan_probe.as_ref()), ..spec.clone() };
    let began = std::time::Instant::now();
    let mut repeats = Vec::new();
    let mut index = 1;
    loop {
        let repeat = repeat::run(&spec, setup, out, index).await?;
        if let Some((lower, words)) = lowering::after(&spec.plan, &repeat) {
            eprintln!("round {}: {words}", spec.name);
            spec.plan = lower;
        }
        repeats.push(repeat);
        index += 1;
        if index <= spec.repeats {
            continue;
        }
        match needs_another(&spec, &setup.targets, &repeats, began.elapsed()) {
            Some(why) => eprintln!("round {}: one more repeat ({index}): {why}", spec.name),
            None => break,
        }
    }
    lowering::supersede(&mut repeats, spec.repeats);
    let spec = &spec;
    let mut max_rate = BTreeMap::new();
    for name in setup.targets.names() {
        // A repeat that stalls of the machine stopped before either target failed measured neither,
        // nor did one in which other processes took a share of the machine.
        let counted = repeats.iter().filter(|r| r.counted());
        let rates: Vec<_> = counted.filter_map(|r| r.targets.get(&name)).map(|t| t.max_rate).collect();
        if let Some(summary) = orders_bench_model::verdict::summarize(&rates) {
            max_rate.insert(name, summary);
        }
    }
    let data_set = manifest::read(&setup.manifest).ok().map(|m| DataSet {
        seed: m.seed,
        orders: m.orders,
        customers: m.customers,
        products: m.products,
        items_per_order: m.items_per_order,
        note_bytes: m.note_bytes,
        approx_doc_bytes: m.approx_doc_bytes,
    });
    let mix_weights = repeat::mix_weights(out, &repeats);
    let budget = repeats.first().map(|r| crate::budget::record::label(&r.cpu.budgets, setup.budget_note.as_deref()));
    let round = RoundResult {
        name: spec.name.clone(),
        mix: spec.mix.clone(),
        mix_weights,
        started_at,
        finished_at: Timestamp::now().to_string(),
        plan: spec.plan,
        pass_mark: spec.mark,
        data_set,
        machine: Machine::this(),
        commit: crate::repo::commit(),
        targets: setup.targets.info(),
        fairness_overridden: repeats.iter().any(|r| !r.fairness.ok),
        budget,
        plan_probe,
        regime: None,
        repeats,
        max_rate,
        dir: ".".into(),
    };
    result::write(out, vec![round.clone()])?;
    Ok(round)
}

/// Why one more repeat should run: the comparison within each repeat spreads beyond the
/// tolerance, or a winner would be named on a lead one step from the least difference, extra
/// repeats are left and one more fits before the deadline (at the pace of those
/// so far). `None`: enough.
fn needs_another(
    spec: &RoundSpec,
    targets: &orders_bench_engines::Targets,
    repeats: &[RepeatResult],
    spent: Duration,
) -> Option<String> {
    let extra_done = (repeats.len() as u32).saturating_sub(spec.repeats);
    if extra_done >= spec.extra_repeats || repeats.is_empty() {
        return None;
    }
    let pace = spent / repeats.len() as u32;
    if spec.deadline.is_some_and(|deadline| std::time::Instant::now() + pace > deadline) {
        return None;
    }
    let counted: Vec<&RepeatResult> = repeats.iter().filter(|r| r.counted()).collect();
    if (counted.len() as u32) < spec.repeats {
        let left_out: Vec<String> =
            repeats.iter().filter_map(|r| Some(format!("repeat {} left out: {}", r.index, r.left_out()?))).collect();
        return Some(left_out.join("; "));
    }
    if let Some(why) = lowering::unmeasured(repeats, spec.repeats) {
        return Some(why);
    }
    let targets = targets.info();
    orders_bench_model::mix_verdict::comparison_unsettled(&counted, &targets, &spec.plan)
        .or_else(|| orders_bench_model::mix_verdict::lead_thin(&counted, &targets, &spec.plan))
}

/// Whether `mix` (a named mix or weights) searches by product.
fn searches_products(mix: &str) -> bool {
    orders_loadgen::mixes::Definitions::embedded()
        .and_then(|d| d.mix(mix))
        .is_ok_and(|m| m.weights.contains_key("product"))
}

/// The planner probe of a round that searches by product, by the first target whose engine has
/// one (`Backend::plan_probe`), on a copy of the data set's snapshot (only when the repeats
/// restore one: the probe never touches the round's own database).
async fn planner_probe(spec: &RoundSpec, setup: &Setup) -> Option<orders_bench_model::plans::PlanProbe> {
    let crate::fresh::Reset::Restore(snapshots) = &spec.reset else { return None };
    if !searches_products(&spec.mix) {
        return None;
    }
    let manifest = manifest::read(&setup.manifest).ok()?;
    let (label, orders) = (snapshots.label(), manifest.orders);
    eprintln!("round {}: planner probe on a copy of snapshot {label} ({orders} orders)", spec.name);
    let mut probe = None;
    for target in setup.targets.iter() {
        probe = target.backend.plan_probe(label, orders, manifest.products).await;
        if probe.is_some() {
            break;
        }
    }
    let probe = probe?;
    match (&probe.error, probe.switch_after_inserts) {
        (Some(error), _) => eprintln!("round {}: the planner probe failed: {error}", spec.name),
        (None, Some(inserts)) => eprintln!(
            "round {}: planner probe: a prepared LIMIT 10 search switches to a sequential scan after {inserts} inserts ({:.0} s)",
            spec.name, probe.seconds
        ),
        (None, None) => eprintln!(
            "round {}: planner probe: no switch to a sequential scan up to {} inserts ({:.0} s)",
            spec.name,
            probe.rows.last().map_or(0, |r| r.inserts),
            probe.seconds
        ),
    }
    Some(probe)
}

/// The plan log's threshold: the one asked for, else half the probe's sequential scan (at most
/// 10 ms, at least 0.1 ms), so every scan is logged and few other statements are.
fn plan_log_threshold(spec: &RoundSpec, probe: Option<&orders_bench_model::plans::PlanProbe>) -> Option<f64> {
    spec.plan_log_ms.or_else(|| probe?.seq_scan_ms.map(|ms| (ms / 2.0).clamp(0.1, 10.0)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_mixes_that_search_by_product_get_the_planner_probe() {
        assert!(searches_products("shop"));
        assert!(searches_products("read:50,product:50"));
        assert!(!searches_products("insert"));
        assert!(!searches_products("no such mix"));
    }

    #[test]
    fn folder_names_are_safe_and_stamped() {
        assert_eq!(folder_name("read:50,insert:50"), "read_50_insert_50");
        let stamp = crate::repo::folder_stamp();
        assert_eq!(stamp.len(), 16, "{stamp}");
        assert!(stamp.ends_with('Z'));
    }
}
