//! The generator's HTTP/1.1 connections to every target, for the open and the closed loop:
//! non-blocking sockets on one `mio::Poll`, written and read by the loop itself, with no runtime,
//! task or waker per request (one connection's own work: `connection`). Like k6's VUs,
//! a request never shares a connection with another in flight: an idle one is reused, else a new
//! one is opened without blocking, and a couple of spares are kept ahead of need. An answer is
//! timed by the kernel's timestamp of its last bytes (`stamp`).
//!
//! mio registers sockets edge-triggered: every read goes on until the kernel has nothing more or
//! the answer is whole, and an answer that ends exactly where a full buffer ends closes its
//! connection (bytes behind it would never be reported again). Why mio: docs/decisions.md.

mod connection;

use super::http1;
use super::stamp::{self, Clock};
use connection::{Connection, Read, State, alive, connect_error, read_answer, start_connect, write_request};
use mio::event::Event;
use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Token};
use std::io;
use std::net::{SocketAddr, TcpStream, ToSocketAddrs as _};
use std::os::fd::AsRawFd as _;
use std::time::{Duration, Instant};

/// A connection idle for longer than this is checked before it is reused (the server may have
/// closed it meanwhile, e.g. a restarted service).
const CHECK_IDLE_AFTER: Duration = Duration::from_secs(1);
/// After a failed connect, no spare connections are opened for this long.
const CONNECT_BACKOFF: Duration = Duration::from_secs(1);
/// Events taken from the kernel per wait; the rest stay ready for the next.
const EVENTS_PER_WAIT: usize = 1024;

/// A request on its way, as the caller describes it; handed back with its outcome.
#[derive(Debug, Clone, Copy)]
pub struct Pending<T> {
    pub tag: T,
    /// When it was handed to the connection: its timeout runs from here.
    pub started: Instant,
}

/// How a request ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The status, and when the answer's last bytes arrived.
    Answer { status: u16, arrived: Instant },
    /// Why there is no answer: `connect: ...`, `write: ...`, `closed by the server`, `timeout`.
    Failed(String, Instant),
}

/// One target's address and its connections' bookkeeping.
struct Endpoint {
    address: SocketAddr,
    /// `host:port`, for the Host header.
    authority: String,
    idle: Vec<usize>,
    /// Connections being opened with no request waiting on them.
    opening: usize,
    in_flight: usize,
    connections_opened: u64,
    untimed_answers: u64,
    connect_failed_at: Option<Instant>,
}

/// What the summary says of a target's connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionFigures {
    pub opened: u64,
    pub untimed_answers: u64,
}

pub struct Wire<T> {
    poll: Poll,
    events: Events,
    connections: Vec<Option<Connection<T>>>,
    free: Vec<usize>,
    endpoints: Vec<Endpoint>,
    clock: Clock,
}

/// `http://host:port` → the first address it resolves to, and `host:port`.
pub fn resolve(url: &str) -> anyhow::Result<(SocketAddr, String)> {
    let authority = http1::authority(url)?;
    let address = authority
        .to_socket_addrs()
        .map_err(|e| anyhow::anyhow!("{authority}: {e}"))?
        .next()
        .ok_or_else(|| anyhow::anyhow!("{authority} resolves to no address"))?;
    Ok((address, authority))
}

/// Readable always, writable too when a connect or a write is not done yet.
fn interest(writable: bool) -> Interest {
    if writable { Interest::READABLE | Interest::WRITABLE } else { Interest::READABLE }
}

impl<T: Copy> Wire<T> {
    /// `urls`: each target's `http://host:port`, resolved once here.
    pub fn new(urls: &[String]) -> anyhow::Result<Self> {
        let endpoints = urls
            .iter()
            .map(|url| {
                let (address, authority) = resolve(url)?;
                Ok(Endpoint {
                    address,
                    authority,
                    idle: Vec::new(),
                    opening: 0,
                    in_flight: 0,
                    connections_opened: 0,
                    untimed_answers: 0,
                    connect_failed_at: None,
                })
            })
            .collect::<anyhow::Result<_>>()?;
        Ok(Self {
            poll: Poll::new()?,
            events: Events::with_capacity(EVENTS_PER_WAIT),
            connections: Vec::new(),
            free: Vec::new(),
            endpoints,
            clock: Clock::now(),
        })
    }

