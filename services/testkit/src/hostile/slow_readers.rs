//! Slow readers of large lists (issue 45): many connections ask at once for a list of large orders
//! and then read their answers a few kB at a time, with a small receive buffer so that the kernel
//! cannot take the answer off the service's hands; a reader answered 503 asks again, so a place
//! given back is taken at once. `large_orders` writes the orders to list;
//! `slow_readers` holds the readers and samples the service's resident memory meanwhile. The
//! test (`suite`) bounds the growth by what `MAX_IN_FLIGHT` and `MAX_LIST_BYTES` allow.

use crate::TestApp;
use orders_core::sample::order_body;
use serde_json::json;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpSocket;

/// The note of a large order: the largest the API accepts (256 KiB).
pub const LARGE_NOTE_BYTES: usize = 262_144;

/// Writes `count` orders of `customer` with a note of `LARGE_NOTE_BYTES` each (about 257 KiB of JSON).
pub async fn large_orders(base_url: &str, customer: u64, count: usize) {
    let app = TestApp::at(base_url.to_owned());
    let mut body = order_body(customer, [1, 2, 3]);
    body["note"] = json!("n".repeat(LARGE_NOTE_BYTES));
    for _ in 0..count {
        let created = app.post_json("/orders", &body).await;
        assert_eq!(created.status, 201, "a large order is written: {}", created.text);
    }
}

/// What the slow readers got, and the service's resident memory before and at its highest while
/// they read.
#[derive(Debug, Clone)]
pub struct SlowReaders {
    /// The status each reader got (0: no answer).
    pub statuses: Vec<u16>,
    /// Bytes read by all readers together.
    pub bytes_read: usize,
    pub resident_before: u64,
    pub resident_highest: u64,
}

impl SlowReaders {
    pub fn growth(&self) -> u64 {
        self.resident_highest.saturating_sub(self.resident_before)
    }

    pub fn answered(&self, status: u16) -> usize {
        self.statuses.iter().filter(|s| **s == status).count()
    }
}

/// How much a reader reads at a time, and how often.
const SIP: usize = 1024;
const SIP_EVERY: Duration = Duration::from_millis(100);
/// The readers' receive buffer (the kernel doubles it): small, so that the answer stays with the
/// service rather than in the reader's socket.
const RECEIVE_BUFFER: u32 = 4096;

/// `readers` connections send `GET {path}` at once and read slowly for `hold`, while the resident
/// memory of process `pid` is sampled every 50 ms; then they go away.
pub async fn slow_readers(addr: &str, pid: u32, path: &str, readers: usize, hold: Duration) -> SlowReaders {
    let addr: std::net::SocketAddr = addr.parse().expect("the service's address");
    let resident_before = super::process::memory(pid).resident;
    let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\n\r\n");
    let until = tokio::time::Instant::now() + hold;
    let tasks: Vec<_> = (0..readers)
        .map(|_| {
            let request = request.clone();
            tokio::spawn(async move { read_slowly(addr, request.as_bytes(), until).await })
        })
        .collect();
    let mut resident_highest = resident_before;
    while tokio::time::Instant::now() < until {
        resident_highest = resident_highest.max(super::process::memory(pid).resident);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (mut statuses, mut bytes_read) = (Vec::new(), 0);
    for task in tasks {
        let (status, read) = task.await.expect("reader task");
        statuses.push(status);
        bytes_read += read;
    }
    SlowReaders { statuses, bytes_read, resident_before, resident_highest }
}

/// One reader: the status of the answer it read (0 if none came) and the bytes it read before
/// `until`. An answer of 503 is asked again after `RETRY_AFTER_503`, on a new connection, until
/// `until`, so that every place given back is taken by another reader at once.
async fn read_slowly(addr: std::net::SocketAddr, request: &[u8], until: tokio::time::Instant) -> (u16, usize) {
    let mut last = (0, 0);
    loop {
        let got = ask_and_read_slowly(addr, request, until).await;
        if got.0 != 0 {
            last = got;
        }
        // No new try so close to the end that its answer could not come in time.
        if ![0, 503].contains(&got.0) || tokio::time::Instant::now() + RETRY_AFTER_503 * 3 >= until {
            return last;
        }
        tokio::time::sleep(RETRY_AFTER_503).await;
    }
}

const RETRY_AFTER_503: Duration = Duration::from_millis(200);

async fn ask_and_read_slowly(addr: std::net::SocketAddr, request: &[u8], until: tokio::time::Instant) -> (u16, usize) {
    let socket = TcpSocket::new_v4().expect("socket");
    socket.set_recv_buffer_size(RECEIVE_BUFFER).expect("receive buffer");
    let Ok(mut stream) = socket.connect(addr).await else { return (0, 0) };
    if stream.write_all(request).await.is_err() {
        return (0, 0);
    }
    let (mut head, mut read) = (Vec::new(), 0);
    let mut buffer = [0_u8; SIP];
    let status = |head: &[u8]| {
        std::str::from_utf8(head.get(9..12).unwrap_or_default()).ok().and_then(|code| code.parse().ok()).unwrap_or(0)
    };
    loop {
        let sip = tokio::time::timeout_at(until, stream.read(&mut buffer)).await;
        match sip {
            Ok(Ok(n)) if n > 0 => {
                read += n;
                if head.len() < 64 {
                    head.extend_from_slice(&buffer[..n]);
                }
            }
            _ => break,
        }
        if status(&head) == 503 || tokio::time::Instant::now() + SIP_EVERY >= until {
            break;
        }
        tokio::time::sleep(SIP_EVERY).await;
    }
    (status(&head), read)
}
