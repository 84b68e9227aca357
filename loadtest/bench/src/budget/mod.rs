//! Equal resource budgets for the databases, as `round`, `demo` and `experiment` take them
//! (`--db-cpus`, `--db-memory`): the flags, the default choice of `demo` and `experiment` (one
//! place: [`demo_default`]), applying a budget to the local stack through `infra/local/stack.sh
//! budget` and putting back what was there afterwards, the local stack under a budget for one
//! command (`local`), and the budget each database really ran under, read from the kernel, for
//! `result.json` and the report (`record`).
//!
//! A budget is what a database droplet is in the cloud: each server's whole process tree in a
//! cgroup of its own with the same CPU quota and the same memory limit (page cache included), so
//! that on one shared machine the databases run out before the load path does.

pub mod local;
pub mod record;

use anyhow::{Context, Result, bail};
use clap::Args;
use orders_bench_engines::stack::Stack;
use orders_bench_report::format::bytes;
use std::collections::BTreeMap;
use std::fmt;

/// A limit, or explicitly none (`none` on the command line).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Cap<T> {
    Unlimited,
    At(T),
}

impl<T: Copy> Cap<T> {
    pub fn value(self) -> Option<T> {
        match self {
            Cap::Unlimited => None,
            Cap::At(value) => Some(value),
        }
    }
}

#[derive(Debug, Clone, Default, Args)]
pub struct BudgetArgs {
    /// CPU budget of each database server, in cores (fractional, e.g. 0.25), or `none`: a CPU
    /// quota with a 10 ms period on each server's whole process tree (local stack only).
    #[arg(long = "db-cpus", value_parser = parse_cpus)]
    pub db_cpus: Option<Cap<f64>>,
    /// Memory budget of each database server, page cache included (`512M`, `4G`), or `none`.
    #[arg(long = "db-memory", value_parser = parse_memory)]
    pub db_memory: Option<Cap<u64>>,
}

impl BudgetArgs {
    pub fn given(&self) -> bool {
        self.db_cpus.is_some() || self.db_memory.is_some()
    }
}

pub fn parse_cpus(text: &str) -> Result<Cap<f64>, String> {
    if text.eq_ignore_ascii_case("none") {
        return Ok(Cap::Unlimited);
    }
    match text.parse::<f64>() {
        Ok(cores) if (0.1..=1024.0).contains(&cores) => Ok(Cap::At(cores)),
        Ok(_) => Err(format!("{text}: at least 0.1 cores (the kernel's smallest quota is 1 ms per 10 ms period)")),
        Err(_) => Err(format!("\"{text}\" is not a number of cores like 0.25 or 2 (or none)")),
    }
}

/// `512M`, `4G`, `1.5GiB`, `4096` (bytes) or `none`.
pub fn parse_memory(text: &str) -> Result<Cap<u64>, String> {
    if text.eq_ignore_ascii_case("none") {
        return Ok(Cap::Unlimited);
    }
    let bad = || format!("\"{text}\" is not a size like 512M or 4G (or none)");
    let upper = text.trim().to_ascii_uppercase();
    let stem = upper.strip_suffix("IB").or_else(|| upper.strip_suffix('B')).unwrap_or(&upper);
    let (number, unit) = match stem.chars().last() {
        Some(c @ ('K' | 'M' | 'G' | 'T')) => (&stem[..stem.len() - 1], Some(c)),
        _ => (stem, None),
    };
    let factor = match unit {
        Some('K') => 1u64 << 10,
        Some('M') => 1 << 20,
        Some('G') => 1 << 30,
        Some('T') => 1 << 40,
        _ => 1,
    };
    let value = number.parse::<f64>().map_err(|_| bad())?;
    let bytes = (value * factor as f64).round() as u64;
    if bytes < 256 << 20 {
        return Err(format!("{text}: a database server needs 256M at least"));
    }
    Ok(Cap::At(bytes))
}

/// A budget for every database (each server its own of this size).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Budget {
    pub cpus: Cap<f64>,
    pub memory: Cap<u64>,
}

impl Budget {
    pub const NONE: Budget = Budget { cpus: Cap::Unlimited, memory: Cap::Unlimited };

