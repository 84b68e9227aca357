//! The request headers of the write endpoints: `Prefer: return=minimal` (RFC 7240; the answer is
//! 201 with `Location` or 204, with an empty body and `Preference-Applied: return=minimal`) and
//! `Idempotency-Key` on `POST /orders` (a malformed one is 400).

use crate::error::ApiError;
use axum::extract::FromRequestParts;
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode, request::Parts};
use orders_core::IdempotencyKey;

pub const PREFERENCE_APPLIED: HeaderName = HeaderName::from_static("preference-applied");
pub const RETURN_MINIMAL: HeaderValue = HeaderValue::from_static("return=minimal");
const IDEMPOTENCY_KEY: &str = "idempotency-key";

/// Whether the client sent `Prefer: return=minimal`.
pub struct Prefer {
    pub minimal: bool,
}

impl<S: Send + Sync> FromRequestParts<S> for Prefer {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        Ok(Prefer { minimal: prefers_minimal(&parts.headers) })
    }
}

/// RFC 7240: preferences are comma-separated, names and these values case-insensitive, a value may
/// be quoted, parameters follow `;`, and only the first `return` preference counts.
fn prefers_minimal(headers: &HeaderMap) -> bool {
    let preferences = headers
        .get_all(axum::http::header::HeaderName::from_static("prefer"))
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','));
    for preference in preferences {
        let token = preference.split(';').next().unwrap_or("");
        let (name, value) = token.split_once('=').unwrap_or((token, ""));
        if name.trim().eq_ignore_ascii_case("return") {
            return value.trim().trim_matches('"').eq_ignore_ascii_case("minimal");
        }
    }
    false
}

/// The `Idempotency-Key` of the request, if it has one.
pub struct IdempotencyKeyHeader(pub Option<IdempotencyKey>);

impl<S: Send + Sync> FromRequestParts<S> for IdempotencyKeyHeader {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, ApiError> {
        let mut values = parts.headers.get_all(IDEMPOTENCY_KEY).iter();
        let Some(value) = values.next() else { return Ok(IdempotencyKeyHeader(None)) };
        let bad = |message: String| ApiError::IdempotencyKey { status: StatusCode::BAD_REQUEST, message };
        if values.next().is_some() {
            return Err(bad("must be sent once".into()));
        }
        let text = value.to_str().map_err(|_| bad("must be visible ASCII characters without spaces".into()))?;
        IdempotencyKey::parse(text).map(|key| IdempotencyKeyHeader(Some(key))).map_err(bad)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prefer(values: &[&str]) -> bool {
        let mut headers = HeaderMap::new();
        for value in values {
            headers.append("prefer", HeaderValue::from_str(value).expect("header value"));
        }
        prefers_minimal(&headers)
    }

    #[test]
    fn return_minimal_is_found_among_other_preferences_in_any_case() {
        assert!(prefer(&["return=minimal"]));
        assert!(prefer(&["respond-async, RETURN = \"Minimal\"; foo=bar"]));
        assert!(prefer(&["wait=10", "return=minimal"]));
        assert!(!prefer(&[]));
        assert!(!prefer(&["return=representation"]));
        assert!(!prefer(&["return=representation, return=minimal"]), "the first return preference counts");
        assert!(!prefer(&["return-minimal", "minimal"]));
    }
}
