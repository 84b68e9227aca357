//! The local stack under the databases' budget, as the commands that run everything on this
//! machine take it (`demo`, `experiment`): the budget of the run (the flags over
//! [`demo_default`], printed, or why the run goes without), the stack started with it or its
//! running servers put under it, and at the end the previous budget put back and the stack stopped
//! if the command started it. One place, so that the commands cannot drift apart; budget flags for
//! databases elsewhere are refused here too ([`local_only`]).

use super::{Applied, Budget, BudgetArgs, Cap, demo_default, machine_memory, stack_method};
use anyhow::{Result, bail};
use orders_bench_engines::stack::Stack;
use orders_bench_report::format::bytes;
use std::collections::BTreeMap;

/// The budget of a run and what to say about it.
#[derive(Debug, Clone, PartialEq)]
pub struct Choice {
    pub budget: Budget,
    /// Why the run goes without budgets (for `round::Setup::budget_note`); `None`: it has one.
    pub note: Option<String>,
    /// The line printed at the start, after the command's name.
    pub said: String,
}

/// The budget for a run on a machine of `cores` and `memory` whose stack reports `stack_env`: the
/// flags over the default for the machine ([`demo_default`]). Without a way to set budgets the
/// default runs without them (and says why), while budgets asked for by flag are an error.
pub fn choose(
    flags: &BudgetArgs,
    stack_env: &BTreeMap<String, String>,
    cores: usize,
    memory: Option<u64>,
) -> Result<Choice> {
    let wanted = demo_default(cores, memory).overridden_by(flags);
    let source = if flags.given() {
        "from --db-cpus/--db-memory".to_owned()
    } else {
        format!(
            "the default for {cores} cores and {}: --db-cpus/--db-memory choose others, none runs without",
            memory.map_or("unknown memory".into(), |m| bytes(m as f64))
        )
    };
    match stack_method(stack_env) {
        _ if wanted.is_none() => Ok(Choice {
            budget: wanted,
            note: Some("switched off with --db-cpus none --db-memory none".into()),
            said: "NO BUDGETS (--db-cpus none --db-memory none): the databases share the machine with the load path"
                .into(),
        }),
        Ok(method) => {
            Ok(Choice { budget: wanted, note: None, said: format!("database budgets: {wanted} ({method}; {source})") })
        }
        Err(why) if flags.given() => bail!("database budgets were asked for, but they are not available here: {why}"),
        Err(why) => Ok(Choice {
            budget: Budget::NONE,
            said: format!(
                "NO BUDGETS: {why}. The databases share the machine with the load path, so the limits found may be the \
                 machine's; the report says so"
            ),
            note: Some(why),
        }),
    }
}

/// Refuses budget flags for databases that are not the local stack's (deployed services).
pub fn local_only(flags: &BudgetArgs) -> Result<()> {
    if flags.given() {
        bail!(
            "--db-cpus/--db-memory budget the local stack's database servers only (infra/local/stack.sh); with \
             --pg-url/--mongo-url the databases run elsewhere, and their machines (droplet sizes) are their budgets: \
             drop the budget flags"
        );
    }
    Ok(())
}

/// `WORKER_THREADS` for both services under a database budget of `cpus` cores: that many runtime
/// threads, rounded up, at least one; `auto` (one per core) without a CPU budget. On one machine
/// shared by both databases, both services and the load generator, a single-threaded service costs
/// less CPU per request than one whose threads wake each other (GET by id through orders-pg:
/// 24.3 µs with two threads, 18.3–19.3 µs with one, measured on two cores; docs/configuration.md),
/// and a service thread answers more requests than a database core does, so a service with as many
/// threads as its database has cores never sets the limit first.
pub fn service_threads(cpus: Cap<f64>) -> String {
    match cpus {
        Cap::At(cores) => (cores.ceil().max(1.0) as u32).to_string(),
        Cap::Unlimited => "auto".into(),
    }
}

/// What one command did to the local stack, undone by [`Session::end`]: it started the stack, or
/// put the running stack's servers under a budget.
pub struct Session {
    /// The command's name, in front of every line printed.
    who: &'static str,
    /// The stack, when the command started it.
    started: Option<Stack>,
    /// The budget applied to a stack the command did not start, to be put back.
    applied: Option<Applied>,
    /// The databases' CPU budget of the run, once chosen.
    cpus: Cap<f64>,
}

