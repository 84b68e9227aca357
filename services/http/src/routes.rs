//! The router: the API table of docs/api.md, line for line, plus the one layer every request passes
//! through (`layers::Observe`: `MAX_IN_FLIGHT`, body limit, request timeout, panic guard, metrics and tracing).

use crate::admission::Admission;
use crate::config::HttpConfig;
use crate::handlers::{self, AppState};
use crate::layers::ObserveLayer;
use crate::metrics::Metrics;
use crate::shedding::Shedding;
use axum::Router;
use axum::routing::{get, patch, post};
use orders_core::{IdGenerator, OrderStore};
use std::sync::Arc;

pub fn app<S: OrderStore>(store: Arc<S>, config: &HttpConfig) -> Router {
    let state = AppState {
        store,
        ids: Arc::new(IdGenerator::new()),
        metrics: Arc::new(Metrics::new()),
        shedding: Arc::new(Shedding::default()),
        admission: Arc::new(Admission::new(config.max_in_flight)),
        diagnostics: Arc::new(tokio::sync::Mutex::new(())),
        max_list_bytes: config.max_list_bytes(),
    };
    let observe = ObserveLayer {
        metrics: state.metrics.clone(),
        shedding: state.shedding.clone(),
        admission: state.admission.clone(),
        time_limit: config.request_timeout(),
        body_limit: usize::try_from(config.max_body_bytes).unwrap_or(usize::MAX),
    };

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
        // Applied to every route and the fallback after routing, so the matched route is known.
        .layer(observe)
        .with_state(state)
}
