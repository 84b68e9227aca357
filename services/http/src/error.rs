//! `ApiError`: every failure a client can see, and the single place that maps each to its status
//! code and the JSON shape `{"error":{"code","message","details"}}` of docs/api.md. Internal causes
//! are logged here and never sent to the client. A 503 carries its `Shed` reason in the
//! response's extensions, where `shedding` counts it for `/metrics`: shed requests are counted,
//! not logged one line each (under overload that would be thousands of blocking writes a second).

use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use orders_core::StoreError;
use orders_core::validate::{BodyError, FieldErrors};
use std::time::Duration;

/// Why a request got 503; the label of `http_requests_shed_total` in `/metrics`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Shed {
    /// The database could not be reached (down, restarting, refusing connections).
    DatabaseUnavailable,
    /// No database connection became free within `POOL_TIMEOUT_MS`.
    PoolTimeout,
    /// The request ran longer than `REQUEST_TIMEOUT_MS`.
    RequestTimeout,
    /// The service is shutting down (readiness during the drain).
    ShuttingDown,
    /// `MAX_IN_FLIGHT` requests were already being handled.
    InFlightLimit,
}

impl Shed {
    pub const ALL: [Shed; 5] =
        [Shed::DatabaseUnavailable, Shed::PoolTimeout, Shed::RequestTimeout, Shed::ShuttingDown, Shed::InFlightLimit];

    pub fn as_str(self) -> &'static str {
        match self {
            Shed::DatabaseUnavailable => "database_unavailable",
            Shed::PoolTimeout => "pool_timeout",
            Shed::RequestTimeout => "request_timeout",
            Shed::ShuttingDown => "shutting_down",
            Shed::InFlightLimit => "in_flight_limit",
        }
    }

    fn message(self) -> &'static str {
        match self {
            Shed::DatabaseUnavailable => "the database is unavailable; retry later",
            Shed::PoolTimeout => "the service is overloaded (no database connection free in time); retry later",
            Shed::RequestTimeout => "the request took longer than REQUEST_TIMEOUT_MS; retry later",
            Shed::ShuttingDown => "the service is shutting down",
            Shed::InFlightLimit => "the service is overloaded (MAX_IN_FLIGHT requests in progress); retry later",
        }
    }
}

/// The detail of a 503 whose write may or may not have been applied.
pub const OUTCOME_UNKNOWN: &str = "the outcome of this write is unknown: it may or may not have been applied; \
     retry with the same Idempotency-Key (or the same id), which cannot create a second order";

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApiError {
    BadRequest(String),
    NotFound(String),
    MethodNotAllowed,
    Conflict(String),
    PayloadTooLarge,
    UnsupportedMediaType,
    /// A body with bad fields: the first `FieldErrors::MAX_LISTED` become one detail each, and one
    /// more detail says how many were not listed.
    Validation(FieldErrors),
    /// The database is down, the pool is exhausted or the request timed out; `outcome_unknown`
    /// when a write was sent and its answer lost. `cause` is logged at debug level, not sent.
    Unavailable {
        reason: Shed,
        outcome_unknown: bool,
        cause: String,
    },
    /// The `Idempotency-Key` header is malformed (400) or names another request (422).
    IdempotencyKey {
        status: StatusCode,
        message: String,
    },
    /// A bug or an unexpected database error; the string is logged, not shown.
    Internal(String),
}

impl ApiError {
    pub fn unavailable(reason: Shed, cause: impl Into<String>) -> Self {
        ApiError::Unavailable { reason, outcome_unknown: false, cause: cause.into() }
    }

