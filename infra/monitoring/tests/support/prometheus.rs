//! A client of a real Prometheus' HTTP API (`/api/v1/query`, `/api/v1/label/__name__/values`,
//! `/api/v1/targets`) over a plain loopback connection, and the configuration the tests run it
//! with: `infra/local/monitor.sh`, which starts the exporters and Prometheus exactly as a user
//! does, on ports and in a folder of the test's own.

use serde_json::Value;
use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::time::Duration;

pub struct Prometheus {
    pub port: u16,
}

/// One series of an instant query's answer: its labels and its value.
#[derive(Debug, Clone)]
pub struct Point {
    pub labels: Value,
    pub value: f64,
}

impl Prometheus {
    pub fn remote_write_url(&self) -> String {
        format!("http://127.0.0.1:{}/api/v1/write", self.port)
    }

    fn get(&self, path_and_query: &str) -> Value {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).expect("connect to Prometheus");
        stream.set_read_timeout(Some(Duration::from_secs(20))).expect("timeout");
        write!(stream, "GET {path_and_query} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").expect("send");
        let mut answer = String::new();
        stream.read_to_string(&mut answer).expect("read the answer");
        let body = answer.split_once("\r\n\r\n").map_or("", |(_, body)| body);
        let value: Value = serde_json::from_str(body).unwrap_or_else(|e| panic!("{path_and_query}: {e}: {answer}"));
        assert_eq!(value["status"], "success", "{path_and_query}: {value}");
        value["data"].clone()
    }

    /// The instant vector of `expr` at `time` (Unix seconds).
    pub fn query(&self, expr: &str, time: f64) -> Vec<Point> {
        let data = self.get(&format!("/api/v1/query?query={}&time={time:.3}", encode(expr)));
        assert_eq!(data["resultType"], "vector", "{expr}: {data}");
        data["result"]
            .as_array()
            .expect("result")
            .iter()
            .map(|series| Point {
                labels: series["metric"].clone(),
                value: series["value"][1].as_str().and_then(|v| v.parse().ok()).unwrap_or(f64::NAN),
            })
            .collect()
    }

    /// The one value of `expr` at `time` (which must give exactly one series).
    pub fn value(&self, expr: &str, time: f64) -> f64 {
        let points = self.query(expr, time);
        assert_eq!(points.len(), 1, "{expr} at {time}: {points:?}");
        points[0].value
    }

    /// Every metric name Prometheus holds.
    pub fn metric_names(&self) -> Vec<String> {
        let data = self.get("/api/v1/label/__name__/values");
        data.as_array().expect("names").iter().filter_map(|v| v.as_str().map(str::to_owned)).collect()
    }

    /// The scrape targets that are not up, with their last error.
    pub fn targets_down(&self) -> Vec<String> {
        let data = self.get("/api/v1/targets");
        data["activeTargets"]
            .as_array()
            .expect("targets")
            .iter()
            .filter(|t| t["health"] != "up")
            .map(|t| format!("{} {} {}", t["labels"]["job"], t["scrapeUrl"], t["lastError"]))
            .collect()
    }
}

/// Percent-encoding of a query parameter.
fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}
