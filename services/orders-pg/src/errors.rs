//! Maps driver and pool errors onto `StoreError`: anything that means "cannot reach the database
//! right now" (closed connection, connection-class SQLSTATEs, shutdown, too many connections,
//! a statement stopped by `statement_timeout`) is `Unavailable` (HTTP 503 with Retry-After);
//! everything else is `Internal`. For a statement that writes, an error that ends the connection
//! once the statement was sent leaves the write's outcome unknown (`from_write`): a lost
//! connection, an I/O error, or a FATAL/PANIC from the server such as `57P01 admin_shutdown`
//! (a backend terminated while its commit waits, say for a synchronous standby, has already
//! committed locally). Only an ordinary server error (severity ERROR, the session still alive)
//! means the statement was rolled back, so its outcome is known.

use deadpool_postgres::PoolError;
use orders_core::StoreError;
use tokio_postgres::error::{Severity, SqlState};

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

/// `from_db` for a statement that writes, once it was sent: an error that ends the connection
/// (`ends_the_connection`) is `OutcomeUnknown`, whatever its SQLSTATE.
pub fn from_write(error: tokio_postgres::Error) -> StoreError {
    if ends_the_connection(&error) {
        return StoreError::OutcomeUnknown(describe(&error));
    }
    from_db(error)
}

/// Whether `error` ended (or came with the end of) the session: the connection closed, an I/O
/// error, a FATAL or PANIC from the server, or a SQLSTATE of class `57P0` (shutdown, crash,
/// terminated) or `08` (connection exception). A server error of severity ERROR leaves the
/// session alive and its statement rolled back.
pub fn ends_the_connection(error: &tokio_postgres::Error) -> bool {
    if error.is_closed() {
        return true;
    }
    if let Some(db) = error.as_db_error() {
        let fatal = match db.parsed_severity() {
            Some(severity) => matches!(severity, Severity::Fatal | Severity::Panic),
            // A server too old to send the untranslated severity: its text may be translated.
            None => matches!(db.severity(), "FATAL" | "PANIC"),
        };
        let code = db.code().code();
        return fatal || code.starts_with("57P0") || code.starts_with("08");
    }
    // No server answer: the connection broke when the cause is I/O (reset, timed out); a value that
    // failed to convert is a bug caught before anything was sent.
    std::error::Error::source(error).is_some_and(|cause| cause.is::<std::io::Error>())
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
