//! The connection budget of the MongoDB service and its figures for `/metrics` and `/diagnostics`.
//!
//! The driver's pool has no wait-queue timeout (it ignores `waitQueueTimeoutMS`), so a request
//! would queue inside it until the request timeout. `ConnectionGate` puts a semaphore of
//! `MONGO_POOL_SIZE` permits in front of the driver: every operation holds a permit, a request
//! that gets none within `POOL_TIMEOUT_MS` is answered 503, and the driver never sees more
//! operations than it has connections, so it never queues. The same permits give exact figures:
//! `in_use` and `waiting` are counted by guards that are dropped with the request, also when a
//! request is cancelled mid-wait (a timed-out or abandoned request), where the driver's own
//! checkout events never balance.
//!
//! Open connections are still the driver's own count, from its pool events (CMAP: connection
//! created and closed), summed over the pools of all servers the client talks to. The driver's
//! monitoring connections (heartbeats) are not pooled and not counted.

use mongodb::event::EventHandler;
use mongodb::event::cmap::CmapEvent;
use orders_core::{PoolStatus, StoreError};
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::time::Duration;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

#[derive(Debug)]
pub struct ConnectionGate {
    permits: Arc<Semaphore>,
    size: usize,
    timeout: Duration,
    waiting: Arc<AtomicUsize>,
    /// Connections created and not yet closed (including ones still handshaking).
    open: Arc<AtomicI64>,
}

/// One operation's right to a connection; given back when dropped.
#[derive(Debug)]
pub struct Permit(#[allow(dead_code)] OwnedSemaphorePermit);

/// Counts a request as waiting for as long as it lives (dropped on success, timeout or cancel).
struct Waiting(Arc<AtomicUsize>);

impl Drop for Waiting {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl ConnectionGate {
    /// `size` permits (`MONGO_POOL_SIZE`), each waited for at most `timeout` (`POOL_TIMEOUT_MS`).
    pub fn new(size: usize, timeout: Duration) -> Self {
        Self {
            permits: Arc::new(Semaphore::new(size)),
            size,
            timeout,
            waiting: Arc::new(AtomicUsize::new(0)),
            open: Arc::new(AtomicI64::new(0)),
        }
    }

    /// A permit at once when one is free, else within `POOL_TIMEOUT_MS`, else `Busy`.
    pub async fn acquire(&self) -> Result<Permit, StoreError> {
        if let Ok(permit) = self.permits.clone().try_acquire_owned() {
            return Ok(Permit(permit));
        }
        self.waiting.fetch_add(1, Ordering::Relaxed);
        let _waiting = Waiting(self.waiting.clone());
        match tokio::time::timeout(self.timeout, self.permits.clone().acquire_owned()).await {
            Ok(Ok(permit)) => Ok(Permit(permit)),
            Ok(Err(_closed)) => Err(StoreError::Internal("the connection gate is closed".into())),
            Err(_elapsed) => Err(StoreError::Busy(format!(
                "no database connection within POOL_TIMEOUT_MS ({} ms)",
                self.timeout.as_millis()
            ))),
        }
    }

    /// The callback to install as the client's `cmap_event_handler`: counts open connections.
    pub fn event_handler(&self) -> EventHandler<CmapEvent> {
        let open = self.open.clone();
        EventHandler::callback(move |event| match event {
            CmapEvent::ConnectionCreated(_) => {
                open.fetch_add(1, Ordering::Relaxed);
            }
            CmapEvent::ConnectionClosed(_) => {
                open.fetch_sub(1, Ordering::Relaxed);
            }
            _ => {}
        })
    }

    /// The current figures: `max_size` is `MONGO_POOL_SIZE`, `size` the open connections,
    /// `available` the open ones no operation holds, `waiting` the requests waiting for a permit.
    pub fn status(&self) -> PoolStatus {
        let in_use = self.size - self.permits.available_permits();
        let open = usize::try_from(self.open.load(Ordering::Relaxed)).unwrap_or(0);
        PoolStatus {
            max_size: self.size,
            size: open,
            available: open.saturating_sub(in_use),
            waiting: self.waiting.load(Ordering::Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn permits_are_bounded_and_waiting_is_exact_even_when_a_waiter_is_cancelled() {
        let gate = ConnectionGate::new(1, Duration::from_millis(50));
        let held = gate.acquire().await.expect("the only permit");
        assert_eq!(gate.status().waiting, 0);

        let cancelled = tokio::time::timeout(Duration::from_millis(10), gate.acquire()).await;
        assert!(cancelled.is_err(), "the waiter was cancelled before its own timeout");
        assert_eq!(gate.status().waiting, 0, "a cancelled waiter is no longer counted");

        assert!(matches!(gate.acquire().await, Err(StoreError::Busy(_))), "busy after POOL_TIMEOUT_MS");
        assert_eq!(gate.status().waiting, 0);

        drop(held);
        let again = gate.acquire().await.expect("free again");
        drop(again);
        assert_eq!(gate.permits.available_permits(), 1, "every permit came back");
    }
}
