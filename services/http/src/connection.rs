//! What one connection is doing, for the limits `serve` puts on connections that hold resources
//! without asking for anything: `HEADER_READ_TIMEOUT_MS` (a request's header must arrive within
//! this long of its first byte, or of the connection's opening for its first request) and
//! `IDLE_TIMEOUT_MS` (a connection with no request in flight and nothing sent since its last
//! answer is closed after this long). `Activity` is the connection's phase, updated by the bytes
//! it reads (`Watched`, a transparent wrapper around the socket) and by the requests it serves
//! (`InFlight`); `Activity::next_check` tells the connection's task when to look again.
//!
//! hyper's own `header_read_timeout` is not used: it runs from the moment hyper starts waiting
//! for a request, so on a keep-alive connection the wait between two requests counts against it,
//! and an idle timeout longer than the header timeout could never apply.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// Default of `HEADER_READ_TIMEOUT_MS`: generous for any client that means to send a request, short
/// enough that connections sending a header byte by byte (slowloris) cannot pile up.
pub const DEFAULT_HEADER_READ_TIMEOUT_MS: u64 = 10_000;
/// Default of `IDLE_TIMEOUT_MS`: longer than the pauses of the load generators between requests
/// on a kept-alive connection.
pub const DEFAULT_IDLE_TIMEOUT_MS: u64 = 60_000;
/// Default of `MAX_CONNECTIONS`: more than the load generators open (k6 at most 5,000 VUs per
/// target and load machine), less than the file limit of the droplets' units (65,536).
pub const DEFAULT_MAX_CONNECTIONS: usize = 10_000;

/// The limits on connections (`HEADER_READ_TIMEOUT_MS`, `IDLE_TIMEOUT_MS`, `MAX_CONNECTIONS`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionLimits {
    pub header_read_timeout: Duration,
    pub idle_timeout: Duration,
    /// Connections open at once; a connection beyond it is answered 503 and closed.
    pub max_connections: usize,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        Self {
            header_read_timeout: Duration::from_millis(DEFAULT_HEADER_READ_TIMEOUT_MS),
            idle_timeout: Duration::from_millis(DEFAULT_IDLE_TIMEOUT_MS),
            max_connections: DEFAULT_MAX_CONNECTIONS,
        }
    }
}

/// Why a connection was closed by its limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expired {
    /// A request's header did not arrive within `HEADER_READ_TIMEOUT_MS`.
    HeaderReadTimeout,
    /// Nothing was asked within `IDLE_TIMEOUT_MS` of the last answer.
    IdleTimeout,
}

/// The phase, packed into one atomic word: the top two bits say which, the rest the millisecond
/// (since the connection opened) it began.
const PHASE_SHIFT: u32 = 62;
const SINCE_MASK: u64 = (1 << PHASE_SHIFT) - 1;
/// Waiting for (the rest of) a request's header since `since`.
const HEADER: u64 = 0;
/// A request is being served: no timeout of this module applies (`REQUEST_TIMEOUT_MS` does).
const BUSY: u64 = 1;
/// Answered, and nothing received since `since`.
const IDLE: u64 = 2;

/// One connection's phase; shared by its socket wrapper, its requests and its task.
#[derive(Debug)]
pub struct Activity {
    opened: Instant,
    state: AtomicU64,
}

impl Activity {
    /// A connection just accepted: it owes its first request's header.
    pub fn new() -> Self {
        Self { opened: Instant::now(), state: AtomicU64::new(HEADER << PHASE_SHIFT) }
    }

    fn millis_now(&self) -> u64 {
        u64::try_from(self.opened.elapsed().as_millis()).unwrap_or(SINCE_MASK).min(SINCE_MASK)
    }

    /// A request's header arrived and the request is being served until the guard is dropped.
    pub fn request_started(self: &Arc<Self>) -> InFlight {
        self.state.store(BUSY << PHASE_SHIFT, Ordering::Relaxed);
        InFlight(self.clone())
    }

    /// Bytes arrived: on an idle connection, the next request has begun.
    fn bytes_arrived(&self) {
        let state = self.state.load(Ordering::Relaxed);
        if state >> PHASE_SHIFT == IDLE {
            let header = (HEADER << PHASE_SHIFT) | self.millis_now();
            // Lost only to a request starting meanwhile, which is then the newer phase.
            let _ = self.state.compare_exchange(state, header, Ordering::Relaxed, Ordering::Relaxed);
        }
    }

