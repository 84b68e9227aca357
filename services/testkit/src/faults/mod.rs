//! Fault tests on real servers: private database servers a test may crash (`databases`), a service
//! binary run as a child process (`service`), and the scenarios with their figures (`scenarios`).

pub mod databases;
pub mod scenarios;
pub mod service;

pub use databases::{Crashable, PrivateMongo, PrivatePostgres};
pub use scenarios::{
    CrashReport, DrainReport, OverloadReport, crash_and_restart, overload_then_recover, sigterm_under_load,
};
pub use service::ServiceProcess;

use std::time::Duration;

/// The assertions of issue 11 on a crash report: 503 within a second while the database is down,
/// 2xx again within a second of it accepting connections, `/readyz` following, nothing
/// acknowledged lost; and of issue 45: no order written for a request answered "nothing was
/// written".
pub fn assert_crash_handled(report: &CrashReport) {
    assert!(report.acknowledged > 0, "{report:?}");
    assert_eq!(report.lost, 0, "acknowledged inserts lost: {report:?}");
    assert_eq!(
        report.written_though_answered_nothing_written, 0,
        "orders written for requests answered 'nothing was written': {report:?}"
    );
    assert!(report.unavailable_while_down > 0, "503 while the database was down: {report:?}");
    assert!(report.slowest_while_down < Duration::from_secs(1), "answered within a second while down: {report:?}");
    assert!(report.unexpected_while_down.is_empty(), "only 201 or 503 while down: {report:?}");
    assert!(
        report.recovery.is_some_and(|r| r < Duration::from_secs(1)),
        "2xx within a second of the restart: {report:?}"
    );
    assert_eq!(report.failures_after_recovery, 0, "{report:?}");
    assert_eq!(report.no_answer, 0, "every request got an HTTP answer: {report:?}");
    assert_eq!((report.readiness_while_down, report.readiness_after), (503, 200), "/readyz follows: {report:?}");
}

/// Every request on a connection accepted before SIGTERM was answered, and the process exited
/// cleanly within the shutdown timeout.
pub fn assert_drained(report: &DrainReport, shutdown_timeout: Duration) {
    assert!(report.on_accepted_connections > 0, "{report:?}");
    assert_eq!(report.failed, 0, "requests on accepted connections failed: {report:?}");
    assert!(report.unexpected_statuses.is_empty(), "{report:?}");
    assert!(report.exit_success, "a clean exit: {report:?}");
    assert!(report.exit_after.is_some_and(|t| t <= shutdown_timeout + Duration::from_millis(500)), "{report:?}");
}

/// Latency and pool gauges back to normal within two seconds of the overload's end.
pub fn assert_recovered(report: &OverloadReport) {
    assert!(report.shed_during_overload > 0, "the overload shed requests: {report:?}");
    assert!(report.recovered_after.is_some_and(|t| t <= Duration::from_secs(2)), "recovered within 2 s: {report:?}");
}
