//! One short handler per endpoint: extract, parse, one store call, respond. Generic over the
//! store so the three services (and the in-memory test store) share every line.

use crate::admission::Admission;
use crate::draining::Draining;
use crate::error::{ApiError, Shed};
use crate::extract::{JsonBody, ListParams, PathId};
use crate::metrics::Metrics;
use crate::shedding::Shedding;
use crate::write_headers::{IdempotencyKeyHeader, PREFERENCE_APPLIED, Prefer, RETURN_MINIMAL};
use axum::extract::State;
use axum::http::{HeaderName, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use orders_core::{
    CustomerId, CustomerQuery, IdGenerator, Limit, ListBytes, NewOrder, OrderId, OrderListJson, OrderStore, ProductId,
    ProductQuery, Returning, StatusChange, Timestamp, place_order,
};
use std::sync::Arc;

/// What every handler can reach: the store, the id generator, the metrics registry, the count
/// of shed requests, the count of requests in flight, the turn of `/diagnostics`, and the bound on
/// a list answer's bytes.
pub struct AppState<S> {
    pub store: Arc<S>,
    pub ids: Arc<IdGenerator>,
    pub metrics: Arc<Metrics>,
    pub shedding: Arc<Shedding>,
    pub admission: Arc<Admission>,
    /// One `/diagnostics` report at a time (callers queue in order): each report holds one
    /// database connection at a time, so however many clients ask, ordinary requests keep all
    /// but one of the pool.
    pub diagnostics: Arc<tokio::sync::Mutex<()>>,
    /// `MAX_LIST_BYTES`.
    pub max_list_bytes: ListBytes,
}

impl<S> Clone for AppState<S> {
    fn clone(&self) -> Self {
        Self {
            store: self.store.clone(),
            ids: self.ids.clone(),
            metrics: self.metrics.clone(),
            shedding: self.shedding.clone(),
            admission: self.admission.clone(),
            diagnostics: self.diagnostics.clone(),
            max_list_bytes: self.max_list_bytes,
        }
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

/// Says whether a list answer was cut at `MAX_LIST_BYTES` before its `limit` (more orders may follow).
pub const LIST_TRUNCATED: HeaderName = HeaderName::from_static("list-truncated");

/// A list's 200; one cut at `MAX_LIST_BYTES` carries `List-Truncated: true`.
fn list_response(list: OrderListJson) -> Response {
    let truncated = list.is_cut();
    let mut response = json_response(list.into_body());
    if truncated {
        response.headers_mut().insert(LIST_TRUNCATED, HeaderValue::from_static("true"));
    }
    response
}

/// Newest first; a list cut at `MAX_LIST_BYTES` continues with `before_id` = the last id listed.
pub async fn orders_by_customer<S: OrderStore>(
    State(app): State<AppState<S>>,
    PathId(customer): PathId<CustomerId>,
    params: ListParams,
) -> Result<Response, ApiError> {
    let limit = params.limit_or(Limit::CUSTOMER_DEFAULT);
    let query = CustomerQuery { customer, limit, before: params.before_id, max_bytes: app.max_list_bytes };
    Ok(list_response(app.store.by_customer(query).await?))
}

pub async fn orders_by_product<S: OrderStore>(
    State(app): State<AppState<S>>,
    PathId(product): PathId<ProductId>,
    params: ListParams,
) -> Result<Response, ApiError> {
    let query = ProductQuery { product, limit: params.limit_or(Limit::PRODUCT_DEFAULT), max_bytes: app.max_list_bytes };
    Ok(list_response(app.store.by_product(query).await?))
}

/// 201 with `Location` and the order; a request repeated with its `Idempotency-Key` gets the same
/// answer as the first one.
pub async fn create_order<S: OrderStore>(
    State(app): State<AppState<S>>,
    prefer: Prefer,
    IdempotencyKeyHeader(key): IdempotencyKeyHeader,
    JsonBody(body): JsonBody,
) -> Result<Response, ApiError> {
    let new_order = NewOrder::parse(&body)?;
    let placed = place_order(app.store.as_ref(), &app.ids, new_order, key.as_ref()).await?;
    let location = (header::LOCATION, format!("/orders/{}", placed.order().id));
    if prefer.minimal {
        return Ok((StatusCode::CREATED, [location, (PREFERENCE_APPLIED, minimal())]).into_response());
    }
    Ok((StatusCode::CREATED, [location], json_response(placed.into_json().into_bytes())).into_response())
}

/// 200 with the updated order, or 204 with `Prefer: return=minimal` (then the document is not even
/// read back from the database).
pub async fn update_status<S: OrderStore>(
    State(app): State<AppState<S>>,
    PathId(id): PathId<OrderId>,
    prefer: Prefer,
    JsonBody(body): JsonBody,
) -> Result<Response, ApiError> {
    let change = StatusChange::parse(&body)?;
    let returning = if prefer.minimal { Returning::Nothing } else { Returning::Document };
    match app.store.update_status(id, change, Timestamp::now(), returning).await? {
        Some(order) => Ok(json_response(order.into_bytes())),
        None if prefer.minimal => Ok((StatusCode::NO_CONTENT, [(PREFERENCE_APPLIED, RETURN_MINIMAL)]).into_response()),
        None => Err(ApiError::Internal("the store returned no document".into())),
    }
}

fn minimal() -> String {
    RETURN_MINIMAL.to_str().unwrap_or("return=minimal").to_owned()
}

pub async fn healthz() -> Json<serde_json::Value> {
    Json(serde_json::json!({"status": "ok"}))
}

/// 503 once the server drains (so load balancers stop sending), else whether the database answers.
pub async fn readyz<S: OrderStore>(
    State(app): State<AppState<S>>,
    draining: Option<Extension<Draining>>,
) -> Result<Json<serde_json::Value>, ApiError> {
    if draining.is_some_and(|Extension(draining)| draining.is_set()) {
        return Err(ApiError::unavailable(Shed::ShuttingDown, "draining"));
    }
    app.store.ready().await?;
    Ok(Json(serde_json::json!({"status": "ready", "backend": app.store.backend()})))
}

pub async fn metrics<S: OrderStore>(State(app): State<AppState<S>>) -> impl IntoResponse {
    let mut text = app.metrics.render(app.store.backend(), app.store.pool_status());
    text.push_str(&app.shedding.render());
    text.push_str(&app.admission.render());
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")], text)
}

/// The store's report plus what the HTTP layer knows: the pool's figures and the runtime the
/// service runs on (`WORKER_THREADS` as tokio applied it). Reports are read one at a time.
pub async fn diagnostics<S: OrderStore>(State(app): State<AppState<S>>) -> Result<Json<serde_json::Value>, ApiError> {
    let turn = app.diagnostics.lock().await;
    let mut report = app.store.diagnostics().await?;
    drop(turn);
    if let Some(object) = report.as_object_mut() {
        object.insert("pool".into(), serde_json::to_value(app.store.pool_status()).unwrap_or_default());
        object.insert("runtime".into(), serde_json::to_value(crate::runtime::current()).unwrap_or_default());
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
