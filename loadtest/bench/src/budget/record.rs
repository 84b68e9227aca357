//! The budget each database ran under, as `result.json` records it: read from the kernel (the
//! cgroup of the server's process, its CPU quota and memory limit), with the engine's cache from
//! its diagnostics, and the one-line label the report and the headline use ("0.25 CPU and 4.0 GiB
//! each", "no budgets", or "UNEQUAL budgets").

use crate::diagnostics::Snapshot;
use orders_bench_engines::Targets;
pub use orders_bench_model::budget::{CgroupVersion as Version, DbBudget};
use orders_bench_report::format::bytes;
use orders_budget::{Placement, Reading};
use std::collections::BTreeMap;

/// The budget the kernel applies to the cgroup at `placement`, as read.
pub fn from_kernel(placement: &Placement, reading: &Reading, dedicated: bool) -> DbBudget {
    DbBudget {
        cgroup: Some(placement.path.clone()),
        cgroup_version: Some(match placement.version {
            orders_budget::Version::V1 => Version::V1,
            orders_budget::Version::V2 => Version::V2,
        }),
        cpus: reading.quota_cores,
        period_ms: reading.period_us.map(|us| us as f64 / 1000.0),
        memory_bytes: reading.memory_limit_bytes,
        dedicated,
        cache_bytes: None,
        note: (!dedicated).then(|| "its cgroup holds other processes too: CPU measured from /proc".to_owned()),
    }
}

/// "0.25 CPU and 4.0 GiB".
fn describe(budget: &DbBudget) -> String {
    format!(
        "{} and {}",
        budget.cpus.map_or("unlimited CPU".to_owned(), |c| format!("{} CPU", trim(c))),
        budget.memory_bytes.map_or("unlimited memory".to_owned(), |m| bytes(m as f64))
    )
}

fn trim(cores: f64) -> String {
    let text = format!("{cores:.3}");
    text.trim_end_matches('0').trim_end_matches('.').to_owned()
}

/// Adds every engine's cache, from its service's `/diagnostics`, to the budget of its database.
pub fn add_engine_caches(budgets: &mut BTreeMap<String, DbBudget>, snapshot: &Snapshot, targets: &Targets) {
    for target in targets.iter() {
        if let Some(budget) = budgets.get_mut(&target.backend.info().database) {
            budget.cache_bytes = target.backend.cache_bytes(snapshot.get(&target.name()));
        }
    }
}

/// The label of a run's budgets: equal limits, none at all, or unequal (which the report flags).
/// `why_none` says why there are none, or what they are when the databases' cgroups are not the
/// local stack's.
pub fn label(budgets: &BTreeMap<String, DbBudget>, why_none: Option<&str>) -> String {
    let here: Vec<(&String, &DbBudget)> = budgets.iter().filter(|(_, b)| b.cgroup.is_some()).collect();
    if here.is_empty() {
        // The note of a run whose databases have cgroups the sampler does not own (the replicas'
        // members) says what they are.
        return why_none.map_or_else(
            || "the databases are not on this machine: their own machines are their budgets".into(),
            str::to_owned,
        );
    }
    if here.iter().all(|(_, b)| !b.limited()) {
        return match why_none {
            Some(why) => format!("no budgets ({why})"),
            None => "no budgets: the databases shared this machine's cores and memory with the load path".into(),
        };
    }
    let first = here[0].1;
    let equal = here.len() == budgets.len()
        && here.iter().all(|(_, b)| b.cpus == first.cpus && b.memory_bytes == first.memory_bytes);
    if equal {
        let period = first.period_ms.map(|p| format!(", {} ms quota period", trim(p))).unwrap_or_default();
        let version = match first.cgroup_version {
            Some(Version::V1) => "cgroup v1",
            Some(Version::V2) => "cgroup v2",
            None => "cgroup",
        };
        return format!("{} each ({version}{period})", describe(first));
    }
    let each: Vec<String> = budgets.iter().map(|(name, b)| format!("{name} {}", describe(b))).collect();
    format!("UNEQUAL budgets: {}", each.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn budget(cpus: Option<f64>, memory: Option<u64>) -> DbBudget {
        DbBudget {
            cgroup: Some("/orders-bench/x".into()),
            cgroup_version: Some(Version::V1),
            cpus,
            period_ms: cpus.map(|_| 10.0),
            memory_bytes: memory,
            dedicated: true,
            cache_bytes: None,
            note: None,
        }
    }

    #[test]
    fn labels_say_equal_none_or_unequal() {
        let both = |a: DbBudget, b: DbBudget| BTreeMap::from([("postgres".to_owned(), a), ("mongod".to_owned(), b)]);
        let equal = both(budget(Some(0.25), Some(4 << 30)), budget(Some(0.25), Some(4 << 30)));
        assert_eq!(label(&equal, None), "0.25 CPU and 4.0 GiB each (cgroup v1, 10 ms quota period)");
        let none = both(budget(None, None), budget(None, None));
        assert!(label(&none, Some("no cgroups")).starts_with("no budgets (no cgroups)"));
        let unequal = both(budget(Some(0.25), None), budget(Some(0.5), None));
        assert!(label(&unequal, None).starts_with("UNEQUAL budgets: mongod 0.5 CPU"), "{}", label(&unequal, None));
        let remote = both(DbBudget::not_here("remote"), DbBudget::not_here("remote"));
        assert!(label(&remote, None).contains("not on this machine"));
        let members = "0.25 CPU and 2.0 GiB per member";
        assert_eq!(label(&remote, Some(members)), members, "the replicas' members have cgroups of their own");
    }
}