    pub fn is_none(&self) -> bool {
        self.cpus == Cap::Unlimited && self.memory == Cap::Unlimited
    }

    /// `--db-cpus X --db-memory Y` as `stack.sh` takes them.
    pub fn stack_args(&self) -> Vec<String> {
        let cpus = self.cpus.value().map_or("none".to_owned(), |c| format!("{c}"));
        let memory = self.memory.value().map_or("none".to_owned(), |m| m.to_string());
        vec!["--db-cpus".into(), cpus, "--db-memory".into(), memory]
    }

    /// `args` where given, `self` elsewhere.
    pub fn overridden_by(self, args: &BudgetArgs) -> Self {
        Self { cpus: args.db_cpus.unwrap_or(self.cpus), memory: args.db_memory.unwrap_or(self.memory) }
    }
}

impl fmt::Display for Budget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.cpus.value(), self.memory.value()) {
            (None, None) => write!(f, "no budgets"),
            (cpus, memory) => write!(
                f,
                "{} and {} each",
                cpus.map_or("unlimited CPU".to_owned(), |c| format!("{c} CPU")),
                memory.map_or("unlimited memory".to_owned(), |m| format!("{} of memory", bytes(m as f64)))
            ),
        }
    }
}

/// The default budget of `demo` and `experiment` on a machine of `cores` and `memory_bytes`: an
/// eighth of the cores per database (0.25 on two cores), and a quarter of the memory, between 1
/// and 4 GiB (a 4 GB database droplet, as in study S1).
///
/// Why every machine gets one: per request, the load path (the load generator and a service)
/// costs more CPU than the database it measures, so two uncapped databases sharing a machine with
/// it never reach their own limit; the load path runs out first, and the answer is the machine's.
/// S1 made its database droplets four times smaller than the app and load droplets for the same
/// reason. Two databases at an eighth each leave three quarters of the cores to the load path.
/// These values are tuned together with the load generator's cost; pass `--db-cpus` and
/// `--db-memory` (or `none`) to choose others.
pub fn demo_default(cores: usize, memory_bytes: Option<u64>) -> Budget {
    let cpus = ((cores as f64 / 8.0) * 20.0).round() / 20.0;
    let quarter = memory_bytes.map_or(4 << 30, |m| m / 4 / (256 << 20) * (256 << 20));
    Budget { cpus: Cap::At(cpus.max(0.1)), memory: Cap::At(quarter.clamp(1 << 30, 4 << 30)) }
}

/// Total memory of this machine, from `/proc/meminfo`.
pub fn machine_memory() -> Option<u64> {
    crate::procstat::meminfo("MemTotal")
}

/// How the local stack can set budgets (`STACK_BUDGET_METHOD` of `stack.sh env`), or why not.
pub fn stack_method(env: &BTreeMap<String, String>) -> Result<String, String> {
    match env.get("STACK_BUDGET_METHOD").map(String::as_str) {
        Some("none") | None => Err(env
            .get("STACK_BUDGET_NOTE")
            .filter(|n| !n.is_empty())
            .cloned()
            .unwrap_or_else(|| "this stack.sh does not report budgets".into())),
        Some(method) => Ok(method.to_owned()),
    }
}

/// The budget every running server of the stack has now (`STACK_DB_CPUS`, `STACK_DB_MEMORY`);
/// `None` when they differ (put back as no budget).
fn current(env: &BTreeMap<String, String>) -> Option<Budget> {
    let cpus = match env.get("STACK_DB_CPUS")?.as_str() {
        "none" => Cap::Unlimited,
        text => Cap::At(text.parse().ok()?),
    };
    let memory = match env.get("STACK_DB_MEMORY")?.as_str() {
        "none" => Cap::Unlimited,
        text => Cap::At(text.parse().ok()?),
    };
    Some(Budget { cpus, memory })
}

/// A budget applied to a running local stack, to be put back with [`Applied::restore`].
pub struct Applied {
    stack: Stack,
    previous: Budget,
}

