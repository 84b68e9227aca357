//! `ApiError`: every failure a client can see, and the single place that maps each to its status
//! code and the JSON shape `{"error":{"code","message","details"}}` of DESIGN.md. Internal causes
//! are logged here and never sent to the client.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use orders_core::StoreError;
use orders_core::validate::{BodyError, FieldError};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApiError {
    BadRequest(String),
    NotFound(String),
    MethodNotAllowed,
    Conflict(String),
    PayloadTooLarge,
    UnsupportedMediaType,
    Validation(Vec<FieldError>),
    /// The database is down, the pool is exhausted or the request timed out.
    Unavailable(String),
    /// A bug or an unexpected database error; the string is logged, not shown.
    Internal(String),
}

impl ApiError {
    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::BadRequest(_) => StatusCode::BAD_REQUEST,
            ApiError::NotFound(_) => StatusCode::NOT_FOUND,
            ApiError::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            ApiError::Conflict(_) => StatusCode::CONFLICT,
            ApiError::PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ApiError::Validation(_) => StatusCode::UNPROCESSABLE_ENTITY,
            ApiError::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
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
            ApiError::Unavailable(_) => "unavailable",
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
            ApiError::Unavailable(_) => "the database is unavailable; retry later".into(),
            ApiError::Internal(_) => "internal error".into(),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        match &self {
            ApiError::Internal(cause) => tracing::error!(%cause, "internal error"),
            ApiError::Unavailable(cause) => tracing::warn!(%cause, "unavailable"),
            _ => {}
        }
        let details = match &self {
            ApiError::Validation(errors) => serde_json::to_value(errors).unwrap_or_default(),
            _ => serde_json::Value::Array(Vec::new()),
        };
        let body = serde_json::json!({
            "error": {"code": self.code(), "message": self.message(), "details": details}
        });
        let mut response = (self.status(), axum::Json(body)).into_response();
        if matches!(self, ApiError::Unavailable(_)) {
            response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        }
        response
    }
}

impl From<StoreError> for ApiError {
    fn from(error: StoreError) -> Self {
        match error {
            StoreError::NotFound => ApiError::NotFound("order not found".into()),
            StoreError::Conflict(message) => ApiError::Conflict(message),
            StoreError::Unavailable(cause) => ApiError::Unavailable(cause),
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
