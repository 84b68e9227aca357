//! The few bytes of HTTP/1.1 the generator speaks: a request head written straight into a
//! reusable buffer, and the end of a response found in what has been read so far (`httparse` for
//! the head; the body by `Content-Length` or chunked encoding). No body is kept: the generator
//! only needs the status, and to know where the answer ends so the connection can carry the next
//! request.

use std::io::Write as _;

/// The `User-Agent` of every request.
pub const AGENT: &str = "orders-bench-load/1";

/// The `host:port` of a target's `http://host[:port][/]` (port 80 when none is given): the one
/// form of target both loops take (no path, no TLS).
pub fn authority(url: &str) -> anyhow::Result<String> {
    let url = url.trim_end_matches('/');
    let Some(authority) = url.strip_prefix("http://").filter(|a| !a.is_empty() && !a.contains(['/', ' '])) else {
        anyhow::bail!("\"{url}\" is not http://host:port");
    };
    Ok(if authority.contains(':') { authority.to_owned() } else { format!("{authority}:80") })
}

/// Appends a request with `body` (JSON) to `out`; `extra` is more header lines, each ending in CRLF.
pub fn encode(out: &mut Vec<u8>, method: &str, path: &str, host: &str, agent: &str, extra: &str, body: Option<&[u8]>) {
    // Writing into a Vec cannot fail.
    let _ = write!(out, "{method} {path} HTTP/1.1\r\nHost: {host}\r\nUser-Agent: {agent}\r\n");
    out.extend_from_slice(extra.as_bytes());
    if let Some(body) = body {
        let _ = write!(out, "Content-Type: application/json\r\nContent-Length: {}\r\n", body.len());
    }
    out.extend_from_slice(b"\r\n");
    if let Some(body) = body {
        out.extend_from_slice(body);
    }
}

/// A whole response at the start of the buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Complete {
    pub status: u16,
    /// Bytes of the buffer the response took (head and body).
    pub length: usize,
    /// The server will close the connection (`Connection: close` or HTTP/1.0).
    pub closing: bool,
}

/// What the bytes read so far hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Parsed {
    Complete(Complete),
    Partial,
}

/// Finds the end of the response that starts `buffer`; `Err` for bytes that are no HTTP/1.1
/// response, or one whose end cannot be told (no length and not chunked).
pub fn parse(buffer: &[u8]) -> Result<Parsed, String> {
    let mut headers = [httparse::EMPTY_HEADER; 32];
    let mut response = httparse::Response::new(&mut headers);
    let head = match response.parse(buffer).map_err(|e| format!("response: {e}"))? {
        httparse::Status::Partial => return Ok(Parsed::Partial),
        httparse::Status::Complete(head) => head,
    };
    let status = response.code.ok_or("response: no status")?;
    let mut closing = response.version == Some(0);
    let (mut length, mut chunked) = (None, false);
    for header in response.headers.iter() {
        if header.name.eq_ignore_ascii_case("content-length") {
            let text = std::str::from_utf8(header.value).map_err(|_| "response: bad Content-Length")?;
            length = Some(text.trim().parse::<usize>().map_err(|_| "response: bad Content-Length")?);
        } else if header.name.eq_ignore_ascii_case("transfer-encoding") {
            chunked = header.value.eq_ignore_ascii_case(b"chunked");
        } else if header.name.eq_ignore_ascii_case("connection") {
            closing |= header.value.eq_ignore_ascii_case(b"close");
        }
    }
    // No body: 1xx, 204 and 304 (a HEAD is never sent).
    let body = if status < 200 || status == 204 || status == 304 {
        Some(0)
    } else if chunked {
        match chunked_length(&buffer[head..])? {
            Some(length) => Some(length),
            None => return Ok(Parsed::Partial),
        }
    } else {
        Some(length.ok_or("response: neither Content-Length nor chunked")?)
    };
    let length = head + body.unwrap_or(0);
    if buffer.len() < length {
        return Ok(Parsed::Partial);
    }
    Ok(Parsed::Complete(Complete { status, length, closing }))
}

