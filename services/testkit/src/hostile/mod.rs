//! The hostile-client suite (issue 28): clients that are valid HTTP but cost a service far more
//! than they should, run against a real service binary over its real database. Bodies built to be
//! expensive to reject (`bodies`, measured by `costs` in the service's own CPU time and memory,
//! read from `/proc` by `process`), connections that are silent, slow or idle and more
//! connections and requests than the limits allow (`connections`), and requests with invented
//! methods and oversized headers, paths and query strings (`requests`), and many slow readers of
//! large lists (`slow_readers`, issue 45). `suite` holds the tests
//! and their assertions; `hostile_client_tests!(start)` expands to one `#[tokio::test]` per test
//! for a way of starting a service binary, and each service's `tests/integration/hostile.rs`
//! invokes it.

pub mod bodies;
pub mod connections;
pub mod costs;
pub mod process;
pub mod requests;
pub mod slow_readers;
pub mod suite;

use crate::faults::ServiceProcess;

/// A service binary started for one test, and what to clean up after it (its database).
pub struct Target {
    pub service: ServiceProcess,
    cleanup: Option<Box<dyn FnOnce() + Send>>,
}

impl Target {
    pub fn new(service: ServiceProcess) -> Self {
        Self { service, cleanup: None }
    }

    /// Runs `cleanup` once the service has been stopped.
    pub fn with_cleanup(service: ServiceProcess, cleanup: impl FnOnce() + Send + 'static) -> Self {
        Self { service, cleanup: Some(Box::new(cleanup)) }
    }
}

impl Drop for Target {
    fn drop(&mut self) {
        self.service.kill();
        if let Some(cleanup) = self.cleanup.take() {
            cleanup();
        }
    }
}

/// Expands to the whole hostile-client suite for `$start`, a function that starts the service
/// binary with the given extra settings and returns its `Target`.
#[macro_export]
macro_rules! hostile_client_tests {
    ($start:path) => {
        $crate::hostile_client_tests!(@tests $start;
            hostile_bodies_cost_at_most_five_times_an_ordinary_order_and_bounded_memory,
            slow_header_and_idle_connections_are_closed_on_time_while_requests_keep_their_latency,
            connections_beyond_the_limit_are_refused_at_once,
            requests_beyond_the_in_flight_limit_are_shed_while_health_and_metrics_answer,
            odd_requests_get_4xx_or_a_closed_connection_and_invented_methods_one_metrics_label,
            slow_readers_of_large_lists_hold_at_most_max_in_flight_answers,
        );
    };
    (@tests $start:path; $($name:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn $name() {
                $crate::hostile::suite::$name(&$start).await;
            }
        )*
    };
}
