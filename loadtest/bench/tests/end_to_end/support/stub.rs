//! A stand-in for an order service, for tests of the load generators: HTTP/1.1 with keep-alive on
//! a loopback port, answering every route of the API after a fixed delay (so latency is that
//! delay, whatever the machine does) with the status the endpoint succeeds with, and recording
//! every request it got. No database behind it.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};

/// One request as the stub saw it.
#[derive(Debug, Clone)]
pub struct Seen {
    pub method: String,
    pub path: String,
    pub content_type: Option<String>,
    pub body: Vec<u8>,
    /// When its last byte arrived.
    pub at: Instant,
}

pub struct Stub {
    pub url: String,
    pub seen: Arc<Mutex<Vec<Seen>>>,
}

impl Stub {
    pub fn requests(&self) -> Vec<Seen> {
        self.seen.lock().expect("lock").clone()
    }
}

/// The status a real service answers `method path` with when all goes well; 404 for what is no
/// route of the API.
pub fn status_for(method: &str, path: &str) -> u16 {
    let route = path.split('?').next().unwrap_or(path);
    let parts: Vec<&str> = route.trim_start_matches('/').split('/').collect();
    let id = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_digit());
    match (method, parts.as_slice()) {
        ("GET", ["orders", n]) if id(n) => 200,
        ("GET", ["customers", n, "orders"] | ["products", n, "orders"]) if id(n) => 200,
        ("POST", ["orders"]) => 201,
        ("PATCH", ["orders", n, "status"]) if id(n) => 200,
        _ => 404,
    }
}

async fn serve(mut socket: TcpStream, delay: Duration, seen: Arc<Mutex<Vec<Seen>>>) {
    let mut buffer: Vec<u8> = Vec::new();
    loop {
        // Read a whole request: the head, then Content-Length bytes of body.
        let (head, request) = loop {
            let mut headers = [httparse::EMPTY_HEADER; 32];
            let mut parsed = httparse::Request::new(&mut headers);
            if let Ok(httparse::Status::Complete(head)) = parsed.parse(&buffer) {
                let header = |name: &str| {
                    parsed
                        .headers
                        .iter()
                        .find(|h| h.name.eq_ignore_ascii_case(name))
                        .map(|h| String::from_utf8_lossy(h.value).into_owned())
                };
                let length: usize = header("content-length").and_then(|l| l.parse().ok()).unwrap_or(0);
                if buffer.len() >= head + length {
                    let request = Seen {
                        method: parsed.method.unwrap_or("").to_owned(),
                        path: parsed.path.unwrap_or("").to_owned(),
                        content_type: header("content-type"),
                        body: buffer[head..head + length].to_vec(),
                        at: Instant::now(),
                    };
                    break (head + length, request);
                }
            }
            let mut chunk = [0u8; 8192];
            match socket.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buffer.extend_from_slice(&chunk[..n]),
            }
        };
        buffer.drain(..head);
        let status = status_for(&request.method, &request.path);
        seen.lock().expect("lock").push(request);
        tokio::time::sleep(delay).await;
        let body = r#"{"ok":true}"#;
        let answer = format!(
            "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        );
        if socket.write_all(answer.as_bytes()).await.is_err() {
            return;
        }
    }
}

/// Starts a stub on a free loopback port; it serves until the runtime ends.
pub async fn start(delay: Duration) -> Stub {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind a loopback port");
    let url = format!("http://{}", listener.local_addr().expect("address"));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let recorded = seen.clone();
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            let _ = socket.set_nodelay(true);
            tokio::spawn(serve(socket, delay, recorded.clone()));
        }
    });
    Stub { url, seen }
}

/// A data set manifest with these id ranges (no database holds it: the stub needs none).
pub fn manifest(path: &std::path::Path, orders: u64) {
    let range = |max: u64| serde_json::json!({"min": 1, "max": max});
    let manifest = serde_json::json!({
        "format": 1, "seed": 1, "orders": orders, "customers": orders / 10, "products": orders / 10,
        "order_ids": range(orders), "customer_ids": range(orders / 10), "product_ids": range(orders / 10),
        "items_per_order": 3, "note_bytes": 200, "approx_doc_bytes": 800,
        "created_at": "2026-12-01T00:00:00.000Z", "targets": {}
    });
    std::fs::write(path, manifest.to_string()).expect("write the manifest");
}
