//! Middleware every request passes through: `observe` records the latency histogram and a debug
//! log line per request, `time_limit` turns a request that runs past `REQUEST_TIMEOUT_MS` into a
//! 503, `panic_response` turns a panic into a 500 with the usual error shape, and
//! `remember_route` carries the matched route template out to `observe` (so metrics are labelled
//! `/orders/{id}`, never one series per id).

use crate::error::ApiError;
use crate::metrics::Metrics;
use axum::extract::{MatchedPath, Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::any::Any;
use std::sync::Arc;
use std::time::{Duration, Instant};

pub async fn observe(State(metrics): State<Arc<Metrics>>, request: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = request.method().clone();
    let response = next.run(request).await;
    let elapsed = started.elapsed();
    let route = response.extensions().get::<MatchedPath>().map_or("unmatched", MatchedPath::as_str);
    metrics.record(route, method.as_str(), response.status().as_u16(), elapsed);
    tracing::debug!(%method, route, status = response.status().as_u16(), micros = elapsed.as_micros() as u64, "request");
    response
}

pub async fn remember_route(matched: Option<MatchedPath>, request: Request, next: Next) -> Response {
    let mut response = next.run(request).await;
    if let Some(matched) = matched {
        response.extensions_mut().insert(matched);
    }
    response
}

pub async fn time_limit(limit: Duration, request: Request, next: Next) -> Response {
    let method = request.method().clone();
    match tokio::time::timeout(limit, next.run(request)).await {
        Ok(response) => response,
        Err(_) => ApiError::timed_out(limit, &method).into_response(),
    }
}

pub fn panic_response(panic: Box<dyn Any + Send + 'static>) -> Response {
    let cause = panic
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| panic.downcast_ref::<&str>().copied())
        .unwrap_or("unknown panic");
    ApiError::Internal(format!("handler panicked: {cause}")).into_response()
}