/// The length of a complete chunked body at the start of `body`, trailers included; `None` while
/// incomplete.
fn chunked_length(body: &[u8]) -> Result<Option<usize>, String> {
    let line_end = |from: usize| body[from..].windows(2).position(|w| w == b"\r\n").map(|p| from + p);
    let mut at = 0;
    loop {
        let Some(end) = line_end(at) else { return Ok(None) };
        let line = std::str::from_utf8(&body[at..end]).map_err(|_| "response: bad chunk size")?;
        let size = usize::from_str_radix(line.split(';').next().unwrap_or("").trim(), 16)
            .map_err(|_| "response: bad chunk size")?;
        at = end + 2;
        if size == 0 {
            // Trailers, each ending in CRLF, then an empty line.
            loop {
                let Some(end) = line_end(at) else { return Ok(None) };
                let empty = end == at;
                at = end + 2;
                if empty {
                    return Ok(Some(at));
                }
            }
        }
        at += size + 2;
        if at > body.len() {
            return Ok(None);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_target_is_http_host_and_port_with_80_by_default() {
        assert_eq!(authority("http://127.0.0.1:8080/").expect("url"), "127.0.0.1:8080");
        assert_eq!(authority("http://pg-app").expect("url"), "pg-app:80");
        for bad in ["https://h:1", "http://h:1/orders", "http://", "h:1"] {
            assert!(authority(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn requests_carry_host_agent_and_a_json_body() {
        let mut out = Vec::new();
        encode(&mut out, "PATCH", "/orders/7/status", "127.0.0.1:8080", "a/1", "", Some(br#"{"status":"paid"}"#));
        assert_eq!(
            String::from_utf8(out).expect("ascii"),
            "PATCH /orders/7/status HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nUser-Agent: a/1\r\nContent-Type: \
             application/json\r\nContent-Length: 17\r\n\r\n{\"status\":\"paid\"}"
        );
    }

    #[test]
    fn a_response_ends_after_its_content_length() {
        let whole = b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\ncontent-type: application/json\r\n\r\n{\"a\"}";
        for cut in 0..whole.len() {
            assert_eq!(parse(&whole[..cut]), Ok(Parsed::Partial), "{cut} bytes");
        }
        let mut two = whole.to_vec();
        two.extend_from_slice(b"HTTP/1.1 404");
        let complete = Complete { status: 200, length: whole.len(), closing: false };
        assert_eq!(parse(&two), Ok(Parsed::Complete(complete)), "the next response is left alone");
    }

    #[test]
    fn chunked_bodies_and_closing_connections_are_understood() {
        let whole = b"HTTP/1.1 503 Service Unavailable\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n\
                      4\r\nabcd\r\n3;x=y\r\nefg\r\n0\r\nx-t: 1\r\n\r\n";
        for cut in 0..whole.len() {
            assert_eq!(parse(&whole[..cut]), Ok(Parsed::Partial), "{cut} bytes");
        }
        assert_eq!(parse(whole), Ok(Parsed::Complete(Complete { status: 503, length: whole.len(), closing: true })));
        let empty = b"HTTP/1.1 204 No Content\r\n\r\n";
        assert_eq!(parse(empty), Ok(Parsed::Complete(Complete { status: 204, length: empty.len(), closing: false })));
    }

    #[test]
    fn what_is_not_a_response_is_an_error() {
        assert!(parse(b"GET / HTTP/1.1\r\n\r\n").is_err());
        assert!(parse(b"HTTP/1.1 200 OK\r\n\r\n").is_err(), "no length, not chunked");
        assert!(parse(b"HTTP/1.1 200 OK\r\ncontent-length: x\r\n\r\n").is_err());
        assert!(parse(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n").is_err());
    }
}
