//! The closed loop (study S2's way: 8 clients, 20 s): each of N clients per target sends a
//! request, waits for its answer and sends the next at once, until the time is up. Throughput is
//! whatever the target sustains; latency runs from each request's actual send, since in a closed
//! loop there is no schedule to fall behind (and a slow answer delays the next request instead of
//! queueing it). Everything is recorded as one step, windows included.

use super::control::Control;
use super::open::Shared;
use super::record::Slot;
use super::request::RequestMaker;
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Runs `clients` loops per target from `origin` for `duration`; returns the seconds it ran.
pub async fn run(
    shared: Rc<Shared>,
    maker: RequestMaker,
    clients: u32,
    duration: Duration,
    origin: Instant,
    control: Arc<Control>,
) -> f64 {
    let maker = Rc::new(RefCell::new(maker));
    let end = origin + duration;
    let window = shared.recorder.borrow().window;
    let next_id = Rc::new(Cell::new(0u64));
    let mut loops = Vec::new();
    for target in 0..shared.targets.len() {
        for _ in 0..clients {
            let (shared, maker, control, next_id) = (shared.clone(), maker.clone(), control.clone(), next_id.clone());
            loops.push(tokio::task::spawn_local(async move {
                while Instant::now() < end && !control.stopped() {
                    let request = maker.borrow_mut().next();
                    let sent = Instant::now();
                    let window = (sent.saturating_duration_since(origin).as_secs_f64() / window.as_secs_f64()) as usize;
                    let slot = Slot { target, step: 0, window, endpoint: request.endpoint };
                    let key = next_id.get();
                    next_id.set(key + 1);
                    shared.start(key, slot, sent);
                    // A request that outlives its timeout is counted by `Shared::expire`; the
                    // client gives up on it here and sends the next.
                    let timeout = shared.request_timeout + Duration::from_millis(200);
                    let _ = tokio::time::timeout(
                        timeout,
                        shared.clone().request(key, Rc::from(request.path), request.body),
                    )
                    .await;
                }
            }));
        }
    }
    for handle in loops {
        let _ = handle.await;
    }
    origin.elapsed().as_secs_f64().min(duration.as_secs_f64())
}
