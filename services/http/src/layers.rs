//! `Observe`: the one middleware every request passes through, applied to every route and the
//! fallback after routing (so the matched route template is in the request). It admits the
//! request or sheds it at once (`MAX_IN_FLIGHT`, `admission`; the place is kept in the response
//! body until hyper has taken all of it, `held_body`), sets the body
//! limit (`MAX_BODY_BYTES`), turns a request that runs past `REQUEST_TIMEOUT_MS` into a 503 and a
//! panicking handler into a 500 with the usual error shape, then records the latency histogram
//! (labelled `/orders/{id}`, never one series per id; `unmatched` for unknown paths), counts a
//! shed request by its reason (`Shed`, timed-out requests included) and writes a debug log line. One hand-written layer instead of a stack of `from_fn` layers: every layer axum
//! stacks on a route boxes the service and its future again on every request.

use crate::admission::Admission;
use crate::error::{ApiError, Shed};
use crate::held_body::HeldBody;
use crate::metrics::{Metrics, method_label};
use crate::shedding::Shedding;
use axum::body::Body;
use axum::extract::{DefaultBodyLimit, MatchedPath, Request};
use axum::response::{IntoResponse, Response};
use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use std::any::Any;
use std::convert::Infallible;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tower::{Layer, Service};

#[derive(Debug, Clone)]
pub struct ObserveLayer {
    pub metrics: Arc<Metrics>,
    pub shedding: Arc<Shedding>,
    pub admission: Arc<Admission>,
    pub time_limit: Duration,
    pub body_limit: usize,
}

/// Routes every request may use however many others are in flight: they touch no database and
/// read no body, and are what an operator needs to see an overload.
fn always_admitted(route: Option<&MatchedPath>) -> bool {
    route.is_some_and(|route| matches!(route.as_str(), "/healthz" | "/metrics"))
}

impl<S> Layer<S> for ObserveLayer {
    type Service = Observe<S>;

    fn layer(&self, inner: S) -> Observe<S> {
        Observe { inner, settings: self.clone() }
    }
}

#[derive(Debug, Clone)]
pub struct Observe<S> {
    inner: S,
    settings: ObserveLayer,
}

impl<S> Service<Request> for Observe<S>
where
    S: Service<Request, Response = Response, Error = Infallible>,
    S::Future: Send + 'static,
{
    type Response = Response;
    type Error = Infallible;
    type Future = BoxFuture<'static, Result<Response, Infallible>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: Request) -> Self::Future {
        let started = Instant::now();
        DefaultBodyLimit::max(self.settings.body_limit).apply(&mut request);
        let route = request.extensions().get::<MatchedPath>().cloned();
        let method = request.method().clone();
        let metrics = self.settings.metrics.clone();
        let shedding = self.settings.shedding.clone();
        let time_limit = self.settings.time_limit;
        let admitted = if always_admitted(route.as_ref()) {
            Ok(None)
        } else {
            self.settings.admission.try_admit().ok_or(()).map(Some)
        };
        let called = admitted.is_ok().then(|| std::panic::catch_unwind(AssertUnwindSafe(|| self.inner.call(request))));
        Box::pin(async move {
            let place = admitted.ok().flatten();
            let response = match called {
                None => ApiError::unavailable(Shed::InFlightLimit, "MAX_IN_FLIGHT requests in flight").into_response(),
                Some(called) => {
                    let outcome = match called {
                        Ok(future) => AssertUnwindSafe(tokio::time::timeout(time_limit, future)).catch_unwind().await,
                        Err(panic) => Err(panic),
                    };
                    match outcome {
                        Ok(Ok(Ok(response))) => response,
                        Ok(Ok(Err(infallible))) => match infallible {},
                        Ok(Err(_elapsed)) => ApiError::timed_out(time_limit, &method).into_response(),
                        Err(panic) => panic_response(panic),
                    }
                }
            };
            if let Some(reason) = response.extensions().get::<Shed>() {
                shedding.record(*reason);
            }
            let elapsed = started.elapsed();
            let route = route.as_ref().map_or("unmatched", MatchedPath::as_str);
            let status = response.status().as_u16();
            metrics.record(route, method_label(&method), status, elapsed);
            tracing::debug!(%method, route, status, micros = elapsed.as_micros() as u64, "request");
            // The place is given back once hyper has taken the whole body, not now (`held_body`).
            Ok(match place {
                Some(place) => response.map(|body| Body::new(HeldBody::new(body, place))),
                None => response,
            })
        })
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
