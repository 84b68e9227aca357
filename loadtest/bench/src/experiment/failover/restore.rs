//! What the failover changed on the cluster, kept where the experiment's Ctrl-C / SIGTERM path
//! finds it (`Ctx::undo`), so that an interrupted run puts it back as a finished one does: every
//! key of Patroni's dynamic configuration it set (the value `/config` had before, `null` when the
//! key was unset), MongoDB's `electionTimeoutMillis` when it set one, and a killed `mongod` not yet
//! started again (nothing else restarts one).

use super::members::{self, Victim};
use super::servers::Patroni;
use anyhow::{Context, Result};
use mongodb::bson::{Bson, doc};
use serde_json::Value;

/// The changes not yet put back.
#[derive(Debug, Clone, Default)]
pub struct Undo {
    patroni_urls: String,
    /// Each key set, with the value it had before (the first time it was set).
    patroni: Vec<(String, Value)>,
    /// The `mongod` killed and not yet seen started again.
    pub killed_mongod: Option<Victim>,
    /// MongoDB's replica-set URI and the `electionTimeoutMillis` it had before the run set one.
    election_timeout: Option<(String, Bson)>,
}

impl Undo {
    pub fn new(patroni_urls: &str) -> Self {
        Self { patroni_urls: patroni_urls.to_owned(), ..Self::default() }
    }

    /// Sets `key` in Patroni's `/config`, remembering the value it had first.
    pub async fn set(&mut self, patroni: &Patroni, key: &str, value: Value) -> Result<()> {
        if !self.patroni.iter().any(|(k, _)| k == key) {
            let before = patroni.get("/config").await?.get(key).cloned().unwrap_or(Value::Null);
            self.patroni.push((key.to_owned(), before));
        }
        patroni.set(key, value).await
    }

    /// Sets MongoDB's `electionTimeoutMillis` (`replSetReconfig`), remembering the value it had.
    pub async fn set_election_timeout(&mut self, uri: &str, ms: u32) -> Result<()> {
        let before = reconfig(uri, Bson::Int64(i64::from(ms))).await?;
        self.election_timeout.get_or_insert((uri.to_owned(), before));
        eprintln!("experiment: MongoDB's electionTimeoutMillis set to {ms} for the run");
        Ok(())
    }

