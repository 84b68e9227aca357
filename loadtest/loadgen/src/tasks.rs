//! The closed loop's requests: each one a task on the generator's `LocalSet`, over `conn`'s
//! keep-alive connections. `Shared` keeps them on the books (in flight by id, so that those that
//! time out, or are still running when the generator gives up on them, are counted too) and records
//! each in the `Recorder`. (The open loop does without tasks: `wire`.)

use super::conn::Target;
use super::record::{Recorder, Slot};
use super::request::EndpointPlan;
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::time::{Duration, Instant};

/// What every request task of the closed loop shares.
pub struct Shared {
    pub targets: Vec<Rc<Target>>,
    pub endpoints: Vec<EndpointPlan>,
    pub recorder: RefCell<Recorder>,
    /// Requests in flight by id, so that those that time out, or are still running when the
    /// generator gives up on them, are counted too.
    pub in_flight: RefCell<HashMap<u64, InFlight>>,
    pub request_timeout: Duration,
}

/// A request on its way: where it belongs and when it was due (it is sent then: the closed loop
/// sends as soon as a client is free, so its timeout runs from then too).
pub struct InFlight {
    pub slot: Slot,
    pub due: Instant,
}

impl Shared {
    /// Registers a request as in flight (before it is sent).
    pub fn start(&self, id: u64, slot: Slot, due: Instant) {
        self.in_flight.borrow_mut().insert(id, InFlight { slot, due });
    }

    /// Takes a request off the books and records it.
    fn finish(&self, id: u64, latency: Duration, error: Option<String>) {
        let Some(entry) = self.in_flight.borrow_mut().remove(&id) else { return };
        self.recorder.borrow_mut().request(entry.slot, latency, error);
    }

    /// Sends request `id` (registered with `start`) to its target and records it, unless `expire`
    /// counted it as timed out first (the client, holding it under a timer a little longer than the
    /// request timeout, then gives up on it and sends its next).
    pub async fn request(self: Rc<Self>, id: u64, path: String, body: Option<bytes::Bytes>) {
        let Some((slot, due)) = self.in_flight.borrow().get(&id).map(|e| (e.slot, e.due)) else { return };
        let target = self.targets[slot.target].clone();
        let endpoint = &self.endpoints[slot.endpoint];
        let (error, end) = match target.send(endpoint.method.as_str(), &path, endpoint.headers, body.as_deref()).await {
            Err(kind) => (Some(kind), Instant::now()),
            Ok(answer) if answer.status == endpoint.expect => (None, answer.arrived),
            Ok(answer) => (Some(format!("status {}", answer.status)), answer.arrived),
        };
        self.finish(id, end.saturating_duration_since(due), error);
    }

    /// Counts as failed (`timeout`) every request in flight for longer than the request timeout.
    pub fn expire(&self) {
        let now = Instant::now();
        let expired: Vec<(u64, Instant)> = self
            .in_flight
            .borrow()
            .iter()
            .filter(|(_, e)| now.saturating_duration_since(e.due) >= self.request_timeout)
            .map(|(id, e)| (*id, e.due))
            .collect();
        for (id, due) in expired {
            self.finish(id, now.saturating_duration_since(due), Some("timeout".into()));
        }
    }

    /// Counts every request still in flight as failed, with the time it has waited so far as its
    /// latency (a lower bound): used when the generator stops waiting for them.
    pub fn abandon_in_flight(&self) -> usize {
        let now = Instant::now();
        let abandoned: Vec<InFlight> = self.in_flight.borrow_mut().drain().map(|(_, v)| v).collect();
        let mut recorder = self.recorder.borrow_mut();
        for entry in &abandoned {
            recorder.request(entry.slot, now.saturating_duration_since(entry.due), Some("interrupted".into()));
        }
        abandoned.len()
    }

    pub fn requests_in_flight(&self) -> usize {
        self.in_flight.borrow().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::RequestMaker;

    #[test]
    fn a_request_past_its_timeout_is_counted_as_one_and_given_up_on() {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        tokio::task::LocalSet::new().block_on(&runtime, async {
            // Accepts and never answers.
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
            let url = format!("http://{}", listener.local_addr().expect("addr"));
            let held = tokio::spawn(async move { listener.accept().await });
            let definitions = crate::mixes::Definitions::embedded().expect("mixes");
            let profile =
                orders_dataset::Profile { seed: 1, orders: 10, customers: 2, products: 5, items: 3, note_bytes: 0 };
            let manifest = orders_dataset::manifest::Manifest::new(&profile, 600);
            let maker =
                RequestMaker::new(&definitions, &definitions.mix("read").expect("read"), &manifest, 1).expect("maker");
            let shared = Rc::new(Shared {
                targets: vec![Rc::new(Target::new("t", &url).expect("target"))],
                endpoints: maker.endpoints.clone(),
                recorder: RefCell::new(Recorder::new(1, 1, &[1], Duration::from_secs(1), Duration::from_millis(50))),
                in_flight: RefCell::new(HashMap::new()),
                request_timeout: Duration::from_millis(100),
            });
            let slot = Slot { target: 0, step: 0, window: 0, endpoint: 0 };
            shared.start(7, slot, Instant::now());
            // As the closed loop's client holds it: a little longer than the request timeout.
            let request = shared.clone().request(7, "/orders/1".into(), None);
            let task = tokio::task::spawn_local(tokio::time::timeout(Duration::from_millis(300), request));
            tokio::time::sleep(Duration::from_millis(50)).await;
            shared.expire();
            assert_eq!(shared.requests_in_flight(), 1, "not yet");
            tokio::time::sleep(Duration::from_millis(100)).await;
            shared.expire();
            assert_eq!(shared.requests_in_flight(), 0);
            assert!(task.await.expect("task").is_err(), "the client gave up on it");
            let recorder = shared.recorder.borrow();
            assert_eq!(
                (
                    recorder.steps[0][0].figures.count,
                    recorder.steps[0][0].figures.failures,
                    recorder.errors[0]["timeout"]
                ),
                (1, 1, 1),
                "counted once, as a timeout"
            );
            drop(held);
        });
    }
}
