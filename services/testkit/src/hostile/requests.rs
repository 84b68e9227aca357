//! Requests no client of the API sends, over raw HTTP/1.1 so nothing in between tidies them up:
//! invented methods (short and very long), a header too large, too many headers, a path too long,
//! a query string too long, and one just under hyper's limit holding thousands of parameters. `odd_requests` sends each on a fresh
//! connection and records what came back: a status, or 0 when the service closed the connection
//! without one.

use crate::faults::scenarios::exchange;
use std::time::Duration;
use tokio::net::TcpStream;

/// One odd request and its outcome.
#[derive(Debug, Clone)]
pub struct OddRequest {
    pub name: &'static str,
    /// The status answered; 0 when the connection was closed without an answer.
    pub status: u16,
}

fn requests(addr: &str) -> Vec<(&'static str, Vec<u8>)> {
    let host = format!("Host: {addr}\r\n");
    let get = |target: &str, headers: &str| format!("GET {target} HTTP/1.1\r\n{host}{headers}\r\n").into_bytes();
    let long_method = "FROB".repeat(2_500);
    let many_headers: String = (0..150).map(|i| format!("X-Header-{i}: {i}\r\n")).collect();
    let query: String = (0..8_000).map(|i| format!("p{i}=1&")).collect();
    vec![
        ("an invented method on an order", format!("FROB /orders/1 HTTP/1.1\r\n{host}\r\n").into_bytes()),
        ("an invented method on no route", format!("BREW /coffee HTTP/1.1\r\n{host}\r\n").into_bytes()),
        ("a 10,000-byte method", format!("{long_method} /orders HTTP/1.1\r\n{host}\r\n").into_bytes()),
        ("a 600,000-byte header", get("/healthz", &format!("X-Big: {}\r\n", "a".repeat(600_000)))),
        ("150 headers", get("/healthz", &many_headers)),
        ("a 70,000-byte path", get(&format!("/orders/{}", "1".repeat(70_000)), "")),
        ("a query of 8,000 parameters", get(&format!("/customers/1/orders?{query}limit=5"), "")),
        ("limit given 7,000 times", get(&format!("/customers/1/orders?{}", "limit=5&".repeat(7_000)), "")),
        ("a 100,000-byte query", get(&format!("/customers/1/orders?x={}", "y".repeat(100_000)), "")),
    ]
}

/// Sends every odd request on a connection of its own (see the module notes).
pub async fn odd_requests(addr: &str) -> Vec<OddRequest> {
    let mut outcomes = Vec::new();
    for (name, request) in requests(addr) {
        let mut stream = TcpStream::connect(addr).await.expect("connect");
        let answered = tokio::time::timeout(Duration::from_secs(10), exchange(&mut stream, &request)).await;
        let status = match answered {
            Ok(Ok((status, _))) => status,
            Ok(Err(_)) => 0,
            Err(_elapsed) => u16::MAX, // neither answered nor closed
        };
        outcomes.push(OddRequest { name, status });
    }
    outcomes
}