impl Applied {
    /// Applies `wanted` to the running stack's servers (`stack.sh budget`), remembering theirs.
    pub async fn apply(stack: Stack, wanted: Budget) -> Result<Self> {
        let env = stack.env().await?;
        if let Err(why) = stack_method(&env) {
            bail!("database budgets are not available here: {why}");
        }
        let previous = current(&env).unwrap_or(Budget::NONE);
        match stack.budget(&wanted.stack_args()).await {
            Ok(said) => {
                for line in said.lines().filter(|l| !l.trim().is_empty()) {
                    eprintln!("  {line}");
                }
                Ok(Self { stack, previous })
            }
            Err(error) => {
                // One server may have taken the budget before the other refused it.
                let _ = stack.budget(&previous.stack_args()).await;
                Err(error)
            }
        }
    }

    /// Applies a CPU budget of `cpus` to the running stack's servers, their memory as it is.
    pub async fn cpus(stack: Stack, cpus: Cap<f64>) -> Result<Self> {
        let memory = current(&stack.env().await?).map_or(Cap::Unlimited, |b| b.memory);
        Self::apply(stack, Budget { cpus, memory }).await
    }

    pub async fn restore(self) -> Result<()> {
        self.stack.budget(&self.previous.stack_args()).await.map(|_| ()).context("putting the budgets back")
    }

    pub fn previous(&self) -> Budget {
        self.previous
    }
}

/// The local stack's servers: what each is, and the variable of `stack.sh env` naming a database
/// on it.
const STACK_SERVERS: [(&str, &str); 3] =
    [("PostgreSQL", "DATABASE_URL"), ("the hybrid's PostgreSQL", "HYBRID_DATABASE_URL"), ("MongoDB", "MONGODB_URI")];

/// Whether `databases` are on the servers of the stack whose `stack.sh env` is `stack_env`:
/// orders-pg's on its PostgreSQL and orders-mongo's on its mongod, any other's on any of them (the
/// hybrid's on its own server, or on orders-pg's).
fn on_the_stack(databases: &orders_bench_engines::databases::Databases, stack_env: &BTreeMap<String, String>) -> bool {
    let port = crate::components::local_port;
    let on =
        |url: &str, variable: &str| port(url).is_some() && port(url) == stack_env.get(variable).and_then(|u| port(u));
    let on_any = |url: &str| STACK_SERVERS.iter().any(|(_, variable)| on(url, variable));
    on(&databases.database_url, "DATABASE_URL")
        && on(&databases.mongodb_uri, "MONGODB_URI")
        && databases.others.iter().all(|(_, url)| on_any(url))
}

