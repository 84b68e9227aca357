//! Test support shared by the backends: `contract` is the one store contract suite every
//! `OrderStore` must pass against a real database (instantiated per backend with
//! `store_contract_tests!`), and `client` starts a service on port 0 and talks HTTP to it.

pub mod api;
pub mod client;
pub mod contract;

pub use client::{Reply, TestApp};
