//! Entry point of `orders-pg-hybrid`: parse settings, start logging, build the runtime
//! (`WORKER_THREADS`), connect and migrate, serve.

#![forbid(unsafe_code)]

use anyhow::Context;
use orders_pg_hybrid::{Config, HybridStore};

/// mimalloc, as for the other two services (docs/service-cost.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Settings and logging first, then the runtime `WORKER_THREADS` asks for, then the service on it.
fn main() -> anyhow::Result<()> {
    let config: Config = orders_http::config::parse_args("127.0.0.1:8080");
    let _log = orders_http::telemetry::init(&config.http);
    let runtime = orders_http::runtime::build(config.http.worker_threads).context("could not start the runtime")?;
    runtime.block_on(async {
        let store = HybridStore::connect(&config.store()).await.context("could not start on PostgreSQL")?;
        orders_http::serve(&config.http, store).await.context("server failed")
    })
}
