//! Test support shared by the backends: `contract` is the one store contract suite every
//! `OrderStore` must pass against a real database (instantiated per backend with
//! `store_contract_tests!`), `client` starts a service on port 0 and talks HTTP to it, `faults`
//! crashes databases, sends SIGTERM and overloads services under load, `hostile` is the suite of
//! clients that try to cost a service more than they should (`hostile_client_tests!`), and
//! `runtime` checks that a service binary runs on the runtime `WORKER_THREADS` asks for.

#![forbid(unsafe_code)]

pub mod api;
pub mod client;
pub mod contract;
pub mod faults;
pub mod hostile;
pub mod runtime;

pub use client::{Reply, TestApp};

/// Polls every future on the calling task until all are done, so their requests are in flight at
/// the same time (no extra dependency for this one helper); outputs in the order given.
pub async fn join_all<F: std::future::Future>(futures: impl IntoIterator<Item = F>) -> Vec<F::Output> {
    let mut pending: Vec<std::pin::Pin<Box<F>>> = futures.into_iter().map(Box::pin).collect();
    let mut outputs: Vec<Option<F::Output>> = pending.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut done = true;
        for (future, output) in pending.iter_mut().zip(outputs.iter_mut()) {
            if output.is_none() {
                match future.as_mut().poll(cx) {
                    std::task::Poll::Ready(value) => *output = Some(value),
                    std::task::Poll::Pending => done = false,
                }
            }
        }
        if done { std::task::Poll::Ready(()) } else { std::task::Poll::Pending }
    })
    .await;
    outputs.into_iter().flatten().collect()
}