    pub fn in_flight(&self, target: usize) -> usize {
        self.endpoints[target].in_flight
    }

    /// Requests in flight to every target.
    pub fn busy(&self) -> usize {
        self.endpoints.iter().map(|e| e.in_flight).sum()
    }

    pub fn figures(&self, target: usize) -> ConnectionFigures {
        let e = &self.endpoints[target];
        ConnectionFigures { opened: e.connections_opened, untimed_answers: e.untimed_answers }
    }

    /// Opens `n` connections to `target`, waiting (at most `timeout` each) until they are up.
    pub fn warm_up(&mut self, target: usize, n: usize, timeout: Duration) -> Result<(), String> {
        let address = self.endpoints[target].address;
        for _ in 0..n {
            let stream = TcpStream::connect_timeout(&address, timeout).map_err(|e| format!("connect: {}", e.kind()))?;
            stream.set_nonblocking(true).map_err(|e| format!("connect: {}", e.kind()))?;
            let token = self.insert(stream, target, State::Idle { since: Instant::now() }, false)?;
            self.endpoints[target].idle.push(token);
        }
        Ok(())
    }

    fn insert(&mut self, stream: TcpStream, target: usize, state: State<T>, writable: bool) -> Result<usize, String> {
        let _ = stream.set_nodelay(true);
        stamp::enable(&stream);
        let token = self.free.pop().unwrap_or(self.connections.len());
        if let Err(e) =
            self.poll.registry().register(&mut SourceFd(&stream.as_raw_fd()), Token(token), interest(writable))
        {
            self.free.push(token);
            return Err(format!("connect: {}", e.kind()));
        }
        let connection = Connection {
            stream,
            target,
            state,
            out: Vec::with_capacity(512),
            written: 0,
            watching_writes: writable,
            buffer: vec![0; 16 * 1024],
            filled: 0,
            arrived: None,
        };
        if token == self.connections.len() {
            self.connections.push(Some(connection));
        } else {
            self.connections[token] = Some(connection);
        }
        self.endpoints[target].connections_opened += 1;
        Ok(token)
    }

    /// Closes a connection; the request it carried, if any.
    fn remove(&mut self, token: usize) -> Option<Pending<T>> {
        let connection = self.connections.get_mut(token).and_then(Option::take)?;
        self.free.push(token);
        let endpoint = &mut self.endpoints[connection.target];
        match connection.state {
            State::Idle { .. } => {
                endpoint.idle.retain(|t| *t != token);
                None
            }
            State::Connecting(None) => {
                endpoint.opening -= 1;
                None
            }
            State::Connecting(Some(pending)) | State::Busy(pending) => {
                endpoint.in_flight -= 1;
                Some(pending)
            }
        }
    }

    fn fail(&mut self, token: usize, why: String) -> Option<(Pending<T>, Outcome)> {
        self.remove(token).map(|p| (p, Outcome::Failed(why, Instant::now())))
    }

    /// An idle connection to `target` that is still open.
    fn idle_connection(&mut self, target: usize) -> Option<usize> {
        while let Some(token) = self.endpoints[target].idle.pop() {
            let Some(connection) = self.connections[token].as_ref() else { continue };
            let State::Idle { since } = connection.state else { continue };
            if since.elapsed() < CHECK_IDLE_AFTER || alive(&connection.stream) {
                return Some(token);
            }
            self.remove(token);
        }
        None
    }

    /// Sends one request to `target`, written by `encode` (given the Host header's value); a
    /// request that fails at once comes back with why.
    pub fn send(
        &mut self,
        target: usize,
        pending: Pending<T>,
        encode: impl FnOnce(&mut Vec<u8>, &str),
    ) -> Result<(), (Pending<T>, Outcome)> {
        let failed = |why: String| (pending, Outcome::Failed(why, Instant::now()));
        let (token, connected) = match self.idle_connection(target) {
            Some(token) => (token, true),
            None => {
                let started = start_connect(self.endpoints[target].address);
                let (stream, connected) = started.map_err(|e| {
                    self.endpoints[target].connect_failed_at = Some(Instant::now());
                    failed(format!("connect: {}", e.kind()))
                })?;
                (self.insert(stream, target, State::Connecting(None), !connected).map_err(failed)?, connected)
            }
        };
        let endpoint = &mut self.endpoints[target];
        endpoint.in_flight += 1;
        let Some(connection) = self.connections[token].as_mut() else { return Err(failed("lost".into())) };
        connection.out.clear();
        connection.written = 0;
        encode(&mut connection.out, &endpoint.authority);
        if !connected {
            connection.state = State::Connecting(Some(pending));
            return Ok(());
        }
        connection.state = State::Busy(pending);
        match self.write(token) {
            Some(failure) => Err(failure),
            None => Ok(()),
        }
    }

