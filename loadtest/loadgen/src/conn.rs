//! The closed loop's HTTP/1.1 to one target (the open loop has `wire`), over keep-alive
//! connections: an idle connection is reused, a new one is opened when none is idle, and a request
//! never shares a connection with another in flight (no pipelining), so a target has at most as
//! many connections as requests in flight. The task
//! that sends a request writes it and reads its answer itself (`http1`), with no connection task
//! or channel between them, and takes the kernel's time of arrival of the answer's last bytes
//! (`stamp`). Everything runs on the generator's one thread.

use super::http1::{self, Parsed};
use super::stamp::{self, Clock};
use std::cell::{Cell, RefCell};
use std::io;
use std::os::fd::AsRawFd as _;
use std::time::{Duration, Instant};
use tokio::io::Interest;
use tokio::net::TcpStream;

pub const AGENT: &str = "orders-bench-load/1";

/// A connection idle for longer than this is checked before it is reused (the server may have
/// closed it meanwhile, e.g. a restarted service).
const CHECK_IDLE_AFTER: Duration = Duration::from_secs(1);

struct Connection {
    stream: TcpStream,
    /// What has been read: `buffer[..filled]` (the rest is room for the next read).
    buffer: Vec<u8>,
    filled: usize,
    /// The request being written.
    request: Vec<u8>,
    idle_since: Instant,
    /// When the bytes of the last read arrived (kernel timestamp, wall clock), if known.
    arrived: Option<Duration>,
}

/// A response: its status and when its last bytes arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Answer {
    pub status: u16,
    pub arrived: Instant,
}

impl Connection {
    async fn write_all(&self, mut bytes: &[u8]) -> io::Result<()> {
        while !bytes.is_empty() {
            match self.stream.try_write(bytes) {
                Ok(written) => bytes = &bytes[written..],
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => self.stream.writable().await?,
                Err(error) => return Err(error),
            }
        }
        Ok(())
    }

    /// Reads until the buffer holds a whole response; returns it and drops its bytes.
    async fn read_response(&mut self) -> Result<http1::Complete, String> {
        loop {
            if self.filled > 0
                && let Parsed::Complete(complete) = http1::parse(&self.buffer[..self.filled])?
            {
                self.buffer.copy_within(complete.length..self.filled, 0);
                self.filled -= complete.length;
                if self.filled == 0 {
                    // All read: the next answer will announce itself. Without this the runtime
                    // would still take the socket for readable and the next read would first
                    // come back empty (one more system call per request).
                    let _ = self.stream.try_io(Interest::READABLE, || Err::<(), _>(io::ErrorKind::WouldBlock.into()));
                }
                return Ok(complete);
            }
            if self.filled == self.buffer.len() {
                self.buffer.resize(self.buffer.len() * 2, 0);
            }
            let fd = self.stream.as_raw_fd();
            let read = loop {
                let room = &mut self.buffer[self.filled..];
                match self.stream.try_io(Interest::READABLE, || stamp::receive(fd, room)) {
                    Err(error) if error.kind() == io::ErrorKind::WouldBlock => {
                        if let Err(error) = self.stream.readable().await {
                            break Err(error);
                        }
                    }
                    other => break other,
                }
            };
            match read {
                Ok((0, _)) => return Err("closed by the server".into()),
                Ok((n, arrived)) => {
                    self.filled += n;
                    self.arrived = arrived;
                }
                Err(error) => return Err(format!("read: {}", error.kind())),
            }
        }
    }

    /// Still open and quiet (a connection the server closed reads as end of file).
    fn alive(&self) -> bool {
        let mut probe = [0u8; 1];
        matches!(self.stream.try_read(&mut probe), Err(e) if e.kind() == io::ErrorKind::WouldBlock)
    }
}

/// One service under load.
pub struct Target {
    pub name: String,
    /// `http://127.0.0.1:8080`, as given.
    pub url: String,
    authority: String,
    idle: RefCell<Vec<Connection>>,
    clock: Clock,
    pub connections_opened: Cell<u64>,
    /// Answers the kernel gave no arrival time for (timed when read instead).
    pub untimed_answers: Cell<u64>,
}

impl Target {
    /// `url`: `http://host:port` (no path, no TLS).
    pub fn new(name: &str, url: &str) -> anyhow::Result<Self> {
        let authority = super::http1::authority(url).map_err(|e| anyhow::anyhow!("target {name}: {e}"))?;
        let url = url.trim_end_matches('/');
        Ok(Self {
            name: name.to_owned(),
            url: url.to_owned(),
            authority,
            idle: RefCell::new(Vec::new()),
            clock: Clock::now(),
            connections_opened: Cell::new(0),
            untimed_answers: Cell::new(0),
        })
    }

