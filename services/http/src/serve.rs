//! Serving and draining. `Server::bind` takes the listener first (port 0 works, and tests learn the
//! port before any request); `Server::run` accepts connections and serves each with hyper until a
//! shutdown future resolves, then drains, so that every connection the kernel accepted before the
//! signal gets its answers:
//! 1. readiness turns 503 (`Draining`, seen by `/readyz`), and from now on every response carries
//!    `Connection: close`, so a busy keep-alive connection ends after its current response;
//! 2. the connections still waiting in the listen backlog are accepted (they completed their
//!    handshake before the signal; closing the listener would reset them), then the listener is
//!    closed and new connections are refused;
//! 3. a connection with no request in flight gets `IDLE_GRACE` to send a last one (a client may
//!    be writing it right now; closing under it would fail that request), then it is closed;
//! 4. the process returns once every connection is closed, at the latest after the drain timeout
//!    (`SHUTDOWN_TIMEOUT_MS`).
//!
//! `serve` is what both binaries call.

use crate::config::HttpConfig;
use crate::routes::app;
use axum::Router;
use axum::body::Body;
use axum::http::{HeaderValue, Request, header};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use orders_core::OrderStore;
use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinSet;
use tower::ServiceExt;

/// How long a connection with no request in flight may still send one once draining started.
pub const IDLE_GRACE: Duration = Duration::from_millis(1000);

/// Set once the server drains; handlers find it in the request's extensions (`/readyz` answers
/// 503 from then on).
#[derive(Debug, Clone, Default)]
pub struct Draining(Arc<AtomicBool>);

impl Draining {
    pub fn is_set(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    fn set(&self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

pub struct Server {
    listener: TcpListener,
    router: Router,
}

impl Server {
    pub async fn bind(addr: SocketAddr, router: Router) -> io::Result<Self> {
        let listener = TcpListener::bind(addr).await?;
        Ok(Self { listener, router })
    }

    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Serves until `shutdown` resolves, then drains (see the module notes), giving up on the
    /// connections still open `drain_timeout` after the signal.
    pub async fn run(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
        drain_timeout: Duration,
    ) -> io::Result<()> {
        let draining = Draining::default();
        let (stop, stopping) = watch::channel(false);
        let mut connections = JoinSet::new();
        let spawn = |connections: &mut JoinSet<()>, stream: TcpStream| {
            let connection = serve_connection(stream, self.router.clone(), draining.clone(), stopping.clone());
            connections.spawn(connection);
        };
        tokio::pin!(shutdown);
        loop {
            tokio::select! {
                () = &mut shutdown => break,
                accepted = self.listener.accept() => match accepted {
                    Ok((stream, _)) => spawn(&mut connections, stream),
                    // Out of file descriptors or similar: the connection stays in the backlog; wait
                    // instead of spinning.
                    Err(error) => {
                        tracing::warn!(%error, "accept failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                },
            }
            while connections.try_join_next().is_some() {}
        }

        let deadline = tokio::time::Instant::now() + drain_timeout;
        draining.set();
        let listener = self.listener.into_std()?;
        let mut from_backlog = 0;
        loop {
            match listener.accept() {
                Ok((stream, _)) => {
                    stream.set_nonblocking(true)?;
                    spawn(&mut connections, TcpStream::from_std(stream)?);
                    from_backlog += 1;
                }
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => break,
                Err(error) if error.kind() == io::ErrorKind::ConnectionAborted => {}
                Err(error) => {
                    tracing::warn!(%error, "accept failed while draining the backlog");
                    break;
                }
            }
        }
        drop(listener);
        tracing::info!(connections = connections.len(), from_backlog, "shutting down: draining connections");
        let _ = stop.send(true);

        let drained =
            tokio::time::timeout_at(deadline, async { while connections.join_next().await.is_some() {} }).await;
        if drained.is_err() {
            tracing::warn!(
                connections = connections.len(),
                millis = drain_timeout.as_millis() as u64,
                "connections still open after the drain timeout; closing them"
            );
            connections.shutdown().await;
        }
        Ok(())
    }
}

/// One connection: HTTP/1.1 with keep-alive until the drain starts; then it ends after its current
/// response, or after `IDLE_GRACE` if it has none in flight.
async fn serve_connection(stream: TcpStream, router: Router, draining: Draining, mut stopping: watch::Receiver<bool>) {
    let _ = stream.set_nodelay(true);
    let service = hyper::service::service_fn(move |request: Request<Incoming>| {
        let (router, draining) = (router.clone(), draining.clone());
        async move {
            let mut request = request.map(Body::new);
            request.extensions_mut().insert(draining.clone());
            let mut response = router.oneshot(request).await.unwrap_or_else(|never: Infallible| match never {});
            if draining.is_set() {
                response.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
            }
            Ok::<_, Infallible>(response)
        }
    });
    let connection = hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(stream), service);
    tokio::pin!(connection);
    tokio::select! {
        _ = connection.as_mut() => return,
        _ = stopping.wait_for(|stop| *stop) => {}
    }
    tokio::select! {
        _ = connection.as_mut() => return,
        () = tokio::time::sleep(IDLE_GRACE) => {}
    }
    connection.as_mut().graceful_shutdown();
    let _ = connection.await;
}

/// Builds the app over `store`, binds `BIND_ADDR` and serves until SIGTERM or Ctrl-C, then drains
/// for at most `SHUTDOWN_TIMEOUT_MS`.
pub async fn serve<S: OrderStore>(config: &HttpConfig, store: S) -> io::Result<()> {
    let backend = store.backend();
    let server = Server::bind(config.bind_addr, app(Arc::new(store), config)).await?;
    tracing::info!(backend, "listening on {}", server.local_addr()?);
    server.run(shutdown_signal(), config.shutdown_timeout()).await?;
    tracing::info!("stopped");
    Ok(())
}

/// Resolves on Ctrl-C or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = terminate => {},
    }
}