impl Session {
    pub fn new(who: &'static str) -> Self {
        Self { who, started: None, applied: None, cpus: Cap::Unlimited }
    }

    /// Chooses and prints the run's budget, then starts `stack` with it or applies it to the running
    /// stack. Returns why the run goes without budgets, if it does. What it did is recorded before
    /// each step, so that [`Session::end`] undoes it after an error or an interruption too.
    pub async fn begin(&mut self, stack: &Stack, flags: &BudgetArgs) -> Result<Option<String>> {
        let who = self.who;
        let choice = choose(flags, &stack.env().await?, crate::procstat::cores(), machine_memory())?;
        eprintln!("{who}: {}", choice.said);
        self.cpus = if choice.note.is_none() { choice.budget.cpus } else { Cap::Unlimited };
        eprintln!("{who}: every service runs with WORKER_THREADS={}", service_threads(self.cpus));
        if stack.running().await? {
            eprintln!("{who}: the local stack is running; it will be left running (and its budgets put back)");
            if choice.note.is_none() {
                self.applied = Some(self.apply_to_running(stack, choice.budget, flags).await?);
            }
        } else {
            let args = if choice.note.is_none() { choice.budget.stack_args() } else { Vec::new() };
            eprintln!("{who}: starting the local stack (bash infra/local/stack.sh start {})", args.join(" "));
            self.started = Some(stack.clone());
            stack.start(&args).await?;
        }
        Ok(choice.note)
    }

    /// Applies the budget to a stack the command did not start. Its servers' caches were sized when
    /// they started; when the default memory budget is too small for them, the servers keep their
    /// memory as it is, and it says so, rather than refuse to run (an explicit --db-memory is
    /// refused instead).
    async fn apply_to_running(&self, stack: &Stack, wanted: Budget, flags: &BudgetArgs) -> Result<Applied> {
        let who = self.who;
        match Applied::apply(stack.clone(), wanted).await {
            Err(error) if flags.db_memory.is_none() && wanted.memory != Cap::Unlimited => {
                let cpu_only = Budget { cpus: wanted.cpus, memory: Cap::Unlimited };
                eprintln!(
                    "{who}: note: {error:#}\n{who}: keeping the servers' memory unlimited and applying {cpu_only}; \
                     restart the stack with a memory budget (stack.sh stop, then run the {who} again) to size their \
                     caches for it"
                );
                Applied::apply(stack.clone(), cpu_only).await
            }
            outcome => outcome,
        }
    }

    /// `WORKER_THREADS` for both services of the run (`service_threads`), once `begin` chose the
    /// budget.
    pub fn service_threads(&self) -> String {
        service_threads(self.cpus)
    }

    /// The databases' CPU budget of the run, once `begin` chose it (unlimited without one).
    pub fn cpus(&self) -> Cap<f64> {
        self.cpus
    }

