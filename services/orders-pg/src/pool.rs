//! The connection pool every Postgres layout shares (`orders-pg`'s jsonb table and
//! `orders-pg-hybrid`'s typed columns): the URL plus the session settings as start-up options, a
//! start-up connection that waits for the server, and `PgPool`, which hands out a pooled
//! connection within `POOL_TIMEOUT_MS` and runs a statement on it in the configured
//! `PG_STATEMENT_MODE`. A request waits at most `POOL_TIMEOUT_MS` for a connection, whether a free
//! pooled one or a new one being opened (so a database that is down answers 503 within that time,
//! whatever the driver's connect timeout). TLS is `DATABASE_URL`'s `sslmode` (`tls`): without
//! it, connections are opened with `NoTls`, as before.

use crate::config::{PgConfig, StatementMode, setting_name};
use crate::diagnostics;
use crate::errors::{describe, ends_the_connection, from_db, from_pool, from_write};
use crate::sql::{self, Statement};
use crate::tls::{self, SslMode, TlsSetting};
use deadpool_postgres::{Manager, ManagerConfig, Object, Pool, RecyclingMethod, Runtime, Timeouts};
use futures_util::TryStreamExt;
use orders_core::{ListBytes, OrderListJson, PoolStatus, StoreError};
use std::time::{Duration, Instant};
use tokio_postgres::tls::{MakeTlsConnect, TlsConnect};
use tokio_postgres::types::ToSql;
use tokio_postgres::{NoTls, Row, Socket};
use tokio_postgres_rustls::MakeRustlsConnect;

/// How long start-up waits for the database to accept connections.
const STARTUP_WAIT: Duration = Duration::from_secs(30);

/// Where and how to connect: the driver's settings and the TLS connector `DATABASE_URL` asks for
/// (`None`: plaintext, `NoTls`).
#[derive(Clone)]
pub struct PgConnection {
    pub pg: tokio_postgres::Config,
    pub tls: Option<MakeRustlsConnect>,
    pub tls_setting: TlsSetting,
}

/// The URL plus this service's session settings as start-up options (`-c name=value`), so every
/// connection has them from its first statement and no request pays a `SET`.
pub fn connection_config(config: &PgConfig, application_name: &str) -> Result<PgConnection, StoreError> {
    let (url, tls_setting) = tls::split_url(&config.database_url).map_err(StoreError::Internal)?;
    let mut pg: tokio_postgres::Config =
        url.parse().map_err(|e| StoreError::Internal(format!("DATABASE_URL is not a valid PostgreSQL URL: {e}")))?;
    pg.ssl_mode(SslMode::driver_mode(tls_setting.mode));
    let tls = tls::connector(&tls_setting).map_err(StoreError::Internal)?;
    let mut options: Vec<String> = pg.get_options().map(str::to_owned).into_iter().collect();
    if let Some(mode) = config.plan_cache_mode {
        options.push(format!("-c plan_cache_mode={}", setting_name(mode)));
    }
    if let Some(commit) = config.synchronous_commit {
        options.push(format!("-c synchronous_commit={}", setting_name(commit)));
    }
    if !options.is_empty() {
        pg.options(options.join(" "));
    }
    if pg.get_application_name().is_none() {
        pg.application_name(application_name);
    }
    if pg.get_connect_timeout().is_none() {
        pg.connect_timeout(config.limits.pool_timeout);
    }
    Ok(PgConnection { pg, tls, tls_setting })
}

/// One connection with `tls`, its connection task spawned.
async fn open<T>(pg: &tokio_postgres::Config, tls: T) -> Result<tokio_postgres::Client, tokio_postgres::Error>
where
    T: MakeTlsConnect<Socket>,
    T::Stream: Send + 'static,
    T::TlsConnect: Send,
    <T::TlsConnect as TlsConnect<Socket>>::Future: Send,
{
    let (client, connection) = pg.connect(tls).await?;
    tokio::spawn(async move {
        if let Err(error) = connection.await {
            tracing::warn!(%error, "start-up connection ended");
        }
    });
    Ok(client)
}

