//! Test support shared by the backends: `contract` is the one store contract suite every
//! `OrderStore` must pass against a real database (instantiated per backend with
//! `store_contract_tests!`), `client` starts a service on port 0 and talks HTTP to it, `faults`
//! crashes databases, sends SIGTERM and overloads services under load, `hostile` is the suite of
//! clients that try to cost a service more than they should (`hostile_client_tests!`),
//! `runtime` checks that a service binary runs on the runtime `WORKER_THREADS` asks for, and
//! `tls` makes throwaway certificates and servers that accept TLS only.

#![forbid(unsafe_code)]

pub mod api;
pub mod client;
pub mod contract;
pub mod faults;
pub mod hostile;
pub mod runtime;
pub mod tls;

pub use client::{Reply, TestApp};