    /// A request that ran past `limit`: for a method that writes, whether the write happened is
    /// unknown.
    pub fn timed_out(limit: Duration, method: &Method) -> Self {
        ApiError::Unavailable {
            reason: Shed::RequestTimeout,
            outcome_unknown: !method.is_safe(),
            cause: format!("request took longer than {} ms", limit.as_millis()),
        }
    }

    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::BadRequest(_) => StatusCode::BAD_REQUEST,
            ApiError::NotFound(_) => StatusCode::NOT_FOUND,
            ApiError::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            ApiError::Conflict(_) => StatusCode::CONFLICT,
            ApiError::PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ApiError::Validation(_) => StatusCode::UNPROCESSABLE_ENTITY,
            ApiError::Unavailable { .. } => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::IdempotencyKey { status, .. } => *status,
            ApiError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    pub fn code(&self) -> &'static str {
        match self {
            ApiError::BadRequest(_) => "bad_request",
            ApiError::NotFound(_) => "not_found",
            ApiError::MethodNotAllowed => "method_not_allowed",
            ApiError::Conflict(_) => "conflict",
            ApiError::PayloadTooLarge => "payload_too_large",
            ApiError::UnsupportedMediaType => "unsupported_media_type",
            ApiError::Validation(_) => "validation_failed",
            ApiError::Unavailable { .. } => "unavailable",
            ApiError::IdempotencyKey { status, .. } if *status == StatusCode::BAD_REQUEST => "bad_request",
            ApiError::IdempotencyKey { .. } => "validation_failed",
            ApiError::Internal(_) => "internal",
        }
    }

    fn message(&self) -> String {
        match self {
            ApiError::BadRequest(message) | ApiError::NotFound(message) | ApiError::Conflict(message) => {
                message.clone()
            }
            ApiError::MethodNotAllowed => "method not allowed for this path".into(),
            ApiError::PayloadTooLarge => "request body is larger than MAX_BODY_BYTES".into(),
            ApiError::UnsupportedMediaType => "request body must be JSON (Content-Type: application/json)".into(),
            ApiError::Validation(_) => "request body failed validation".into(),
            ApiError::Unavailable { outcome_unknown: true, .. } => {
                "the database did not confirm the write; its outcome is unknown".into()
            }
            ApiError::Unavailable { reason, .. } => reason.message().into(),
            ApiError::IdempotencyKey { status, .. } if *status == StatusCode::BAD_REQUEST => {
                "the Idempotency-Key header is not valid".into()
            }
            ApiError::IdempotencyKey { .. } => "the Idempotency-Key was used for a different request".into(),
            ApiError::Internal(_) => "internal error".into(),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        match &self {
            ApiError::Internal(cause) => tracing::error!(%cause, "internal error"),
            ApiError::Unavailable { cause, .. } => tracing::debug!(%cause, "unavailable"),
            _ => {}
        }
        let details = match &self {
            ApiError::Validation(errors) => validation_details(errors),
            ApiError::IdempotencyKey { message, .. } => {
                serde_json::json!([{"field": "Idempotency-Key", "message": message}])
            }
            ApiError::Unavailable { outcome_unknown: true, .. } => serde_json::json!([{"message": OUTCOME_UNKNOWN}]),
            _ => serde_json::Value::Array(Vec::new()),
        };
        let body = serde_json::json!({
            "error": {"code": self.code(), "message": self.message(), "details": details}
        });
        let mut response = (self.status(), axum::Json(body)).into_response();
        if let ApiError::Unavailable { reason, .. } = self {
            response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
            response.extensions_mut().insert(reason);
        }
        response
    }
}

/// One `{"field","message"}` per listed bad field, then, if some were only counted, one more on
/// `body` saying how many.
fn validation_details(errors: &FieldErrors) -> serde_json::Value {
    let mut details = serde_json::to_value(errors.listed()).unwrap_or_default();
    if errors.unlisted() > 0
        && let Some(list) = details.as_array_mut()
    {
        let message = format!(
            "{} more bad fields not listed (only the first {} are)",
            errors.unlisted(),
            FieldErrors::MAX_LISTED
        );
        list.push(serde_json::json!({"field": "body", "message": message}));
    }
    details
}

impl From<StoreError> for ApiError {
    fn from(error: StoreError) -> Self {
        match error {
            StoreError::NotFound => ApiError::NotFound("order not found".into()),
            StoreError::Conflict(message) => ApiError::Conflict(message),
            StoreError::Unavailable(cause) => ApiError::unavailable(Shed::DatabaseUnavailable, cause),
            StoreError::Busy(cause) => ApiError::unavailable(Shed::PoolTimeout, cause),
            StoreError::OutcomeUnknown(cause) => {
                ApiError::Unavailable { reason: Shed::DatabaseUnavailable, outcome_unknown: true, cause }
            }
            StoreError::KeyReused => ApiError::IdempotencyKey {
                status: StatusCode::UNPROCESSABLE_ENTITY,
                message: format!(
                    "was used within the last {} hours for a request with a different body",
                    orders_core::idempotency::RETENTION_MILLIS / 3_600_000
                ),
            },
            StoreError::Internal(cause) => ApiError::Internal(cause),
        }
    }
}

impl From<BodyError> for ApiError {
    fn from(error: BodyError) -> Self {
        match error {
            BodyError::Malformed(message) => {
                ApiError::BadRequest(format!("request body is not well-formed JSON: {message}"))
            }
            BodyError::Invalid(errors) => ApiError::Validation(errors),
        }
    }
}
