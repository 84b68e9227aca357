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
    let text = describe(&error);
    if unavailable { StoreError::Unavailable(text) } else { StoreError::Internal(text) }
}

/// The error in one line with its cause: the driver's own `Display` of a server error is only
/// "db error", which hides why (say, `no pg_hba.conf entry for host ...` at start-up).
pub fn describe(error: &tokio_postgres::Error) -> String {
    if let Some(db) = error.as_db_error() {
        let detail = db.detail().map(|d| format!(" ({d})")).unwrap_or_default();
        return format!("{} {}: {}{detail}", db.severity(), db.code().code(), db.message());
    }
    match std::error::Error::source(error) {
        Some(cause) => format!("{error}: {cause}"),
        None => error.to_string(),
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The test server (`DATABASE_URL`, as scripts/test.sh exports it) with a role that does not
    /// exist: the server refuses the login with a reason, and the text must carry it.
    #[tokio::test]
    async fn a_refused_login_names_the_servers_reason() {
        let url = std::env::var("DATABASE_URL").unwrap_or_else(|_| "postgres://postgres@127.0.0.1:55432/orders".into());
        let mut config: tokio_postgres::Config = url.parse().expect("DATABASE_URL");
        config.user("no_such_role_here");
        let error = config.connect(tokio_postgres::NoTls).await.err().expect("the login must be refused");
        let text = describe(&error);
        assert!(text.contains("28000") && text.contains("no_such_role_here"), "{text}");
    }
}
