//! The preparation of a repeat on the local stack runs with the database servers' CPU budgets
//! lifted: the restore (mongod's stop and start) or reload, the warm-up and the fingerprint are
//! not what a round measures, and under a quarter core each they took most of a repeat's
//! preparation (the three-target demo: 5 s of restore and 7 s of warm-up a repeat, 14 s in all,
//! against 42 s of load; the first load of its 100,000 orders 28 s). The memory budget stays, so the page cache a restore leaves counts as it did; the CPU
//! budget is back before the runner waits for quiet databases and long before the first step,
//! and the per-step CPU figures read the cgroups' counters during the load only.

use anyhow::{Context, Result};
use orders_bench_engines::stack::Stack;

/// Runs `work` with the CPU budget the stack's servers share lifted (`stack.sh budget --db-cpus
/// none`; memory stays as it is), and puts it back whether `work` failed or not; returns its
/// result and the CPUs lifted. Nothing is lifted (`None`) when the servers run without a CPU
/// budget, or with unequal ones (one command could not put each back).
pub async fn without_cpu_budget<T>(
    stack: &Stack,
    work: impl std::future::Future<Output = Result<T>>,
) -> Result<(T, Option<String>)> {
    let env = stack.env().await?;
    let Some(cpus) = env.get("STACK_DB_CPUS").filter(|cpus| !matches!(cpus.as_str(), "none" | "unequal")).cloned()
    else {
        return Ok((work.await?, None));
    };
    stack.budget(&["--db-cpus".into(), "none".into()]).await.context("lifting the CPU budgets")?;
    let result = work.await;
    stack
        .budget(&["--db-cpus".into(), cpus.clone()])
        .await
        .with_context(|| format!("putting the CPU budgets of {cpus} back"))?;
    Ok((result?, Some(cpus)))
}
