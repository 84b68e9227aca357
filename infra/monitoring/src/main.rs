//! `mongo-serverstatus-exporter`: serves `GET /metrics` with the MongoDB server's `serverStatus`
//! (and on a replica set member its `replSetGetStatus`), read through the official driver at every
//! scrape and named the way Percona's `mongodb_exporter` names them (`naming`), so the project's
//! dashboard reads this exporter on the local stack and Percona's on the droplets alike. Debian's `prometheus-mongodb-exporter` is a
//! 2018 build that cannot talk to MongoDB 6.0, and no maintained exporter installs from the
//! registries this project uses; this is the stand-in (see infra/monitoring/README.md).

mod exposition;
mod naming;

use anyhow::{Context, Result};
use clap::Parser;
use mongodb::Client;
use mongodb::bson::doc;
use std::time::Duration;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};

#[derive(Debug, Parser)]
#[command(version, about = "MongoDB serverStatus as Prometheus metrics, with Percona mongodb_exporter's names")]
struct Config {
    /// The server to read (a connection string of the official driver).
    #[arg(long, env = "MONGODB_URI", default_value = "mongodb://127.0.0.1:27017")]
    mongodb_uri: String,
    /// Where to serve /metrics (Percona's exporter uses port 9216).
    #[arg(long, env = "LISTEN_ADDR", default_value = "127.0.0.1:9216")]
    listen: String,
    /// How long one scrape may wait for the server.
    #[arg(long, default_value_t = 3000)]
    timeout_ms: u64,
}

/// The longest request head read before answering.
const MAX_REQUEST_HEAD: usize = 8192;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<()> {
    let config = Config::parse();
    let client =
        Client::with_uri_str(&config.mongodb_uri).await.context("MONGODB_URI is not a usable connection string")?;
    let listener =
        TcpListener::bind(&config.listen).await.with_context(|| format!("listening on {}", config.listen))?;
    eprintln!("mongo-serverstatus-exporter: serving http://{}/metrics", listener.local_addr()?);
    let timeout = Duration::from_millis(config.timeout_ms);
    loop {
        let (stream, _) = listener.accept().await.context("accepting a connection")?;
        let client = client.clone();
        tokio::spawn(async move {
            if let Err(error) = answer(stream, &client, timeout).await {
                eprintln!("mongo-serverstatus-exporter: {error:#}");
            }
        });
    }
}

/// Answers one request on `stream` and closes it.
async fn answer(mut stream: TcpStream, client: &Client, timeout: Duration) -> Result<()> {
    let mut head = Vec::new();
    let mut buffer = [0_u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < MAX_REQUEST_HEAD {
        let read = tokio::time::timeout(timeout, stream.read(&mut buffer)).await.context("reading the request")??;
        if read == 0 {
            break;
        }
        head.extend_from_slice(&buffer[..read]);
    }
    let request_line = String::from_utf8_lossy(&head).lines().next().unwrap_or_default().to_owned();
    let (status, content_type, body) = match request_line.split_whitespace().take(2).collect::<Vec<_>>()[..] {
        ["GET", "/metrics"] => ("200 OK", "text/plain; version=0.0.4; charset=utf-8", metrics(client, timeout).await),
        ["GET", "/"] => ("200 OK", "text/plain; charset=utf-8", "mongo-serverstatus-exporter: see /metrics\n".into()),
        _ => ("404 Not Found", "text/plain; charset=utf-8", "not found: GET /metrics\n".into()),
    };
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(response.as_bytes()).await.context("writing the answer")?;
    stream.shutdown().await.ok();
    Ok(())
}

/// `replSetGetStatus`'s codes when the server is no replica set member (yet): no samples then.
const NO_REPLICA_SET: [i32; 2] = [76, 94];

/// The metrics text now: `serverStatus` named (and `replSetGetStatus`, on a replica set member),
/// or only `mongodb_up 0` when the server did not answer.
async fn metrics(client: &Client, timeout: Duration) -> String {
    let status = tokio::time::timeout(timeout, client.database("admin").run_command(doc! {"serverStatus": 1})).await;
    match status {
        Ok(Ok(document)) => {
            let mut samples = naming::server_status_samples(&document);
            samples.extend(replica_set_samples(client, timeout).await);
            exposition::render(&samples, true)
        }
        Ok(Err(error)) => {
            eprintln!("mongo-serverstatus-exporter: serverStatus failed: {error}");
            exposition::render(&[], false)
        }
        Err(_) => {
            eprintln!("mongo-serverstatus-exporter: serverStatus took longer than {timeout:?}");
            exposition::render(&[], false)
        }
    }
}

/// The member's `replSetGetStatus` named, as Percona names it; nothing on a standalone server.
async fn replica_set_samples(client: &Client, timeout: Duration) -> Vec<naming::Sample> {
    let admin = client.database("admin");
    match tokio::time::timeout(timeout, admin.run_command(doc! {"replSetGetStatus": 1})).await {
        Ok(Ok(document)) => naming::replica_set_samples(&document),
        Ok(Err(error)) => {
            let code = match *error.kind {
                mongodb::error::ErrorKind::Command(ref command) => Some(command.code),
                _ => None,
            };
            if !code.is_some_and(|code| NO_REPLICA_SET.contains(&code)) {
                eprintln!("mongo-serverstatus-exporter: replSetGetStatus failed: {error}");
            }
            Vec::new()
        }
        Err(_) => {
            eprintln!("mongo-serverstatus-exporter: replSetGetStatus took longer than {timeout:?}");
            Vec::new()
        }
    }
}
