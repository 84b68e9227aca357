//! The start-up and clean-up of the commands that run on this machine (`demo`, `experiment`),
//! written once so that they cannot drift apart: the local stack started or reused under the run's
//! budgets (`budget::local::Session`), its databases created, the services started (`services`)
//! and waited for, and at the end everything the command started stopped, after an error or on
//! Ctrl-C or SIGTERM too (`run`). The services' own graceful shutdown is theirs (`orders-http`);
//! this is the runner's side of a signal.

pub mod services;

use crate::budget::BudgetArgs;
use crate::budget::local::Session;
use anyhow::{Context, Result, anyhow, bail};
use orders_bench_engines::Backend;
use orders_bench_engines::databases::{Databases, with_database};
use orders_bench_engines::stack::Stack;
use services::Service;
use std::collections::BTreeMap;
use std::future::Future;
use std::path::Path;
use std::sync::Arc;

/// What a command started besides the stack and must stop on the way out: its services.
pub trait Stop {
    fn stop(&mut self) -> impl Future<Output = ()>;
}

impl Stop for Vec<Service> {
    async fn stop(&mut self) {
        for service in self.iter_mut() {
            service.stop().await;
        }
    }
}

/// What a command has started and must stop: the stack's session (the stack it started, or the
/// budget it applied to a running one) and `S`, its services.
pub struct Started<S> {
    pub session: Session,
    pub services: S,
}

impl<S: Stop> Started<S> {
    /// Services first, then the budgets put back and the stack stopped if the command started it.
    async fn stop(&mut self) {
        self.services.stop().await;
        self.session.end().await;
    }
}

/// Runs `body` until it ends or Ctrl-C or SIGTERM comes ("interrupted"), then says so and stops
/// everything `body` started, whichever came first; returns `body`'s outcome.
pub async fn run<S: Stop, T>(
    who: &'static str,
    services: S,
    body: impl AsyncFnOnce(&mut Started<S>) -> Result<T>,
) -> Result<T> {
    let mut started = Started { session: Session::new(who), services };
    let outcome = tokio::select! {
        outcome = body(&mut started) => outcome,
        _ = shutdown_signal() => Err(anyhow!("interrupted")),
    };
    eprintln!("{who}: stopping what it started");
    started.stop().await;
    outcome
}

/// Resolves on Ctrl-C or SIGTERM: the runner's one signal handler.
pub async fn shutdown_signal() -> Result<()> {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).context("SIGTERM")?;
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
    Ok(())
}

/// `--db-name`: the database created in every server, a plain name.
pub fn check_db_name(name: &str) -> Result<()> {
    if !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        bail!("--db-name: letters, digits and _ only");
    }
    Ok(())
}

/// The local stack as a command finds it once it is up under the run's budgets.
pub struct LocalStack {
    pub stack: Stack,
    /// What `stack.sh env` printed.
    pub env: BTreeMap<String, String>,
    /// Why the databases run without budgets, when they do.
    pub budget_note: Option<String>,
    /// The PostgreSQL and MongoDB databases named `db_name` (no other engine's yet).
    pub databases: Databases,
}

impl<S> Started<S> {
    /// Starts the local stack under `budget` (or puts the running one under it) and names the
    /// databases `db_name` on its servers; every process it starts carries `marker`.
    pub async fn local_stack(
        &mut self,
        repo: &Path,
        marker: &(String, String),
        budget: &BudgetArgs,
        db_name: &str,
    ) -> Result<LocalStack> {
        let stack = Stack::new(repo, marker.clone());
        let budget_note = self.session.begin(&stack, budget).await?;
        let env = stack.env().await?;
        let need = |name: &str| env.get(name).cloned().with_context(|| format!("stack.sh env printed no {name}"));
        let database_url = with_database(&need("DATABASE_URL")?, db_name);
        let mongodb_uri = need("MONGODB_URI")?;
        let databases = Databases { database_url, mongodb_uri, mongodb_db: db_name.to_owned(), ..Databases::default() };
        Ok(LocalStack { stack, env, budget_note, databases })
    }
}

/// Every backend of `databases`, its database created.
pub async fn create_databases(databases: &Databases) -> Result<Vec<Arc<dyn Backend>>> {
    let backends = orders_bench_engines::all(databases);
    for backend in &backends {
        backend.create_database().await?;
    }
    Ok(backends)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;
    use std::rc::Rc;

    /// Services that only remember being stopped.
    struct Flag(Rc<Cell<bool>>);

    impl Stop for Flag {
        async fn stop(&mut self) {
            self.0.set(true);
        }
    }

    #[tokio::test]
    async fn what_the_body_started_is_stopped_after_its_error_too() {
        let stopped = Rc::new(Cell::new(false));
        let outcome: Result<()> =
            run("test", Flag(stopped.clone()), async |_started| Err(anyhow!("the body failed"))).await;
        assert_eq!(outcome.unwrap_err().to_string(), "the body failed");
        assert!(stopped.get());
        let outcome = run("test", Flag(Rc::new(Cell::new(false))), async |_started| Ok(7)).await;
        assert_eq!(outcome.unwrap(), 7);
    }

    #[test]
    fn a_database_name_is_letters_digits_and_underscores() {
        assert!(check_db_name("orders_demo2").is_ok());
        for bad in ["orders-demo", "orders demo", "x;drop"] {
            assert!(check_db_name(bad).is_err(), "{bad}");
        }
    }
}
