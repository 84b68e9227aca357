//! `Admission`: the cap on requests handled at once (`MAX_IN_FLIGHT`). The `Observe` layer admits
//! each request (but `/healthz` and `/metrics`, which touch no database and read no body) before it
//! runs; one beyond the cap is answered 503 at once instead of queueing for a database connection,
//! so a flood cannot hold more than `MAX_IN_FLIGHT` request bodies in memory, nor grow the queue
//! before the pool without bound. Admitting is one atomic addition, releasing one subtraction.
//! `/metrics` shows the count (`http_requests_in_flight`).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

#[derive(Debug)]
pub struct Admission {
    in_flight: AtomicUsize,
    limit: usize,
}

/// An admitted request; dropping it (answered, timed out or abandoned) frees its place.
#[derive(Debug)]
pub struct Admitted(Arc<Admission>);

impl Drop for Admitted {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Admission {
    pub fn new(limit: usize) -> Self {
        Self { in_flight: AtomicUsize::new(0), limit }
    }

    /// A place for one more request, or `None` when `limit` requests are in flight.
    pub fn try_admit(self: &Arc<Self>) -> Option<Admitted> {
        if self.in_flight.fetch_add(1, Ordering::Relaxed) >= self.limit {
            self.in_flight.fetch_sub(1, Ordering::Relaxed);
            return None;
        }
        Some(Admitted(self.clone()))
    }

    /// Requests in flight (a refusal counts for the instant it takes, so never more than shown
    /// here, which is at most the limit).
    pub fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::Relaxed).min(self.limit)
    }

    /// The `http_requests_in_flight` gauge in the Prometheus text format.
    pub fn render(&self) -> String {
        format!(
            "# HELP http_requests_in_flight Requests being handled now (at most MAX_IN_FLIGHT, {}).\n\
             # TYPE http_requests_in_flight gauge\nhttp_requests_in_flight {}\n",
            self.limit,
            self.in_flight()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn admits_up_to_the_limit_and_frees_a_place_when_a_request_ends() {
        let admission = Arc::new(Admission::new(2));
        let first = admission.try_admit().expect("first");
        let _second = admission.try_admit().expect("second");
        assert!(admission.try_admit().is_none(), "a third is refused");
        assert_eq!(admission.in_flight(), 2, "a refusal takes no place");
        drop(first);
        assert!(admission.try_admit().is_some(), "a place was freed");
        assert!(admission.render().contains("\nhttp_requests_in_flight 1\n"), "{}", admission.render());
    }

    #[test]
    fn many_threads_never_exceed_the_limit() {
        let admission = Arc::new(Admission::new(3));
        let (holding, peak) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let (admission, holding, peak) = (admission.clone(), holding.clone(), peak.clone());
                std::thread::spawn(move || {
                    for _ in 0..10_000 {
                        if let Some(admitted) = admission.try_admit() {
                            peak.fetch_max(holding.fetch_add(1, Ordering::SeqCst) + 1, Ordering::SeqCst);
                            holding.fetch_sub(1, Ordering::SeqCst);
                            drop(admitted);
                        }
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().expect("thread");
        }
        assert!(peak.load(Ordering::Relaxed) <= 3);
        assert_eq!(admission.in_flight(), 0);
    }
}