    /// Writes what the kernel takes of a connection's request, and watches for the moment it can
    /// take more when it did not take all; fails the request on an error.
    fn write(&mut self, token: usize) -> Option<(Pending<T>, Outcome)> {
        let connection = self.connections[token].as_mut()?;
        match write_request(connection) {
            Ok(done) => {
                if connection.watching_writes == done {
                    connection.watching_writes = !done;
                    let _ = self.poll.registry().reregister(
                        &mut SourceFd(&connection.stream.as_raw_fd()),
                        Token(token),
                        interest(!done),
                    );
                }
                None
            }
            Err(why) => self.fail(token, why),
        }
    }

    /// Reads a connection; the request's outcome once its answer is whole.
    fn read(&mut self, token: usize) -> Option<(Pending<T>, Outcome)> {
        let connection = self.connections[token].as_mut()?;
        let State::Busy(pending) = connection.state else {
            // An idle connection that became readable was closed by the server (or sent bytes
            // nobody asked for): either way it is done.
            self.remove(token);
            return None;
        };
        match read_answer(connection) {
            Read::Waiting => None,
            Read::Failed(why) => self.fail(token, why),
            Read::Answer { status, closing, wall } => {
                let target = connection.target;
                let arrived = match wall {
                    Some(wall) => self.clock.instant(wall),
                    None => {
                        self.endpoints[target].untimed_answers += 1;
                        Instant::now()
                    }
                };
                if closing {
                    self.remove(token);
                } else {
                    connection.state = State::Idle { since: Instant::now() };
                    let endpoint = &mut self.endpoints[target];
                    endpoint.in_flight -= 1;
                    endpoint.idle.push(token);
                }
                Some((pending, Outcome::Answer { status, arrived }))
            }
        }
    }

    /// A connect in progress is over: writes its request (if one waits), or it becomes a spare.
    fn connected(&mut self, token: usize) -> Option<(Pending<T>, Outcome)> {
        let connection = self.connections[token].as_mut()?;
        let target = connection.target;
        if let Some(error) = connect_error(&connection.stream) {
            self.endpoints[target].connect_failed_at = Some(Instant::now());
            return self.fail(token, format!("connect: {}", error.kind()));
        }
        let State::Connecting(waiting) = connection.state else { return None };
        match waiting {
            Some(pending) => {
                connection.state = State::Busy(pending);
                self.write(token)
            }
            None => {
                connection.state = State::Idle { since: Instant::now() };
                connection.watching_writes = false;
                let _ = self.poll.registry().reregister(
                    &mut SourceFd(&connection.stream.as_raw_fd()),
                    Token(token),
                    interest(false),
                );
                let endpoint = &mut self.endpoints[target];
                endpoint.opening -= 1;
                endpoint.idle.push(token);
                None
            }
        }
    }

    fn handle(&mut self, event: &Event) -> Option<(Pending<T>, Outcome)> {
        let token = event.token().0;
        // An error or hang-up: the next read or write says which.
        let broken = event.is_error() || event.is_write_closed();
        let connecting = matches!(self.connections.get(token)?.as_ref()?.state, State::Connecting(_));
        if connecting {
            return if event.is_writable() || broken { self.connected(token) } else { None };
        }
        if event.is_writable()
            && let Some(failure) = self.write(token)
        {
            return Some(failure);
        }
        if event.is_readable() || event.is_read_closed() || broken { self.read(token) } else { None }
    }

