//! `TestApp`: a service running inside the test process on a free loopback port (the same router,
//! layers and server the binaries use), and a small HTTP client whose replies carry the status,
//! headers and parsed JSON body, so tests read like the API table.

use orders_core::OrderStore;
use orders_http::{HttpConfig, Server, app};
use reqwest::Method;
use reqwest::header::HeaderMap;
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;

pub struct TestApp {
    pub base_url: String,
    client: reqwest::Client,
}

/// One HTTP answer: status, headers and the body parsed as JSON (`Value::Null` if it is not JSON).
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: HeaderMap,
    pub text: String,
    pub json: Value,
}

impl Reply {
    /// The `error.code` of an error body.
    pub fn error_code(&self) -> &str {
        self.json["error"]["code"].as_str().unwrap_or("")
    }
}

impl TestApp {
    /// Serves `store` on 127.0.0.1 with an ephemeral port until the test's runtime ends.
    pub async fn spawn<S: OrderStore>(store: S, config: HttpConfig) -> TestApp {
        let server = Server::bind(config.bind_addr, app(Arc::new(store), &config))
            .await
            .expect("bind a loopback port")
            .limits(config.connection_limits());
        let addr = server.local_addr().expect("local address");
        tokio::spawn(server.run(std::future::pending(), Duration::from_secs(1)));
        TestApp::at(format!("http://{addr}"))
    }

    /// A client for a service that is already running (for example a spawned binary).
    pub fn at(base_url: String) -> TestApp {
        let client = reqwest::Client::builder().timeout(Duration::from_secs(30)).build().expect("http client");
        TestApp { base_url, client }
    }

    pub async fn get(&self, path: &str) -> Reply {
        self.send(Method::GET, path, None, Vec::new()).await
    }

    pub async fn post_json(&self, path: &str, body: &Value) -> Reply {
        self.send(Method::POST, path, Some("application/json"), body.to_string().into_bytes()).await
    }

    pub async fn patch_json(&self, path: &str, body: &Value) -> Reply {
        self.send(Method::PATCH, path, Some("application/json"), body.to_string().into_bytes()).await
    }

    /// Any request, with raw body bytes and an optional content type.
    pub async fn send(&self, method: Method, path: &str, content_type: Option<&str>, body: Vec<u8>) -> Reply {
        let headers: Vec<(&str, &str)> = content_type.map(|value| ("content-type", value)).into_iter().collect();
        self.send_with(method, path, &headers, body).await
    }

    /// A JSON request with extra headers (`Prefer`, `Idempotency-Key`).
    pub async fn json_with(&self, method: Method, path: &str, headers: &[(&str, &str)], body: &Value) -> Reply {
        let mut all = vec![("content-type", "application/json")];
        all.extend_from_slice(headers);
        self.send_with(method, path, &all, body.to_string().into_bytes()).await
    }

    /// Any request, with raw body bytes and the given headers.
    pub async fn send_with(&self, method: Method, path: &str, headers: &[(&str, &str)], body: Vec<u8>) -> Reply {
        let mut request = self.client.request(method, format!("{}{path}", self.base_url)).body(body);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let response = request.send().await.expect("request reaches the service");
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let text = response.text().await.expect("response body");
        let json = serde_json::from_str(&text).unwrap_or(Value::Null);
        Reply { status, headers, text, json }
    }
}