/// For `round`: checks that `databases` are the local stack's servers (the only ones `stack.sh`
/// can budget), then applies the budget `args` ask for on top of the current one.
pub async fn apply_to_round(
    args: &BudgetArgs,
    databases: &orders_bench_engines::databases::Databases,
    repo: &std::path::Path,
) -> Result<Applied> {
    let stack = Stack::plain(repo);
    let env = stack.env().await?;
    if !on_the_stack(databases, &env) || !stack.running().await? {
        let port = |variable: &str| env.get(variable).and_then(|u| crate::components::local_port(u));
        let servers: Vec<String> = STACK_SERVERS
            .iter()
            .map(|(what, variable)| format!("{what} port {}", port(variable).map_or("?".into(), |p| p.to_string())))
            .collect();
        let mut ours = vec![databases.database_url.clone(), databases.mongodb_uri.clone()];
        ours.extend(databases.others.iter().map(|(name, url)| format!("{name}={url}")));
        bail!(
            "--db-cpus/--db-memory budget the local stack's servers (infra/local/stack.sh: {}, which must be \
             running), but this round's databases are {}: elsewhere the database's machine (its droplet size) is \
             its budget",
            servers.join(", "),
            ours.join(", ")
        );
    }
    let current = current(&env).unwrap_or(Budget::NONE);
    let wanted = current.overridden_by(args);
    eprintln!("round: database budgets: {wanted} (applied through infra/local/stack.sh budget; put back afterwards)");
    Applied::apply(stack, wanted).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_cores_read_like_the_stack_takes_them() {
        assert_eq!(parse_memory("4G"), Ok(Cap::At(4 << 30)));
        assert_eq!(parse_memory("512MiB"), Ok(Cap::At(512 << 20)));
        assert_eq!(parse_memory("1.5gb"), Ok(Cap::At(3 << 29)));
        assert_eq!(parse_memory("none"), Ok(Cap::Unlimited));
        assert!(parse_memory("100M").is_err(), "too small for a database");
        assert!(parse_memory("lots").is_err());
        assert_eq!(parse_cpus("0.25"), Ok(Cap::At(0.25)));
        assert_eq!(parse_cpus("NONE"), Ok(Cap::Unlimited));
        assert!(parse_cpus("0.05").is_err());
        assert!(parse_cpus("x").is_err());
    }

    #[test]
    fn the_demo_default_is_an_eighth_of_the_cores_and_a_quarter_of_the_memory() {
        let gib = 1u64 << 30;
        let two = demo_default(2, Some(24 * gib));
        assert_eq!((two.cpus, two.memory), (Cap::At(0.25), Cap::At(4 * gib)));
        let laptop = demo_default(8, Some(8 * gib));
        assert_eq!((laptop.cpus, laptop.memory), (Cap::At(1.0), Cap::At(2 * gib)));
        assert_eq!(demo_default(1, Some(2 * gib)).memory, Cap::At(gib), "at least 1 GiB");
        assert_eq!(demo_default(1, None), Budget { cpus: Cap::At(0.15), memory: Cap::At(4 * gib) });
        assert_eq!(two.to_string(), "0.25 CPU and 4.0 GiB of memory each");
        assert_eq!(Budget::NONE.to_string(), "no budgets");
    }

    #[test]
    fn a_round_budgets_only_databases_on_the_stacks_servers() {
        let env: BTreeMap<String, String> = [
            ("DATABASE_URL", "postgres://postgres@127.0.0.1:56432/orders"),
            ("HYBRID_DATABASE_URL", "postgres://postgres@127.0.0.1:56433/orders"),
            ("MONGODB_URI", "mongodb://127.0.0.1:58017"),
        ]
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .into_iter()
        .collect();
        let databases = |pg: &str, others: &[&str]| orders_bench_engines::databases::Databases {
            database_url: pg.into(),
            mongodb_uri: "mongodb://127.0.0.1:58017".into(),
            mongodb_db: "orders".into(),
            others: others.iter().map(|url| ("pgh".to_owned(), (*url).to_owned())).collect(),
        };
        assert!(on_the_stack(&databases("postgres://127.0.0.1:56432/r", &[]), &env));
        assert!(on_the_stack(&databases("postgres://127.0.0.1:56432/r", &["postgres://127.0.0.1:56433/r"]), &env));
        assert!(on_the_stack(&databases("postgres://127.0.0.1:56432/r", &["postgres://127.0.0.1:56432/h"]), &env));
        assert!(!on_the_stack(&databases("postgres://127.0.0.1:5432/r", &[]), &env), "another server");
        assert!(!on_the_stack(&databases("postgres://127.0.0.1:56432/r", &["postgres://10.0.0.5:56433/r"]), &env));
    }

    #[test]
    fn a_budget_becomes_stack_arguments_and_flags_override_part_of_it() {
        let budget = Budget { cpus: Cap::At(0.25), memory: Cap::Unlimited };
        assert_eq!(budget.stack_args(), ["--db-cpus", "0.25", "--db-memory", "none"]);
        let args = BudgetArgs { db_cpus: None, db_memory: Some(Cap::At(1 << 30)) };
        assert_eq!(budget.overridden_by(&args), Budget { cpus: Cap::At(0.25), memory: Cap::At(1 << 30) });
        let env = |cpus: &str, memory: &str| {
            [("STACK_DB_CPUS", cpus), ("STACK_DB_MEMORY", memory)]
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .into_iter()
                .collect()
        };
        assert_eq!(current(&env("0.5", "2147483648")), Some(Budget { cpus: Cap::At(0.5), memory: Cap::At(2 << 30) }));
        assert_eq!(current(&env("none", "none")), Some(Budget::NONE));
        assert_eq!(current(&env("unequal", "none")), None);
    }
}
