//! `orders-pg`'s integration tests, one test binary (each file a module: the drivers' generic
//! code is compiled and linked once, not once per file): the API and store contracts over real
//! PostgreSQL, the binary itself, faults, hostile clients, the plan cache (F1), the knobs, and
//! the replicated stack (`replicas`, skipped without `REPLICA_DATABASE_URL`).
//! nextest runs every test in a process of its own; `.config/nextest.toml` names the ones that
//! must run alone by module (`test(/^hostile::/)`).

mod api_contract;
mod binary;
mod faults;
mod hostile;
mod plan_cache;
mod replicas;
mod store_contract;
mod toggles;
