//! The preparation of a repeat on the local stack runs with the database servers' CPU budgets
//! lifted: the restore (mongod's stop and start) or reload, the warm-up and the fingerprint are
//! not what a round measures, and under a quarter core each they took most of a repeat's
//! preparation (the three-target demo: 5 s of restore and 7 s of warm-up a repeat, 14 s in all,
//! against 42 s of load; the first load of its 100,000 orders 28 s). The memory budget stays, so the page cache a restore leaves counts as it did; the CPU
//! budget is back before the runner waits for quiet databases and long before the first step,
//! and the per-step CPU figures read the cgroups' counters during the load only.

use crate::stack::Stack;
use anyhow::{Context, Result};

/// A CPU budget lifted from every server of the stack, to be put back with [`Lifted::put_back`].
#[derive(Debug)]
pub struct Lifted {
    stack: Stack,
    cpus: String,
}

impl Lifted {
    /// Lifts the CPU budget the stack's servers share (`stack.sh budget --db-cpus none`; memory
    /// stays as it is). `None` when they run without one, or with unequal ones (left alone: one
    /// command could not put each back).
    pub async fn lift(stack: &Stack) -> Result<Option<Self>> {
        let env = stack.env().await?;
        let Some(cpus) = env.get("STACK_DB_CPUS").filter(|cpus| !matches!(cpus.as_str(), "none" | "unequal")) else {
            return Ok(None);
        };
        stack.budget(&["--db-cpus".into(), "none".into()]).await.context("lifting the CPU budgets")?;
        Ok(Some(Self { stack: stack.clone(), cpus: cpus.clone() }))
    }

    /// The CPUs each server had, as `stack.sh` takes them (`0.25`).
    pub fn cpus(&self) -> &str {
        &self.cpus
    }

    pub async fn put_back(self) -> Result<()> {
        self.stack
            .budget(&["--db-cpus".into(), self.cpus.clone()])
            .await
            .map(|_| ())
            .with_context(|| format!("putting the CPU budgets of {} back", self.cpus))
    }
}

/// Runs `work` with the stack's CPU budgets lifted, and puts them back whether it failed or not;
/// returns its result and the CPUs lifted (`None`: there was no budget to lift).
pub async fn without_cpu_budget<T>(
    stack: &Stack,
    work: impl std::future::Future<Output = Result<T>>,
) -> Result<(T, Option<String>)> {
    let lifted = Lifted::lift(stack).await?;
    let result = work.await;
    let cpus = lifted.as_ref().map(|l| l.cpus().to_owned());
    if let Some(lifted) = lifted {
        lifted.put_back().await?;
    }
    Ok((result?, cpus))
}
