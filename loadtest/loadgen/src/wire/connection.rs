//! One connection of `Wire`: its state (idle, connecting, carrying a request), the non-blocking
//! connect, and writing a request and reading its answer as far as the kernel allows at each
//! event. Apart from `Wire`'s bookkeeping of many connections on one poll, so that what one socket
//! does can be read on its own.

use super::Pending;
use crate::http1::{self, Parsed};
use crate::stamp;
use std::io::{self, Write as _};
use std::net::{SocketAddr, TcpStream};
use std::os::fd::AsRawFd as _;
use std::time::{Duration, Instant};

pub(super) enum State<T> {
    Idle {
        since: Instant,
    },
    /// Connecting; with the request to write once connected, if one is waiting.
    Connecting(Option<Pending<T>>),
    Busy(Pending<T>),
}

pub(super) struct Connection<T> {
    pub(super) stream: TcpStream,
    pub(super) target: usize,
    pub(super) state: State<T>,
    /// The request's bytes and how many the kernel took so far.
    pub(super) out: Vec<u8>,
    pub(super) written: usize,
    /// Whether the poll watches it for being writable (a connect or a write not done yet).
    pub(super) watching_writes: bool,
    /// What has been read of the answer: `buffer[..filled]`.
    pub(super) buffer: Vec<u8>,
    pub(super) filled: usize,
    /// When the bytes of the last read arrived (kernel timestamp, wall clock), if known.
    pub(super) arrived: Option<Duration>,
}

/// A non-blocking connect: the socket, and whether it is connected already.
pub(super) fn start_connect(address: SocketAddr) -> io::Result<(TcpStream, bool)> {
    use socket2::{Domain, Protocol, SockAddr, Socket, Type};
    let socket = Socket::new(Domain::for_address(address), Type::STREAM, Some(Protocol::TCP))?;
    socket.set_nonblocking(true)?;
    match socket.connect(&SockAddr::from(address)) {
        Ok(()) => Ok((socket.into(), true)),
        Err(error) if error.raw_os_error() == Some(libc::EINPROGRESS) => Ok((socket.into(), false)),
        Err(error) => Err(error),
    }
}

/// The error a connect in progress ended with, if any (`SO_ERROR`).
pub(super) fn connect_error(stream: &TcpStream) -> Option<io::Error> {
    stream.take_error().unwrap_or_else(Some)
}

/// Still open and quiet (a connection the server closed reads as end of file). The socket is
/// non-blocking, so the peek never waits.
pub(super) fn alive(stream: &TcpStream) -> bool {
    let mut probe = [0u8; 1];
    matches!(stream.peek(&mut probe), Err(error) if error.kind() == io::ErrorKind::WouldBlock)
}

/// What reading a busy connection came to.
pub(super) enum Read {
    /// The answer is not whole yet.
    Waiting,
    /// A whole answer; `wall`: the kernel's time of its last bytes.
    Answer {
        status: u16,
        closing: bool,
        wall: Option<Duration>,
    },
    Failed(String),
}

/// Reads what arrived on `connection` until its answer is whole or nothing more is there.
pub(super) fn read_answer<T>(connection: &mut Connection<T>) -> Read {
    let fd = connection.stream.as_raw_fd();
    loop {
        if connection.filled == connection.buffer.len() {
            connection.buffer.resize(connection.buffer.len() * 2, 0);
        }
        match stamp::receive(fd, &mut connection.buffer[connection.filled..]) {
            Ok((0, _)) => return Read::Failed("closed by the server".into()),
            Ok((n, arrived)) => {
                connection.filled += n;
                if arrived.is_some() {
                    connection.arrived = arrived;
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Read::Waiting,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Read::Failed(format!("read: {}", e.kind())),
        }
        match http1::parse(&connection.buffer[..connection.filled]) {
            Err(why) => return Read::Failed(why),
            Ok(Parsed::Partial) => {}
            Ok(Parsed::Complete(complete)) => {
                // Anything beyond the answer was never asked for: the connection is not reused.
                // A full buffer may hide more bytes, which edge-triggered polling would not report.
                let closing = complete.closing
                    || connection.filled > complete.length
                    || connection.filled == connection.buffer.len();
                connection.filled = 0;
                return Read::Answer { status: complete.status, closing, wall: connection.arrived.take() };
            }
        }
    }
}

/// Writes what the kernel takes of `connection`'s request: true once all of it is written.
pub(super) fn write_request<T>(connection: &mut Connection<T>) -> Result<bool, String> {
    while connection.written < connection.out.len() {
        match connection.stream.write(&connection.out[connection.written..]) {
            Ok(n) => connection.written += n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(format!("write: {}", e.kind())),
        }
    }
    Ok(true)
}
