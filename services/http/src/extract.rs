//! Request extractors whose rejections are `ApiError`s: `JsonBody` (415 for a non-JSON content
//! type, 413 past the body limit, 400 for an unreadable body), `PathId` (400 unless the path
//! segment is an id from 1 to 2^53-1) and `ListParams` (400 for a bad `limit` or `before_id`;
//! unknown query parameters are ignored). Ids and limits are plain digits (no sign); a rejected
//! value is repeated in the message cut to `orders_core::echo`'s bound.

use crate::error::ApiError;
use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Path, Query, Request};
use axum::http::{HeaderMap, StatusCode, header, request::Parts};
use orders_core::{Limit, OrderId, echo};

/// The raw bytes of a request body that declared itself JSON.
pub struct JsonBody(pub Bytes);

impl<S: Send + Sync> FromRequest<S> for JsonBody {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, ApiError> {
        if !is_json(request.headers()) {
            return Err(ApiError::UnsupportedMediaType);
        }
        match Bytes::from_request(request, state).await {
            Ok(bytes) => Ok(JsonBody(bytes)),
            Err(rejection) if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE => Err(ApiError::PayloadTooLarge),
            Err(rejection) => {
                Err(ApiError::BadRequest(format!("could not read the request body: {}", rejection.body_text())))
            }
        }
    }
}

/// `application/json` or any `application/*+json`, with or without parameters.
fn is_json(headers: &HeaderMap) -> bool {
    let Some(value) = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()) else {
        return false;
    };
    let essence = value.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
    match essence.split_once('/') {
        Some(("application", subtype)) => subtype == "json" || (subtype.ends_with("+json") && subtype.len() > 5),
        _ => false,
    }
}

/// The single id in the path, parsed into `T` (an id newtype).
pub struct PathId<T>(pub T);

impl<S: Send + Sync, T: TryFrom<u64, Error = String>> FromRequestParts<S> for PathId<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        let Path(raw) = Path::<String>::from_request_parts(parts, state)
            .await
            .map_err(|rejection| ApiError::BadRequest(echo(&rejection.body_text())))?;
        parse_id(&raw).map(PathId).map_err(|reason| ApiError::BadRequest(format!("path id `{}` {reason}", echo(&raw))))
    }
}

/// Digits only (no sign, no spaces), then the type's own range check.
pub fn parse_id<T: TryFrom<u64, Error = String>>(raw: &str) -> Result<T, String> {
    let value = parse_digits(raw).ok_or_else(|| "must be an integer from 1 to 9007199254740991".to_string())?;
    T::try_from(value)
}

/// A number written as ASCII digits only: `str::parse` would also take a leading `+`.
fn parse_digits(raw: &str) -> Option<u64> {
    if raw.is_empty() || !raw.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    raw.parse().ok()
}

/// `limit` and `before_id` of the list endpoints, checked; other parameters are ignored.
pub struct ListParams {
    limit: Option<Limit>,
    pub before_id: Option<OrderId>,
}

impl ListParams {
    pub fn limit_or(&self, default: Limit) -> Limit {
        self.limit.unwrap_or(default)
    }
}

impl<S: Send + Sync> FromRequestParts<S> for ListParams {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        let Query(pairs) = Query::<Vec<(String, String)>>::from_request_parts(parts, state)
            .await
            .map_err(|rejection| ApiError::BadRequest(echo(&rejection.body_text())))?;
        let find = |name: &str| pairs.iter().find(|(key, _)| key == name).map(|(_, value)| value.as_str());
        let limit = find("limit")
            .map(|raw| {
                let value = parse_digits(raw).ok_or_else(|| {
                    ApiError::BadRequest(format!("limit `{}` must be an integer from 1 to 100", echo(raw)))
                })?;
                Limit::new(value).map_err(ApiError::BadRequest)
            })
            .transpose()?;
        let before_id = find("before_id")
            .map(|raw| {
                parse_id::<OrderId>(raw)
                    .map_err(|reason| ApiError::BadRequest(format!("before_id `{}` {reason}", echo(raw))))
            })
            .transpose()?;
        Ok(ListParams { limit, before_id })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn with_content_type(value: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_str(value).unwrap());
        headers
    }

    #[test]
    fn json_content_types_are_recognised_with_parameters_and_suffixes() {
        for ok in
            ["application/json", "application/json; charset=utf-8", "Application/JSON", "application/merge-patch+json"]
        {
            assert!(is_json(&with_content_type(ok)), "{ok}");
        }
        for bad in ["text/plain", "application/xml", "application/jsonx", "application/+json", "json", "text/json"] {
            assert!(!is_json(&with_content_type(bad)), "{bad}");
        }
        assert!(!is_json(&HeaderMap::new()), "no content type");
    }

    #[test]
    fn path_ids_are_plain_digits_in_range() {
        assert_eq!(parse_id::<OrderId>("42").map(OrderId::get), Ok(42));
        assert_eq!(parse_id::<OrderId>("9007199254740991").map(OrderId::get), Ok(9_007_199_254_740_991));
        for bad in ["", "0", "-1", "+1", "1.0", "abc", " 1", "9007199254740992", "99999999999999999999999"] {
            assert!(parse_id::<OrderId>(bad).is_err(), "{bad}");
        }
    }
}
