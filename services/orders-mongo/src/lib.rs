//! The order service on MongoDB: its settings (`config`), the BSON shape of an order (`document`)
//! and its JSON written straight from raw BSON on reads (`raw_json`, over the element reader
//! `bson_bytes`), the `OrderStore` on the official driver (`store`), the indexes from
//! `migrations/mongo` (`indexes`), how driver errors map to store errors (`error`), pool figures
//! from the driver's pool events (`pool`) and the `/diagnostics` report (`diagnostics`, with
//! `replication`: the member written to and what a write waits for, and `tls`: whether the
//! connections are encrypted, `tls=true` in `MONGODB_URI`). What the bench runner asks this
//! database besides (seeding checks, `fsync`, sizes, counts, samples) lives in
//! `orders-bench-engines`. The HTTP API itself is the shared `orders-http` crate.

#![forbid(unsafe_code)]

mod bson_bytes;
pub mod config;
pub mod diagnostics;
pub mod document;
pub mod error;
pub mod indexes;
pub mod pool;
pub mod raw_json;
pub mod reads;
pub mod replication;
pub mod section;
pub mod store;
pub mod tls;

pub use config::{Config, MongoConfig};
pub use store::{ConnectError, MongoStore};
