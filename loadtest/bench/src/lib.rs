//! `orders-bench` (the library): the orchestration of the benchmark, running what the other crates
//! only describe. `seed` loads the data set into every database through the engines of
//! `orders-bench-engines`; `round` drives the targets' services with a load generator up a
//! staircase, repeated, each repeat from a `fresh` start, and records the result model that the
//! report renders; `demo` and `experiment` run whole comparisons on this machine (started and
//! stopped by `scaffold`); `fleet` spreads a round over several load machines. Around them:
//! `budget`, `diagnostics`, `procstat`, `components` and `repo` reach the budgets, the servers,
//! `/proc` and the project's files. Nothing here is imported by the engines, the generator, the
//! model or the report: Cargo keeps the data flowing one way.

pub mod budget;
pub mod components;
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
