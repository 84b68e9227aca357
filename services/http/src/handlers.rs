//! One short handler per endpoint: extract, parse, one store call, respond. Generic over the
//! store so both services (and the in-memory test store) share every line.

use crate::error::ApiError;
use crate::extract::{JsonBody, ListParams, PathId};
use crate::metrics::Metrics;
use axum::Json;
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use orders_core::{
    CustomerId, CustomerQuery, IdGenerator, Limit, NewOrder, Order, OrderId, OrderStore, ProductId, ProductQuery,
    StatusChange, Timestamp, place_order,
};
use std::sync::Arc;

/// What every handler can reach: the store, the id generator and the metrics registry.
pub struct AppState<S> {
    pub store: Arc<S>,
    pub ids: Arc<IdGenerator>,
    pub metrics: Arc<Metrics>,
}

impl<S> Clone for AppState<S> {
    fn clone(&self) -> Self {
        Self { store: self.store.clone(), ids: self.ids.clone(), metrics: self.metrics.clone() }
    }
}

/// A 200 whose body the store already wrote as JSON (reads are never parsed and serialised again).
fn json_response(body: Vec<u8>) -> Response {
    ([(header::CONTENT_TYPE, HeaderValue::from_static("application/json"))], body).into_response()
}

pub async fn get_order<S: OrderStore>(
    State(app): State<AppState<S>>,
    PathId(id): PathId<OrderId>,
) -> Result<Response, ApiError> {
    Ok(json_response(app.store.get(id).await?.into_bytes()))
}

pub async fn orders_by_customer<S: OrderStore>(
    State(app): State<AppState<S>>,
    PathId(customer): PathId<CustomerId>,
    params: ListParams,
) -> Result<Response, ApiError> {
    let query = CustomerQuery { customer, limit: params.limit_or(Limit::CUSTOMER_DEFAULT), before: params.before_id };
    Ok(json_response(app.store.by_customer(query).await?.into_body()))
}

pub async fn orders_by_product<S: OrderStore>(
    State(app): State<AppState<S>>,
    PathId(product): PathId<ProductId>,
    params: ListParams,
) -> Result<Response, ApiError> {
    let query = ProductQuery { product, limit: params.limit_or(Limit::PRODUCT_DEFAULT) };
    Ok(json_response(app.store.by_product(query).await?.into_body()))
}

pub async fn create_order<S: OrderStore>(
    State(app): State<AppState<S>>,
    JsonBody(body): JsonBody,
) -> Result<impl IntoResponse, ApiError> {
    let new_order = NewOrder::parse(&body)?;
    let order = place_order(app.store.as_ref(), &app.ids, new_order).await?;
    let location = format!("/orders/{}", order.id);
    Ok((StatusCode::CREATED, [(header::LOCATION, location)], Json(order)))
}

pub async fn update_status<S: OrderStore>(
    State(app): State<AppState<S>>,
    PathId(id): PathId<OrderId>,
    JsonBody(body): JsonBody,
) -> Result<Json<Order>, ApiError> {
    let change = StatusChange::parse(&body)?;
    Ok(Json(app.store.update_status(id, change, Timestamp::now()).await?))
}

pub async fn healthz() -> Json<serde_json::Value> {
    Json(serde_json::json!({"status": "ok"}))
}

pub async fn readyz<S: OrderStore>(State(app): State<AppState<S>>) -> Result<Json<serde_json::Value>, ApiError> {
    app.store.ready().await?;
    Ok(Json(serde_json::json!({"status": "ready", "backend": app.store.backend()})))
}

pub async fn metrics<S: OrderStore>(State(app): State<AppState<S>>) -> impl IntoResponse {
    let text = app.metrics.render(app.store.backend(), app.store.pool_status());
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")], text)
}

pub async fn diagnostics<S: OrderStore>(State(app): State<AppState<S>>) -> Result<Json<serde_json::Value>, ApiError> {
    let mut report = app.store.diagnostics().await?;
    if let Some(object) = report.as_object_mut() {
        object.insert("pool".into(), serde_json::to_value(app.store.pool_status()).unwrap_or_default());
    }
    Ok(Json(report))
}

pub async fn openapi() -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "application/json")], crate::openapi::DOCUMENT)
}

pub async fn not_found() -> ApiError {
    ApiError::NotFound("no such path".into())
}

pub async fn method_not_allowed() -> ApiError {
    ApiError::MethodNotAllowed
}