    /// Handles what is ready, waiting at most `timeout` (whole milliseconds, rounded down: the
    /// open loop sleeps the rest) for it; every request that ended goes to `done`.
    pub fn poll(&mut self, timeout: Duration, mut done: impl FnMut(Pending<T>, Outcome)) -> io::Result<()> {
        // mio rounds a timeout up to whole milliseconds; a whole one stays as it is.
        let timeout = Duration::from_millis(u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX));
        let mut events = std::mem::replace(&mut self.events, Events::with_capacity(0));
        let waited = self.poll.poll(&mut events, Some(timeout));
        if let Err(e) = waited {
            self.events = events;
            return if e.kind() == io::ErrorKind::Interrupted { Ok(()) } else { Err(e) };
        }
        for event in &events {
            if let Some((pending, outcome)) = self.handle(event) {
                done(pending, outcome);
            }
        }
        self.events = events;
        Ok(())
    }

    /// Keeps `spare` idle connections to `target` (counting those being opened), opening the
    /// missing ones without waiting for them.
    pub fn keep_spare(&mut self, target: usize, spare: usize) {
        let endpoint = &self.endpoints[target];
        if endpoint.connect_failed_at.is_some_and(|at| at.elapsed() < CONNECT_BACKOFF) {
            return;
        }
        let missing = spare.saturating_sub(endpoint.idle.len() + endpoint.opening);
        for _ in 0..missing {
            let Ok((stream, connected)) = start_connect(self.endpoints[target].address) else {
                self.endpoints[target].connect_failed_at = Some(Instant::now());
                return;
            };
            let state = if connected { State::Idle { since: Instant::now() } } else { State::Connecting(None) };
            match self.insert(stream, target, state, !connected) {
                Ok(token) if connected => self.endpoints[target].idle.push(token),
                Ok(_) => self.endpoints[target].opening += 1,
                Err(_) => return,
            }
        }
    }

    /// Fails (`timeout`) every request handed over `timeout` ago or earlier, closing its
    /// connection.
    pub fn expire(&mut self, timeout: Duration, mut done: impl FnMut(Pending<T>, Outcome)) {
        let now = Instant::now();
        for token in 0..self.connections.len() {
            let expired = self.connections[token].as_ref().is_some_and(|c| match c.state {
                State::Busy(p) | State::Connecting(Some(p)) => now.saturating_duration_since(p.started) >= timeout,
                _ => false,
            });
            if expired && let Some(pending) = self.remove(token) {
                done(pending, Outcome::Failed("timeout".into(), now));
            }
        }
    }

    /// Gives up on every request in flight: each goes to `done` as `interrupted`.
    pub fn abandon(&mut self, mut done: impl FnMut(Pending<T>, Outcome)) {
        let now = Instant::now();
        for token in 0..self.connections.len() {
            if let Some(pending) = self.remove(token) {
                done(pending, Outcome::Failed("interrupted".into(), now));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read as _, Write as _};
    use std::net::TcpListener;

    /// A server on a thread: on each accepted connection, `answer` gets the number of the request
    /// just read and says what to write back (`None` closes the connection).
    fn server(answer: fn(usize) -> Option<&'static [u8]>) -> String {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { return };
                std::thread::spawn(move || {
                    let mut buffer = [0u8; 4096];
                    for n in 0.. {
                        if !matches!(stream.read(&mut buffer), Ok(read) if read > 0) {
                            return;
                        }
                        match answer(n) {
                            Some(bytes) => {
                                let _ = stream.write_all(bytes);
                            }
                            None => return,
                        }
                    }
                });
            }
        });
        url
    }

    fn get(out: &mut Vec<u8>, host: &str) {
        http1::encode(out, "GET", "/orders/1", host, "test/1", "", None);
    }

    /// Polls until one request ends (at most a second).
    fn outcome(wire: &mut Wire<u32>) -> (u32, Outcome) {
        let mut ended = None;
        let until = Instant::now() + Duration::from_secs(1);
        while ended.is_none() && Instant::now() < until {
            wire.poll(Duration::from_millis(10), |p, o| ended = Some((p.tag, o))).expect("poll");
        }
        ended.expect("an outcome within a second")
    }

    fn pending(tag: u32) -> Pending<u32> {
        Pending { tag, started: Instant::now() }
    }

    #[test]
    fn answers_come_back_with_their_status_and_the_connection_carries_the_next_request() {
        let url = server(|_| Some(b"HTTP/1.1 201 Created\r\ncontent-length: 2\r\n\r\nok"));
        let mut wire = Wire::new(&[url]).expect("wire");
        let before = Instant::now();
        for tag in [1, 2] {
            wire.send(0, pending(tag), get).map_err(|(_, o)| o).expect("sent");
            assert_eq!(wire.in_flight(0), 1);
            let (ended, result) = outcome(&mut wire);
            let Outcome::Answer { status, arrived } = result else { panic!("{result:?}") };
            assert_eq!((ended, status), (tag, 201));
            assert!(arrived >= before && arrived <= Instant::now(), "the kernel's time of arrival");
            assert_eq!(wire.in_flight(0), 0);
        }
        assert_eq!(wire.figures(0).opened, 1, "one keep-alive connection for both");
    }

    #[test]
    fn a_refused_connection_fails_its_request_without_blocking() {
        let port = TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port();
        let mut wire = Wire::new(&[format!("http://127.0.0.1:{port}")]).expect("wire");
        let result = match wire.send(0, pending(5), get) {
            Err((p, o)) => (p.tag, o),
            Ok(()) => outcome(&mut wire),
        };
        assert!(matches!(&result, (5, Outcome::Failed(why, _)) if why.starts_with("connect: ")), "{result:?}");
        assert_eq!(wire.in_flight(0), 0);
        wire.keep_spare(0, 2);
        assert_eq!(wire.figures(0).opened, 1, "no spares right after a refusal");
    }

    #[test]
    fn a_server_that_closes_fails_the_request_in_flight() {
        let url = server(|_| None);
        let mut wire = Wire::new(&[url]).expect("wire");
        wire.send(0, pending(3), get).map_err(|(_, o)| o).expect("sent");
        let (tag, result) = outcome(&mut wire);
        assert_eq!(tag, 3);
        assert!(matches!(&result, Outcome::Failed(why, _) if why == "closed by the server"), "{result:?}");
        assert_eq!(wire.busy(), 0);
    }

    #[test]
    fn a_request_past_its_timeout_expires_and_one_still_waiting_is_abandoned() {
        // Never accepted, never answered: the kernel completes the handshake and holds the bytes.
        let silent = TcpListener::bind("127.0.0.1:0").expect("bind");
        let mut wire = Wire::new(&[format!("http://{}", silent.local_addr().expect("addr"))]).expect("wire");
        wire.send(0, pending(1), get).map_err(|(_, o)| o).expect("sent");
        wire.poll(Duration::from_millis(10), |_, o| panic!("no answer: {o:?}")).expect("poll");
        wire.expire(Duration::from_secs(5), |_, o| panic!("not yet: {o:?}"));
        std::thread::sleep(Duration::from_millis(30));
        let mut expired = Vec::new();
        wire.expire(Duration::from_millis(20), |p, o| expired.push((p.tag, o)));
        assert!(matches!(expired.as_slice(), [(1, Outcome::Failed(why, _))] if why == "timeout"), "{expired:?}");
        assert_eq!(wire.busy(), 0);
        wire.send(0, pending(2), get).map_err(|(_, o)| o).expect("sent");
        let mut abandoned = Vec::new();
        wire.abandon(|p, o| abandoned.push((p.tag, o)));
        assert!(matches!(abandoned.as_slice(), [(2, Outcome::Failed(why, _))] if why == "interrupted"));
        assert_eq!((wire.busy(), wire.figures(0).opened), (0, 2), "the expired connection was not reused");
    }

    #[test]
    fn spare_connections_are_opened_ahead_and_used() {
        let url = server(|_| Some(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n"));
        let mut wire = Wire::new(&[url]).expect("wire");
        wire.keep_spare(0, 2);
        wire.poll(Duration::from_millis(50), |_, o| panic!("{o:?}")).expect("poll");
        assert_eq!(wire.figures(0).opened, 2);
        wire.keep_spare(0, 2);
        assert_eq!(wire.figures(0).opened, 2, "two spares already");
        wire.send(0, pending(1), get).map_err(|(_, o)| o).expect("sent");
        assert!(matches!(outcome(&mut wire), (1, Outcome::Answer { status: 200, .. })));
        assert_eq!(wire.figures(0).opened, 2, "the request took a spare");
    }
}
