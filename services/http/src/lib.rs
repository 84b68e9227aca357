//! The HTTP layer shared by the three services, one per storage layout (`orders-pg`,
//! `orders-pg-hybrid`, `orders-mongo`): the router that mirrors the API table of docs/api.md
//! (`routes`), short handlers over any `OrderStore` (`handlers`), the one error type and its JSON
//! shape (`error`), request extractors that turn bad input into that shape (`extract`), the shared
//! settings (`config`), logging (`telemetry`), Prometheus metrics (`metrics`) with the count of
//! shed requests (`shedding`), the headers of the write endpoints (`write_headers`: `Prefer`,
//! `Idempotency-Key`), the OpenAPI document (`openapi`), serving with a drain that answers every
//! accepted connection (`serve`), the limits on what one client can hold (`connection`: header and
//! idle timeouts; `admission`: requests in flight, `held_body`: until their answer is taken), and
//! the tokio runtime every service builds from `WORKER_THREADS` (`runtime`).

#![forbid(unsafe_code)]

pub mod admission;
pub mod config;
pub mod connection;
pub mod draining;
pub mod error;
pub mod extract;
pub mod handlers;
pub mod held_body;
pub mod layers;
pub mod metrics;
pub mod openapi;
pub mod routes;
pub mod runtime;
pub mod serve;
pub mod shedding;
pub mod telemetry;
pub mod write_headers;

pub use config::{DatabaseLimits, HttpConfig, LogFormat};
pub use connection::ConnectionLimits;
pub use draining::Draining;
pub use error::ApiError;
pub use routes::app;
pub use runtime::WorkerThreads;
pub use serve::{Server, serve, shutdown_signal};