    /// Puts everything back, saying each step on stderr; what cannot be put back is said too and
    /// stays listed (the first error is returned once every step was tried).
    pub async fn restore(&mut self) -> Result<()> {
        let mut first_error = None;
        if !self.patroni.is_empty() {
            let patroni = Patroni::new(&self.patroni_urls)?;
            let mut left = Vec::new();
            for (key, before) in std::mem::take(&mut self.patroni) {
                match patroni.set(&key, before.clone()).await {
                    Ok(()) => eprintln!("experiment: Patroni's {key} put back to {before}"),
                    Err(error) => {
                        eprintln!("experiment: putting Patroni's {key} back to {before} FAILED: {error:#}");
                        first_error.get_or_insert(error);
                        left.push((key, before));
                    }
                }
            }
            self.patroni = left;
        }
        if let Some((uri, before)) = self.election_timeout.take() {
            match reconfig(&uri, before.clone()).await {
                Ok(_) => eprintln!("experiment: MongoDB's electionTimeoutMillis put back to {before}"),
                Err(error) => {
                    eprintln!("experiment: putting MongoDB's electionTimeoutMillis back FAILED: {error:#}");
                    first_error.get_or_insert(error);
                    self.election_timeout = Some((uri, before));
                }
            }
        }
        if let Some(victim) = self.killed_mongod.take() {
            match members::restart(&victim).await {
                Ok(()) => eprintln!("experiment: the killed mongod of {} started again", victim.member),
                Err(error) => {
                    eprintln!("experiment: starting the killed mongod of {} again FAILED: {error:#}", victim.member);
                    first_error.get_or_insert(error);
                    self.killed_mongod = Some(victim);
                }
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    pub fn is_empty(&self) -> bool {
        self.patroni.is_empty() && self.killed_mongod.is_none() && self.election_timeout.is_none()
    }
}

/// Sets the set's `settings.electionTimeoutMillis` to `value` (the next config version); returns
/// the value it had.
async fn reconfig(uri: &str, value: Bson) -> Result<Bson> {
    let client = mongodb::Client::with_uri_str(uri).await.context("MongoDB client")?;
    let admin = client.database("admin");
    let got = admin.run_command(doc! {"replSetGetConfig": 1}).await.context("replSetGetConfig")?;
    let mut config = got.get_document("config").context("replSetGetConfig: no config")?.clone();
    let version = config.get_i32("version").map(i64::from).or_else(|_| config.get_i64("version")).context("version")?;
    config.insert("version", Bson::Int32(i32::try_from(version + 1).context("version")?));
    let mut settings = config.get_document("settings").cloned().unwrap_or_default();
    let before = settings.insert("electionTimeoutMillis", value).unwrap_or(Bson::Int64(10_000));
    config.insert("settings", settings);
    admin.run_command(doc! {"replSetReconfig": config}).await.context("replSetReconfig")?;
    Ok(before)
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::Json;
    use axum::extract::State;
    use serde_json::json;
    use std::sync::{Arc, Mutex};

    type Config = Arc<Mutex<Value>>;

    /// A Patroni `/config` that merges PATCHes (a `null` removes the key, as Patroni's does).
    async fn patroni(config: Value) -> (String, Config) {
        async fn get(State(c): State<Config>) -> Json<Value> {
            Json(c.lock().map(|c| c.clone()).unwrap_or_default())
        }
        async fn patch(State(c): State<Config>, Json(change): Json<Value>) -> Json<Value> {
            let mut c = c.lock().expect("config");
            for (k, v) in change.as_object().into_iter().flatten() {
                if v.is_null() {
                    c.as_object_mut().map(|m| m.remove(k));
                } else {
                    c[k] = v.clone();
                }
            }
            Json(c.clone())
        }
        let config: Config = Arc::new(Mutex::new(config));
        let app = axum::Router::new().route("/config", axum::routing::get(get).patch(patch)).with_state(config.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("a port");
        let url = format!("http://{}", listener.local_addr().expect("its address"));
        tokio::spawn(async move { axum::serve(listener, app).await });
        (url, config)
    }

    #[tokio::test]
    async fn every_key_set_is_put_back_to_its_first_value_or_removed() {
        let (url, config) = patroni(json!({"ttl": 30, "primary_start_timeout": 300})).await;
        let server = Patroni::new(&url).expect("a Patroni");
        let mut undo = Undo::new(&url);
        undo.set(&server, "primary_start_timeout", 0.into()).await.expect("set");
        undo.set(&server, "primary_start_timeout", 5.into()).await.expect("set again");
        undo.set(&server, "loop_wait", 2.into()).await.expect("set a new key");
        assert_eq!(*config.lock().expect("config"), json!({"ttl": 30, "primary_start_timeout": 5, "loop_wait": 2}));
        assert!(!undo.is_empty());
        undo.restore().await.expect("restored");
        assert_eq!(*config.lock().expect("config"), json!({"ttl": 30, "primary_start_timeout": 300}));
        assert!(undo.is_empty());
    }

    #[tokio::test]
    async fn what_cannot_be_put_back_stays_listed() {
        let (url, _) = patroni(json!({"primary_start_timeout": 300})).await;
        let server = Patroni::new(&url).expect("a Patroni");
        let mut undo = Undo::new("http://127.0.0.1:9");
        undo.set(&server, "primary_start_timeout", 0.into()).await.expect("set");
        assert!(undo.restore().await.is_err());
        assert!(!undo.is_empty());
    }
}
