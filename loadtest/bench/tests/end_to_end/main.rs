//! The bench's end-to-end tests, one test binary (each file a module: one binary links and
//! compiles the drivers' generic code once, where ten took about 110 s of CPU in a clean build).
//! They run `orders-bench` as users do, against the local stack's real databases and real
//! services: seeding, rounds with either load generator, k6, several load machines, the quick
//! demo and the quick experiments. nextest runs each test in a process of its own, as before;
//! `.config/nextest.toml` names the ones that must run alone by module (`test(/^demo_quick::/)`).

mod support;

mod demo_quick;
mod experiment_deployed;
mod experiment_failover;
mod experiment_quick;
mod experiment_replication;
mod fleet_round;
mod generators_agree;
mod k6_smoke;
mod load_retire;
mod mixes_shared;
mod seed_both;
mod three_targets;