    async fn connect(&self) -> Result<Connection, String> {
        let stream = TcpStream::connect(&self.authority).await.map_err(|e| format!("connect: {}", e.kind()))?;
        let _ = stream.set_nodelay(true);
        stamp::enable(&stream);
        self.connections_opened.set(self.connections_opened.get() + 1);
        Ok(Connection {
            stream,
            buffer: vec![0; 16 * 1024],
            filled: 0,
            request: Vec::with_capacity(1024),
            idle_since: Instant::now(),
            arrived: None,
        })
    }

    /// An idle connection that is still open, else a new one.
    async fn connection(&self) -> Result<Connection, String> {
        loop {
            let Some(connection) = self.idle.borrow_mut().pop() else { break };
            if connection.idle_since.elapsed() < CHECK_IDLE_AFTER || connection.alive() {
                return Ok(connection);
            }
        }
        self.connect().await
    }

    /// Opens `n` connections ahead of the first requests.
    pub async fn warm_up(&self, n: usize) -> Result<(), String> {
        for _ in 0..n {
            let connection = self.connect().await?;
            self.idle.borrow_mut().push(connection);
        }
        Ok(())
    }

    /// Sends one request (`extra`: more header lines) and reads the whole answer; its status and
    /// time of arrival, or the failure's kind.
    pub async fn send(&self, method: &str, path: &str, extra: &str, body: Option<&[u8]>) -> Result<Answer, String> {
        let mut connection = self.connection().await?;
        let mut request = std::mem::take(&mut connection.request);
        request.clear();
        http1::encode(&mut request, method, path, &self.authority, AGENT, extra, body);
        connection.write_all(&request).await.map_err(|e| format!("write: {}", e.kind()))?;
        connection.request = request;
        let response = connection.read_response().await?;
        let arrived = match connection.arrived {
            Some(wall) => self.clock.instant(wall),
            None => {
                self.untimed_answers.set(self.untimed_answers.get() + 1);
                Instant::now()
            }
        };
        if !response.closing {
            connection.idle_since = Instant::now();
            self.idle.borrow_mut().push(connection);
        }
        Ok(Answer { status: response.status, arrived })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_http_base_urls_are_targets() {
        let target = Target::new("pg", "http://127.0.0.1:8080/").expect("target");
        assert_eq!((target.authority.as_str(), target.url.as_str()), ("127.0.0.1:8080", "http://127.0.0.1:8080"));
        assert_eq!(Target::new("x", "http://localhost").expect("target").authority, "localhost:80");
        for bad in ["https://127.0.0.1:8080", "127.0.0.1:8080", "http://", "http://h:1/api"] {
            assert!(Target::new("x", bad).is_err(), "{bad}");
        }
    }

    #[tokio::test(flavor = "current_thread")]
    async fn answers_are_read_whole_and_connections_reused() {
        use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        let server = tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.expect("accept");
            let mut seen = Vec::new();
            for answer in [
                &b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok"[..],
                b"HTTP/1.1 201 Created\r\ncontent-length: 0\r\n\r\n",
            ] {
                let mut buffer = [0u8; 1024];
                let n = socket.read(&mut buffer).await.expect("read");
                seen.push(String::from_utf8_lossy(&buffer[..n]).into_owned());
                // In two pieces, to be read across two reads.
                socket.write_all(&answer[..10]).await.expect("write");
                tokio::time::sleep(Duration::from_millis(5)).await;
                socket.write_all(&answer[10..]).await.expect("write");
            }
            seen
        });
        let target = Target::new("t", &url).expect("target");
        let started = Instant::now();
        let answer = target.send("GET", "/orders/1", "", None).await.expect("answer");
        assert_eq!(answer.status, 200);
        assert!(answer.arrived.duration_since(started) >= Duration::from_millis(5), "the second piece's arrival");
        assert_eq!(target.send("POST", "/orders", "", Some(b"{}")).await.map(|a| a.status), Ok(201));
        assert_eq!(target.connections_opened.get(), 1, "one keep-alive connection");
        let seen = server.await.expect("server");
        assert!(seen[0].starts_with("GET /orders/1 HTTP/1.1\r\n"), "{seen:?}");
        assert!(seen[1].ends_with("Content-Length: 2\r\n\r\n{}"), "{seen:?}");
    }
}
