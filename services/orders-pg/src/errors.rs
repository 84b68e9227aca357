//! Maps driver and pool errors onto `StoreError`: anything that means "cannot reach the database
//! right now" (closed connection, connection-class SQLSTATEs, shutdown, too many connections,
//! a statement stopped by `statement_timeout`) is `Unavailable` (HTTP 503 with Retry-After);
//! everything else is `Internal`. For a statement that writes, a connection lost without an
//! answer from the server leaves the write's outcome unknown (`from_write`): the commit may have
//! happened just before the connection went. A server error (with a SQLSTATE) means the statement
//! was rolled back, so its outcome is known.

use deadpool_postgres::PoolError;
use orders_core::StoreError;
use tokio_postgres::error::SqlState;

pub fn from_db(error: tokio_postgres::Error) -> StoreError {
    let unavailable = error.is_closed()
        || match error.code() {
            Some(code) => {
                code.code().starts_with("08")
                    || [SqlState::ADMIN_SHUTDOWN, SqlState::CRASH_SHUTDOWN, SqlState::CANNOT_CONNECT_NOW].contains(code)
                    || *code == SqlState::TOO_MANY_CONNECTIONS
                    // statement_timeout (REQUEST_TIMEOUT_MS) or a cancel: the database was too slow.
                    || *code == SqlState::QUERY_CANCELED
            }
            // No SQLSTATE: unreachable only when the cause is I/O (refused, reset, timed out);
            // a value that failed to convert is a bug, not an outage.
            None => std::error::Error::source(&error).is_some_and(|cause| cause.is::<std::io::Error>()),
        };
    if unavailable { StoreError::Unavailable(error.to_string()) } else { StoreError::Internal(error.to_string()) }
}

/// `from_db` for a statement that writes.
pub fn from_write(error: tokio_postgres::Error) -> StoreError {
    let server_answered = error.code().is_some();
    match from_db(error) {
        StoreError::Unavailable(cause) if !server_answered => StoreError::OutcomeUnknown(cause),
        other => other,
    }
}

pub fn from_pool(error: PoolError) -> StoreError {
    match error {
        PoolError::Backend(error) => from_db(error),
        PoolError::Timeout(_) => StoreError::Unavailable("no database connection free in time (pool exhausted)".into()),
        other => StoreError::Unavailable(other.to_string()),
    }
}
