//! How a driver error becomes a `StoreError`: anything that says "the database cannot be reached
//! right now" (network, server selection, a cleared pool, a stepping-down primary, an unmet write
//! concern) is `Unavailable`, so clients get 503 with `Retry-After`; everything else is
//! `Internal`. For a command that writes, a network error or an unmet write concern leaves the
//! write's outcome unknown (`write_error`). Also recognises the duplicate-key error of an insert.

use mongodb::error::{Error, ErrorKind, WriteFailure};
use orders_core::StoreError;

/// Server error codes that mean "not now" rather than "wrong request" (names as in the server's
/// `error_codes.yml`).
const UNAVAILABLE_CODES: &[i32] = &[
    6,     // HostUnreachable
    7,     // HostNotFound
    50,    // MaxTimeMSExpired
    89,    // NetworkTimeout
    91,    // ShutdownInProgress
    189,   // PrimarySteppedDown
    262,   // ExceededTimeLimit
    9001,  // SocketException
    10107, // NotWritablePrimary
    11600, // InterruptedAtShutdown
    11602, // InterruptedDueToReplStateChange
    13435, // NotPrimaryNoSecondaryOk
    13436, // NotPrimaryOrSecondary
];

const DUPLICATE_KEY: i32 = 11000;

pub fn store_error(error: Error) -> StoreError {
    if is_unavailable(&error) {
        StoreError::Unavailable(describe(&error))
    } else {
        StoreError::Internal(describe(&error))
    }
}

/// `store_error` for a command that writes: a connection lost without an answer (the write may
/// have been applied just before) or a write concern error (applied, durability not confirmed)
/// is `OutcomeUnknown`. A server error reply means the write was not applied.
pub fn write_error(error: Error) -> StoreError {
    match error.kind.as_ref() {
        ErrorKind::Io(_) | ErrorKind::Write(WriteFailure::WriteConcernError(_)) => {
            StoreError::OutcomeUnknown(describe(&error))
        }
        _ => store_error(error),
    }
}

/// The error in one line: the server's code name, code and message for a server error, the
/// driver's own words otherwise (its `Display` also dumps labels and the raw reply as hex).
pub fn describe(error: &Error) -> String {
    match error.kind.as_ref() {
        ErrorKind::Command(command) => format!("{} ({}): {}", command.code_name, command.code, command.message),
        ErrorKind::Write(WriteFailure::WriteError(write)) => {
            format!("{} ({}): {}", write.code_name.as_deref().unwrap_or("write error"), write.code, write.message)
        }
        ErrorKind::Write(WriteFailure::WriteConcernError(concern)) => {
            format!("write concern error {} ({}): {}", concern.code_name, concern.code, concern.message)
        }
        kind => kind.to_string(),
    }
}

pub fn is_unavailable(error: &Error) -> bool {
    match error.kind.as_ref() {
        ErrorKind::Io(_)
        | ErrorKind::ConnectionPoolCleared { .. }
        | ErrorKind::ServerSelection { .. }
        | ErrorKind::DnsResolve { .. }
        | ErrorKind::Shutdown => true,
        // The write happened but its durability was not confirmed in time.
        ErrorKind::Write(WriteFailure::WriteConcernError(_)) => true,
        ErrorKind::Command(command) => UNAVAILABLE_CODES.contains(&command.code),
        _ => error.contains_label("RetryableWriteError"),
    }
}

/// The insert hit the unique `_id` index (the only unique index of the collection).
pub fn is_duplicate_key(error: &Error) -> bool {
    match error.kind.as_ref() {
        ErrorKind::Write(WriteFailure::WriteError(write)) => write.code == DUPLICATE_KEY,
        ErrorKind::Command(command) => command.code == DUPLICATE_KEY,
        _ => false,
    }
}
