//! Serving: `Server::bind` takes the listener first (port 0 works, and tests learn the port before
//! any request), `Server::run` serves until a shutdown future resolves, then drains in-flight
//! requests for at most `DRAIN_TIMEOUT`. `serve` is what both binaries call.

use crate::config::HttpConfig;
use crate::routes::app;
use axum::Router;
use axum::serve::ListenerExt;
use orders_core::OrderStore;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::Notify;

/// How long in-flight requests may take to finish after SIGTERM or Ctrl-C.
pub const DRAIN_TIMEOUT: Duration = Duration::from_secs(10);

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

    /// Serves until `shutdown` resolves, then stops accepting and waits for in-flight requests,
    /// giving up after `drain_timeout`.
    pub async fn run(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
        drain_timeout: Duration,
    ) -> io::Result<()> {
        let draining = Arc::new(Notify::new());
        let signal_draining = draining.clone();
        // TCP_NODELAY: a response goes out as soon as it is written, never held back by Nagle.
        let listener = self.listener.tap_io(|stream| {
            if let Err(error) = stream.set_nodelay(true) {
                tracing::debug!(%error, "could not set TCP_NODELAY on an accepted connection");
            }
        });
        let serving = axum::serve(listener, self.router).with_graceful_shutdown(async move {
            shutdown.await;
            tracing::info!("shutting down: draining in-flight requests");
            signal_draining.notify_one();
        });
        tokio::select! {
            result = serving => result,
            () = async { draining.notified().await; tokio::time::sleep(drain_timeout).await } => {
                tracing::warn!(seconds = drain_timeout.as_secs(), "requests still running after the drain timeout; exiting");
                Ok(())
            }
        }
    }
}

/// Builds the app over `store`, binds `BIND_ADDR` and serves until SIGTERM or Ctrl-C.
pub async fn serve<S: OrderStore>(config: &HttpConfig, store: S) -> io::Result<()> {
    let backend = store.backend();
    let server = Server::bind(config.bind_addr, app(Arc::new(store), config)).await?;
    tracing::info!(backend, "listening on {}", server.local_addr()?);
    server.run(shutdown_signal(), DRAIN_TIMEOUT).await?;
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
