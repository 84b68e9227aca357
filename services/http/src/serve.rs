//! Serving and draining, what both binaries call. `Server::bind` takes the listener first (port 0
//! works; tests learn the port before any request); `Server::run` serves each connection with
//! hyper, held to `ConnectionLimits` (module `connection`: header and idle timeouts, at most
//! `MAX_CONNECTIONS` open, a 503 beyond), until a shutdown future resolves. Then it drains, so
//! every connection the kernel accepted before the signal gets its answers: readiness turns 503
//! and every response carries `Connection: close`; the backlog is accepted before the listener
//! closes (closing it would reset those handshakes); a connection with nothing in flight gets
//! `IDLE_GRACE` for a last request; the process returns once all are closed, at the latest after
//! `SHUTDOWN_TIMEOUT_MS` (docs/configuration.md).

use crate::config::HttpConfig;
use crate::connection::{Activity, ConnectionLimits, Watched};
use crate::draining::Draining;
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
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinSet;
use tower::ServiceExt;

/// How long a connection with no request in flight may still send one once draining started.
pub const IDLE_GRACE: Duration = Duration::from_millis(1000);

pub struct Server {
    listener: TcpListener,
    router: Router,
    limits: ConnectionLimits,
}

impl Server {
    /// Binds `addr`, with the default `ConnectionLimits` until `limits` sets others.
    pub async fn bind(addr: SocketAddr, router: Router) -> io::Result<Self> {
        let listener = TcpListener::bind(addr).await?;
        Ok(Self { listener, router, limits: ConnectionLimits::default() })
    }

    pub fn limits(self, limits: ConnectionLimits) -> Self {
        Self { limits, ..self }
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
        let limits = self.limits;
        let spawn = |connections: &mut JoinSet<()>, stream: TcpStream| {
            while connections.try_join_next().is_some() {}
            if connections.len() >= limits.max_connections {
                refuse(&stream);
                return;
            }
            // The connection's clock starts now, not when its task first runs.
            let activity = Arc::new(Activity::new());
            let connection =
                serve_connection(stream, activity, self.router.clone(), limits, draining.clone(), stopping.clone());
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

/// The body of the answer to a connection beyond `MAX_CONNECTIONS`.
const REFUSAL: &str = r#"{"error":{"code":"unavailable","message":"too many open connections (MAX_CONNECTIONS); retry later","details":[]}}"#;

/// Answers 503 to a connection beyond `MAX_CONNECTIONS`, without reading its request, if its
/// socket takes the bytes at once; the caller then closes it.
fn refuse(stream: &TcpStream) {
    tracing::debug!("connection refused: MAX_CONNECTIONS connections are open");
    let answer = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nretry-after: 1\r\n\
         connection: close\r\ncontent-length: {}\r\n\r\n{REFUSAL}",
        REFUSAL.len()
    );
    let _ = stream.try_write(answer.as_bytes());
}

/// One connection: HTTP/1.1 with keep-alive, held to `limits`, until the drain starts; then it
/// ends after its current response, or after `IDLE_GRACE` if it has none in flight.
async fn serve_connection(
    stream: TcpStream,
    activity: Arc<Activity>,
    router: Router,
    limits: ConnectionLimits,
    draining: Draining,
    mut stopping: watch::Receiver<bool>,
) {
    let _ = stream.set_nodelay(true);
    let socket = Watched::new(stream, activity.clone());
    let requests = activity.clone();
    let service = hyper::service::service_fn(move |request: Request<Incoming>| {
        let (router, draining) = (router.clone(), draining.clone());
        let in_flight = requests.request_started();
        async move {
            let _in_flight = in_flight;
            let mut request = request.map(Body::new);
            request.extensions_mut().insert(draining.clone());
            let mut response = router.oneshot(request).await.unwrap_or_else(|never: Infallible| match never {});
            if draining.is_set() {
                response.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
            }
            Ok::<_, Infallible>(response)
        }
    });
    let connection = hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(socket), service);
    tokio::pin!(connection);
    let check = tokio::time::sleep(limits.header_read_timeout);
    tokio::pin!(check);
    loop {
        tokio::select! {
            _ = connection.as_mut() => return,
            _ = stopping.wait_for(|stop| *stop) => break,
            () = check.as_mut() => match activity.next_check(&limits, std::time::Instant::now()) {
                Ok(next) => check.as_mut().reset(next.into()),
                Err(expired) => {
                    // Dropping the connection closes the socket; no request is in flight.
                    tracing::debug!(?expired, "connection closed");
                    return;
                }
            },
        }
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
    let server = Server::bind(config.bind_addr, app(Arc::new(store), config)).await?.limits(config.connection_limits());
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
