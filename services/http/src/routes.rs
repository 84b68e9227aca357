//! The router: the API table of DESIGN.md, line for line, plus the layers every request passes
//! through (metrics and tracing, request timeout, panic guard, body limit).

use crate::config::HttpConfig;
use crate::handlers::{self, AppState};
use crate::layers;
use crate::metrics::Metrics;
use crate::shedding::{self, Shedding};
use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::middleware;
use axum::routing::{get, patch, post};
use orders_core::{IdGenerator, OrderStore};
use std::sync::Arc;
use tower_http::catch_panic::CatchPanicLayer;

pub fn app<S: OrderStore>(store: Arc<S>, config: &HttpConfig) -> Router {
    let state = AppState {
        store,
        ids: Arc::new(IdGenerator::new()),
        metrics: Arc::new(Metrics::new()),
        shedding: Arc::new(Shedding::default()),
    };
    let metrics = state.metrics.clone();
    let shed = state.shedding.clone();
    let timeout = config.request_timeout();
    let body_limit = usize::try_from(config.max_body_bytes).unwrap_or(usize::MAX);

    Router::new()
        .route("/orders", post(handlers::create_order::<S>))
        .route("/orders/{id}", get(handlers::get_order::<S>))
        .route("/orders/{id}/status", patch(handlers::update_status::<S>))
        .route("/customers/{id}/orders", get(handlers::orders_by_customer::<S>))
        .route("/products/{id}/orders", get(handlers::orders_by_product::<S>))
        .route("/healthz", get(handlers::healthz))
        .route("/readyz", get(handlers::readyz::<S>))
        .route("/metrics", get(handlers::metrics::<S>))
        .route("/diagnostics", get(handlers::diagnostics::<S>))
        .route("/openapi.json", get(handlers::openapi))
        .method_not_allowed_fallback(handlers::method_not_allowed)
        .fallback(handlers::not_found)
        .route_layer(middleware::from_fn(layers::remember_route))
        .layer(DefaultBodyLimit::max(body_limit))
        .layer(CatchPanicLayer::custom(layers::panic_response))
        .layer(middleware::from_fn(move |request, next| layers::time_limit(timeout, request, next)))
        .layer(middleware::from_fn_with_state(shed, shedding::count))
        .layer(middleware::from_fn_with_state(metrics, layers::observe))
        .with_state(state)
}
