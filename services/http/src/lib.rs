//! The HTTP layer shared by `orders-pg` and `orders-mongo`: the router that mirrors the API table
//! of DESIGN.md (`routes`), short handlers over any `OrderStore` (`handlers`), the one error type
//! and its JSON shape (`error`), request extractors that turn bad input into that shape
//! (`extract`), the shared settings (`config`), logging (`telemetry`), Prometheus metrics
//! (`metrics`), the OpenAPI document (`openapi`) and serving with graceful shutdown (`serve`).

pub mod config;
pub mod error;
pub mod extract;
pub mod handlers;
pub mod layers;
pub mod metrics;
pub mod openapi;
pub mod routes;
pub mod serve;
pub mod telemetry;

pub use config::{HttpConfig, LogFormat};
pub use error::ApiError;
pub use routes::app;
pub use serve::{Server, serve, shutdown_signal};
