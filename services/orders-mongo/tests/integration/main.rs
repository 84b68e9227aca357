//! `orders-mongo`'s integration tests, one test binary (each file a module: the driver's generic
//! code is compiled and linked once, not once per file): the API and store contracts over a real
//! mongod, what only the MongoDB service has, faults, hostile clients, TLS to a mongod that
//! requires it (`tls`) and the replicated stack (`replicas`, skipped without `REPLICA_MONGODB_URI`). nextest runs every test
//! in a process of its own; `.config/nextest.toml` names the ones that must run alone by module.

mod common;

mod api_contract;
mod faults;
mod hostile;
mod mongo_specific;
mod replicas;
mod store_contract;
mod tls;