    /// Whether the connection is past its limit at `now`, and if not, when to look again: at its
    /// deadline, or sooner (while a request is in flight, or idle, the phase can change without
    /// the task hearing of it; looking again at least every `min(header, idle)` closes it on time
    /// whatever it does meanwhile).
    pub fn next_check(&self, limits: &ConnectionLimits, now: Instant) -> Result<Instant, Expired> {
        let state = self.state.load(Ordering::Relaxed);
        let since = self.opened + Duration::from_millis(state & SINCE_MASK);
        let deadline = match state >> PHASE_SHIFT {
            HEADER => Some((since + limits.header_read_timeout, Expired::HeaderReadTimeout)),
            IDLE => Some((since + limits.idle_timeout, Expired::IdleTimeout)),
            _ => None,
        };
        let soon = now + limits.header_read_timeout.min(limits.idle_timeout);
        match deadline {
            Some((deadline, expired)) if deadline <= now => Err(expired),
            Some((deadline, _)) => Ok(deadline.min(soon)),
            None => Ok(soon),
        }
    }
}

impl Default for Activity {
    fn default() -> Self {
        Self::new()
    }
}

/// A request in flight on a connection; dropping it (answered, or abandoned) makes the connection
/// idle.
#[derive(Debug)]
pub struct InFlight(Arc<Activity>);

impl Drop for InFlight {
    fn drop(&mut self) {
        let idle = (IDLE << PHASE_SHIFT) | self.0.millis_now();
        self.0.state.store(idle, Ordering::Relaxed);
    }
}

/// A socket that tells its connection's `Activity` when bytes arrive; otherwise it is the socket.
#[derive(Debug)]
pub struct Watched<S> {
    inner: S,
    activity: Arc<Activity>,
}

impl<S> Watched<S> {
    pub fn new(inner: S, activity: Arc<Activity>) -> Self {
        Self { inner, activity }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Watched<S> {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let polled = Pin::new(&mut this.inner).poll_read(cx, buf);
        if buf.filled().len() > before {
            this.activity.bytes_arrived();
        }
        polled
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Watched<S> {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    const LIMITS: ConnectionLimits = ConnectionLimits {
        header_read_timeout: Duration::from_secs(10),
        idle_timeout: Duration::from_secs(60),
        max_connections: 100,
    };

    fn at(activity: &Activity, millis: u64) -> Instant {
        activity.opened + Duration::from_millis(millis)
    }

    #[test]
    fn a_new_connection_owes_its_header_within_the_header_timeout() {
        let activity = Activity::new();
        assert_eq!(activity.next_check(&LIMITS, at(&activity, 0)), Ok(at(&activity, 10_000)));
        assert_eq!(activity.next_check(&LIMITS, at(&activity, 9_999)), Ok(at(&activity, 10_000)));
        assert_eq!(activity.next_check(&LIMITS, at(&activity, 10_000)), Err(Expired::HeaderReadTimeout));
    }

    #[test]
    fn a_request_in_flight_has_no_deadline_here_but_is_looked_at_again() {
        let activity = Arc::new(Activity::new());
        let request = activity.request_started();
        assert_eq!(activity.next_check(&LIMITS, at(&activity, 500_000)), Ok(at(&activity, 510_000)));
        drop(request);
        let idle_since = activity.state.load(Ordering::Relaxed) & SINCE_MASK;
        assert_eq!(activity.state.load(Ordering::Relaxed) >> PHASE_SHIFT, IDLE);
        // Idle: closed `idle_timeout` after the answer, looked at every `header_read_timeout`.
        let now = at(&activity, idle_since);
        assert_eq!(activity.next_check(&LIMITS, now), Ok(now + LIMITS.header_read_timeout));
        let end = at(&activity, idle_since + 60_000);
        assert_eq!(activity.next_check(&LIMITS, end), Err(Expired::IdleTimeout));
    }

    #[tokio::test]
    async fn bytes_after_an_answer_start_the_header_clock_and_the_socket_is_unchanged() {
        let activity = Arc::new(Activity::new());
        drop(activity.request_started());
        let (client, server) = tokio::io::duplex(64);
        let mut watched = Watched::new(server, activity.clone());
        let mut client = client;
        client.write_all(b"GET / HT").await.expect("write");
        let mut buf = [0u8; 8];
        watched.read_exact(&mut buf).await.expect("read");
        assert_eq!(&buf, b"GET / HT");
        assert_eq!(activity.state.load(Ordering::Relaxed) >> PHASE_SHIFT, HEADER);
        watched.write_all(b"answer").await.expect("write back");
        let mut back = [0u8; 6];
        client.read_exact(&mut back).await.expect("read back");
        assert_eq!(&back, b"answer");
    }

    #[test]
    fn bytes_while_a_request_is_in_flight_change_nothing() {
        let activity = Arc::new(Activity::new());
        let _request = activity.request_started();
        activity.bytes_arrived();
        assert_eq!(activity.state.load(Ordering::Relaxed) >> PHASE_SHIFT, BUSY);
    }
}
