//! `orders-bench` (the library): the orchestration of the benchmark. It runs everything the other
//! crates only describe: `seed` loads the data set (`orders-dataset`) into every database through
//! each layout's `backend`, `round` drives the targets' services with a load generator
//! (`orders-loadgen`'s, or k6 through `k6`) up a staircase, repeated, each repeat from a `fresh`
//! start, judged by the generator's verdicts and recorded in the result model
//! (`orders-bench-model`), which the report (`orders-bench-report`) renders; `demo` and
//! `experiment` run whole comparisons on this machine (started and stopped by `scaffold`); `fleet`
//! spreads a round over several load machines (`agent` on each follower).
//!
//! Around them: `stack` controls the local stack (`infra/local/stack.sh`), `budget` (with
//! `orders-budget`) gives the databases equal budgets and reads back what they ran under,
//! `databases` says where they are, `diagnostics` reads the services' `/diagnostics` and samples
//! the databases, `procstat` reads `/proc` and `components` finds a run's processes by their
//! ports, `repo` finds the project's files, `reports` is the report's command line. Nothing here
//! is imported by the generator, the model or the report: Cargo keeps the data flowing one way.

pub mod backend;
pub mod budget;
pub mod components;
pub mod databases;
pub mod demo;
pub mod diagnostics;
pub mod experiment;
pub mod fleet;
pub mod fresh;
pub mod k6;
pub mod procstat;
pub mod repo;
pub mod reports;
pub mod round;
pub mod scaffold;
pub mod seed;
pub mod stack;
