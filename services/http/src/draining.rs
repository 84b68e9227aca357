//! The server's draining flag, set by `serve` when it stops taking work and read by the handlers
//! (`/readyz` answers 503 from then on): its own module so neither imports the other for it.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Set once the server drains; handlers find it in the request's extensions (`/readyz` answers
/// 503 from then on).
#[derive(Debug, Clone, Default)]
pub struct Draining(Arc<AtomicBool>);

impl Draining {
    pub fn is_set(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    pub(crate) fn set(&self) {
        self.0.store(true, Ordering::Relaxed);
    }
}