/// One connection for start-up work (migrations), waiting up to 30 s for the server. A failed TLS
/// handshake (a certificate the CA file does not vouch for, a wrong host name) is not waited out,
/// and every error that stops start-up names the TLS setting it was tried with.
pub async fn connect_with_retry(connection: &PgConnection) -> Result<tokio_postgres::Client, StoreError> {
    let started = Instant::now();
    loop {
        let result = match &connection.tls {
            None => open(&connection.pg, NoTls).await,
            Some(tls) => open(&connection.pg, tls.clone()).await,
        };
        match result {
            Ok(client) => return Ok(client),
            Err(error) if is_tls_failure(&error) => {
                return Err(StoreError::Unavailable(format!(
                    "TLS to PostgreSQL failed (DATABASE_URL {}): {}",
                    connection.tls_setting.describe(),
                    describe(&error)
                )));
            }
            Err(error) if error.code().is_none() && started.elapsed() < STARTUP_WAIT => {
                tracing::warn!(%error, "database not reachable yet; retrying");
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
            Err(error) => {
                let tls = connection.tls_setting.describe();
                return Err(match from_db(error) {
                    StoreError::Unavailable(text) => StoreError::Unavailable(format!("{text} (DATABASE_URL {tls})")),
                    StoreError::Internal(text) => StoreError::Internal(format!("{text} (DATABASE_URL {tls})")),
                    other => other,
                });
            }
        }
    }
}

/// The driver's error for a handshake that failed, or a server that does not offer TLS when
/// `sslmode` requires it: its message is its only mark.
fn is_tls_failure(error: &tokio_postgres::Error) -> bool {
    error.code().is_none() && error.to_string().starts_with("error performing TLS handshake")
}

/// How a driver error becomes a `StoreError` (`from_db`, or `from_write` once a write was sent).
type Mapping = fn(tokio_postgres::Error) -> StoreError;

/// Maps `error` with `mapping`, and first takes `client` out of the pool when the error ended its
/// session (a FATAL from the server, a closed socket): the driver may notice the closed socket
/// only later, and until then the pool would hand the dead connection to the next request.
fn retire(client: Object, error: tokio_postgres::Error, mapping: Mapping) -> StoreError {
    if ends_the_connection(&error) {
        drop(Object::take(client));
    }
    mapping(error)
}

/// The request connections and the settings they run with.
pub struct PgPool {
    pool: Pool,
    config: PgConfig,
}

impl PgPool {
    /// A pool over `connection` (from `connection_config`). Only pooled (request) connections get
    /// the statement timeout: migrations at start-up may legitimately run longer.
    pub fn new(connection: PgConnection, config: &PgConfig) -> Result<Self, StoreError> {
        let PgConnection { mut pg, tls, .. } = connection;
        let timeout_ms = config.limits.statement_timeout.as_millis().max(1);
        let options = pg.get_options().map_or(String::new(), |options| format!("{options} "));
        pg.options(format!("{options}-c statement_timeout={timeout_ms}"));
        let manager_config = ManagerConfig { recycling_method: RecyclingMethod::Fast };
        let manager = match tls {
            None => Manager::from_config(pg, NoTls, manager_config),
            Some(tls) => Manager::from_config(pg, tls, manager_config),
        };
        let pool = Pool::builder(manager)
            .max_size(usize::from(config.pool_size))
            // A request gives up on a connection at POOL_TIMEOUT_MS (`connection`), but a new
            // connection being opened is not given up with it: after a failover it may take longer
            // (the multi-host URL tries each member, and each standby's session is opened and
            // closed again before the primary's), and one abandoned at every request's deadline
            // never finishes under load (issue 43: orders-pg answered 503 for 100 s after Patroni
            // had promoted a standby). It has the statement timeout to finish; the wait for a free
            // slot stays bounded by POOL_TIMEOUT_MS.
            .wait_timeout(Some(config.limits.pool_timeout))
            .create_timeout(Some(config.limits.statement_timeout.max(config.limits.pool_timeout)))
            .recycle_timeout(Some(config.limits.pool_timeout))
            .runtime(Runtime::Tokio1)
            .build()
            .map_err(|e| StoreError::Internal(format!("could not build the connection pool: {e}")))?;
        Ok(Self { pool, config: config.clone() })
    }

    pub fn config(&self) -> &PgConfig {
        &self.config
    }

    /// A pooled connection within `POOL_TIMEOUT_MS`, counting both the wait for a free one and
    /// opening a new one.
    /// The pool's own `get` runs in a task of its own, so a connection it is opening when the
    /// request gives up is finished and kept in the pool (an `Object` dropped goes back to it).
    pub async fn connection(&self) -> Result<Object, StoreError> {
        let pool = self.pool.clone();
        let get = tokio::spawn(async move { pool.get().await });
        match tokio::time::timeout(self.config.limits.pool_timeout, get).await {
            Ok(Ok(result)) => result.map_err(from_pool),
            Ok(Err(join)) => Err(StoreError::Internal(format!("the pool's task failed: {join}"))),
            Err(_) => Err(StoreError::Busy(format!(
                "no database connection within POOL_TIMEOUT_MS ({} ms)",
                self.config.limits.pool_timeout.as_millis()
            ))),
        }
    }

    pub async fn query(&self, statement: &Statement, params: &[&(dyn ToSql + Sync)]) -> Result<Vec<Row>, StoreError> {
        let client = self.connection().await?;
        let result = sql::query(&client, self.config.statement_mode, statement, params).await;
        result.map_err(|error| retire(client, error, from_db))
    }

    /// The API's list from a statement whose first column is the document, read row by row until
    /// the list is cut at `max_bytes` (`OrderListJson::bounded`): rows past the bound are never held
    /// (the driver discards what the server still sends for them).
    pub async fn list(
        &self,
        statement: &Statement,
        params: &[&(dyn ToSql + Sync)],
        max_bytes: ListBytes,
    ) -> Result<OrderListJson, StoreError> {
        let client = self.connection().await?;
        let rows = match sql::query_stream(&client, self.config.statement_mode, statement, params).await {
            Ok(rows) => rows,
            Err(error) => return Err(retire(client, error, from_db)),
        };
        let mut rows = std::pin::pin!(rows);
        let mut list = OrderListJson::bounded(max_bytes);
        loop {
            match rows.try_next().await {
                Ok(Some(row)) if list.push_stored(sql::stored_json(&row)?) => {}
                Ok(_) => return Ok(list),
                Err(error) => return Err(retire(client, error, from_db)),
            }
        }
    }

    /// A statement that writes: once it may have reached the server, an error that ends the
    /// connection leaves its outcome unknown (`from_write`). Getting a connection, finding it
    /// closed, and preparing the statement write nothing, so their errors keep their meaning
    /// (`from_pool`, `Unavailable`, `from_db`).
    pub async fn write(&self, statement: &Statement, params: &[&(dyn ToSql + Sync)]) -> Result<Vec<Row>, StoreError> {
        let client = self.connection().await?;
        if client.is_closed() {
            // Ended before anything was sent (say, by the server since it was pooled).
            drop(Object::take(client));
            return Err(StoreError::Unavailable("the pooled connection was closed before the write was sent".into()));
        }
        let result = match self.config.statement_mode {
            StatementMode::Prepared => match client.prepare_typed_cached(statement.text, statement.types).await {
                Ok(prepared) => client.query(&prepared, params).await.map_err(|error| (error, from_write as Mapping)),
                Err(error) => Err((error, from_db as Mapping)),
            },
            StatementMode::Unprepared => sql::query(&client, StatementMode::Unprepared, statement, params)
                .await
                .map_err(|error| (error, from_write as Mapping)),
        };
        result.map_err(|(error, mapping)| retire(client, error, mapping))
    }

    /// The plan counts of the product search (statements beginning with `product_search`) of
    /// `first` and of the other pooled connections idle when asked (all of them once a run has
    /// ended): F1 is about which plan each connection cached, not one. One connection at a time:
    /// `first` is read and given back, then each idle one is taken without waiting and without
    /// opening a new one, read and given back, so the report never holds more than one of the
    /// pool (issue 45). A connection handed out twice is counted once (by its backend's pid).
    pub async fn plans(&self, first: Object, product_search: &str) -> Result<diagnostics::PoolPlans, StoreError> {
        let status = self.pool.status();
        let no_wait = Timeouts {
            wait: Some(Duration::ZERO),
            create: Some(Duration::ZERO),
            recycle: Some(self.config.limits.pool_timeout),
        };
        let mut plans = diagnostics::PoolPlans { connections_open: Some(status.size as u64), ..Default::default() };
        let (pid, counts) = diagnostics::product_plan_counts(&first, product_search).await.map_err(from_db)?;
        drop(first);
        plans.add(counts);
        let mut read = vec![pid];
        // The pool hands idle connections out oldest first and takes them back last: `size` turns
        // visit each idle one once unless requests take them meanwhile.
        for _ in 1..status.size {
            let Ok(client) = self.pool.timeout_get(&no_wait).await else { break };
            let (pid, counts) = diagnostics::product_plan_counts(&client, product_search).await.map_err(from_db)?;
            drop(client);
            if !read.contains(&pid) {
                read.push(pid);
                plans.add(counts);
            }
        }
        Ok(plans)
    }

    pub fn status(&self) -> PoolStatus {
        let status = self.pool.status();
        PoolStatus {
            max_size: status.max_size,
            size: status.size,
            available: status.available,
            waiting: status.waiting,
        }
    }
}