    /// Puts the previous budget back and stops the stack if the command started it; failures are
    /// printed, not returned (this runs after an error too).
    pub async fn end(&mut self) {
        let who = self.who;
        if let Some(applied) = self.applied.take() {
            eprintln!("{who}: putting the stack's budgets back ({})", applied.previous());
            if let Err(error) = applied.restore().await {
                eprintln!("{who}: {error:#}");
            }
        }
        if let Some(stack) = self.started.take() {
            eprintln!("{who}: stopping the local stack it started");
            if let Err(error) = stack.stop().await {
                eprintln!("{who}: {error:#}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1 << 30;

    #[test]
    fn services_get_as_many_threads_as_their_database_has_cores_rounded_up() {
        assert_eq!(service_threads(Cap::At(0.25)), "1");
        assert_eq!(service_threads(Cap::At(1.0)), "1");
        assert_eq!(service_threads(Cap::At(1.5)), "2");
        assert_eq!(service_threads(Cap::Unlimited), "auto");
    }

    fn env(method: &str) -> BTreeMap<String, String> {
        [("STACK_BUDGET_METHOD", method), ("STACK_BUDGET_NOTE", "not root, and no systemd user manager")]
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .into_iter()
            .collect()
    }

    fn flags(cpus: Option<Cap<f64>>, memory: Option<Cap<u64>>) -> BudgetArgs {
        BudgetArgs { db_cpus: cpus, db_memory: memory }
    }

    #[test]
    fn without_flags_the_run_takes_the_machine_default_and_says_so() {
        let choice = choose(&BudgetArgs::default(), &env("cgroup-v1"), 2, Some(24 * GIB)).expect("budgets");
        assert_eq!(choice.budget, demo_default(2, Some(24 * GIB)));
        assert_eq!(choice.budget, Budget { cpus: Cap::At(0.25), memory: Cap::At(4 * GIB) });
        assert_eq!(choice.note, None);
        assert_eq!(
            choice.said,
            "database budgets: 0.25 CPU and 4.0 GiB of memory each (cgroup-v1; the default for 2 cores and 24.0 GiB: \
             --db-cpus/--db-memory choose others, none runs without)"
        );
    }

    #[test]
    fn flags_override_the_default_and_what_they_leave_out_stays_the_default() {
        let both = choose(&flags(Some(Cap::At(0.5)), Some(Cap::At(2 * GIB))), &env("cgroup-v2"), 2, Some(24 * GIB));
        let both = both.expect("budgets");
        assert_eq!(both.budget, Budget { cpus: Cap::At(0.5), memory: Cap::At(2 * GIB) });
        assert!(both.said.ends_with("(cgroup-v2; from --db-cpus/--db-memory)"), "{}", both.said);
        let cpus = choose(&flags(Some(Cap::At(0.5)), None), &env("cgroup-v1"), 8, Some(8 * GIB)).expect("budgets");
        assert_eq!(cpus.budget, Budget { cpus: Cap::At(0.5), memory: Cap::At(2 * GIB) }, "memory: the default");
        let unlimited_memory = choose(&flags(None, Some(Cap::Unlimited)), &env("cgroup-v1"), 2, None).expect("budget");
        assert_eq!(unlimited_memory.budget, Budget { cpus: Cap::At(0.25), memory: Cap::Unlimited });
    }

    #[test]
    fn none_switches_budgets_off_with_a_note_even_where_they_are_available() {
        let off = flags(Some(Cap::Unlimited), Some(Cap::Unlimited));
        for method in ["cgroup-v1", "none"] {
            let choice = choose(&off, &env(method), 2, Some(24 * GIB)).expect("runs without");
            assert_eq!(choice.budget, Budget::NONE);
            assert_eq!(choice.note.as_deref(), Some("switched off with --db-cpus none --db-memory none"));
            assert!(choice.said.starts_with("NO BUDGETS (--db-cpus none --db-memory none)"), "{}", choice.said);
        }
    }

    #[test]
    fn without_a_way_to_set_budgets_the_default_runs_without_and_explicit_flags_fail() {
        let choice = choose(&BudgetArgs::default(), &env("none"), 2, Some(24 * GIB)).expect("runs");
        assert_eq!(choice.budget, Budget::NONE);
        assert_eq!(choice.note.as_deref(), Some("not root, and no systemd user manager"));
        assert!(choice.said.starts_with("NO BUDGETS: not root, and no systemd user manager."), "{}", choice.said);
        let silent = choose(&BudgetArgs::default(), &BTreeMap::new(), 2, None).expect("runs");
        assert_eq!(silent.note.as_deref(), Some("this stack.sh does not report budgets"));
        let asked = flags(Some(Cap::At(0.5)), None);
        let error = choose(&asked, &env("none"), 2, None).expect_err("asked for, not available");
        assert!(error.to_string().contains("not root, and no systemd user manager"), "{error}");
    }

    #[test]
    fn databases_elsewhere_refuse_budget_flags_and_take_no_default() {
        assert!(local_only(&BudgetArgs::default()).is_ok());
        for given in
            [flags(Some(Cap::At(0.25)), None), flags(None, Some(Cap::At(GIB))), flags(Some(Cap::Unlimited), None)]
        {
            let error = local_only(&given).expect_err("refused");
            assert!(error.to_string().contains("local stack's database servers only"), "{error}");
        }
    }
}
