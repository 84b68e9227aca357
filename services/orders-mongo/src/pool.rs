//! Connection pool figures for `/metrics` and `/diagnostics`. The driver has no getter for its
//! pool's state, but it reports every pool event (CMAP: connection created/closed, checkout
//! started/failed, checked out/in) to a synchronous callback; `PoolCounters` keeps running totals
//! of those with atomics, so the figures are the driver's own, summed over the pools of all
//! servers the client talks to. The driver's monitoring connections (heartbeats) are not pooled and
//! not counted, and a connection counts as in use until the pool's own task has taken it back, a
//! moment after its operation finished.

use mongodb::event::EventHandler;
use mongodb::event::cmap::CmapEvent;
use orders_core::PoolStatus;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

#[derive(Debug, Default)]
pub struct PoolCounters {
    /// Connections created and not yet closed (including ones still handshaking).
    open: AtomicI64,
    /// Connections checked out by an operation and not yet returned.
    in_use: AtomicI64,
    /// Operations that started a checkout that has neither succeeded nor failed.
    waiting: AtomicI64,
}

impl PoolCounters {
    /// The callback to install as the client's `cmap_event_handler`.
    pub fn event_handler(self: &Arc<Self>) -> EventHandler<CmapEvent> {
        let counters = self.clone();
        EventHandler::callback(move |event| counters.record(&event))
    }

    fn record(&self, event: &CmapEvent) {
        let add = |counter: &AtomicI64, delta: i64| {
            counter.fetch_add(delta, Ordering::Relaxed);
        };
        match event {
            CmapEvent::ConnectionCreated(_) => add(&self.open, 1),
            CmapEvent::ConnectionClosed(_) => add(&self.open, -1),
            CmapEvent::ConnectionCheckoutStarted(_) => add(&self.waiting, 1),
            CmapEvent::ConnectionCheckoutFailed(_) => add(&self.waiting, -1),
            CmapEvent::ConnectionCheckedOut(_) => {
                add(&self.waiting, -1);
                add(&self.in_use, 1);
            }
            CmapEvent::ConnectionCheckedIn(_) => add(&self.in_use, -1),
            _ => {}
        }
    }

    /// The current figures; `max_size` is the configured `MONGO_POOL_SIZE` (per server).
    pub fn status(&self, max_size: u32) -> PoolStatus {
        let read = |counter: &AtomicI64| usize::try_from(counter.load(Ordering::Relaxed)).unwrap_or(0);
        let (open, in_use) = (read(&self.open), read(&self.in_use));
        PoolStatus {
            max_size: max_size as usize,
            size: open,
            available: open.saturating_sub(in_use),
            waiting: read(&self.waiting),
        }
    }
}
