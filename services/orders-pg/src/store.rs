//! `PgStore`: `OrderStore` on PostgreSQL jsonb. Each order is one row `(id, doc)` (plus the
//! `idempotency_key` of a keyed insert); every request is one statement on a pooled connection.
//! Session settings (`plan_cache_mode`, `synchronous_commit`, and `statement_timeout` from
//! `REQUEST_TIMEOUT_MS`) travel as start-up options, so every pooled connection has them from its
//! first statement and no request pays a `SET`. A request waits at most `POOL_TIMEOUT_MS` for a
//! connection, whether a free pooled one or a new one being opened (so a database that is down
//! answers 503 within that time, whatever the driver's connect timeout). Reads answer with the
//! document as PostgreSQL sends it (jsonb's binary form is its JSON text): only the service writes
//! `doc`, and only orders that passed validation, so the text is an order's JSON already (keys in
//! jsonb's order).

use crate::config::{LimitMode, PgConfig, StatementMode, setting_name};
use crate::errors::{from_db, from_pool, from_write};
use crate::sql::{self, JsonbText, Statement};
use crate::{diagnostics, migrate};
use deadpool_postgres::{Manager, ManagerConfig, Object, Pool, RecyclingMethod, Runtime, Timeouts};
use orders_core::{
    CustomerQuery, IdempotencyKey, KeyedInsert, Order, OrderId, OrderJson, OrderListJson, OrderStore, OrderToStore,
    PoolStatus, ProductQuery, Returning, Status, StatusChange, StoreError, Timestamp,
};
use std::time::{Duration, Instant};
use tokio_postgres::types::{FromSql, Json, ToSql, Type};
use tokio_postgres::{NoTls, Row};

/// How long start-up waits for the database to accept connections.
const STARTUP_WAIT: Duration = Duration::from_secs(30);
/// How often a conditional status change is tried when its status keeps changing underneath it.
const MAX_STATUS_ATTEMPTS: usize = 3;

pub struct PgStore {
    pool: Pool,
    config: PgConfig,
}

impl PgStore {
    /// Connects (waiting up to 30 s for the server), applies migrations and `PG_GIN_FASTUPDATE`,
    /// and builds the pool.
    pub async fn connect(config: &PgConfig) -> Result<Self, StoreError> {
        let pg = connection_config(config)?;
        let mut client = connect_with_retry(&pg).await?;
        let applied = migrate::run(&mut client).await.map_err(from_db)?;
        if !applied.is_empty() {
            tracing::info!(?applied, "applied migrations");
        }
        if let Some(setting) = config.gin_fastupdate {
            migrate::set_gin_fastupdate(&client, setting).await.map_err(from_db)?;
            tracing::info!(fastupdate = setting_name(setting), "set GIN fastupdate on orders_items");
        }
        drop(client);

        // Only pooled (request) connections get the statement timeout: migrations and the GIN
        // flush at start-up may legitimately run longer.
        let mut pooled = pg;
        let timeout_ms = config.limits.statement_timeout.as_millis().max(1);
        let options = pooled.get_options().map_or(String::new(), |options| format!("{options} "));
        pooled.options(format!("{options}-c statement_timeout={timeout_ms}"));
        let manager = Manager::from_config(pooled, NoTls, ManagerConfig { recycling_method: RecyclingMethod::Fast });
        let pool = Pool::builder(manager)
            .max_size(usize::from(config.pool_size))
            .create_timeout(Some(config.limits.pool_timeout))
            .recycle_timeout(Some(config.limits.pool_timeout))
            .runtime(Runtime::Tokio1)
            .build()
            .map_err(|e| StoreError::Internal(format!("could not build the connection pool: {e}")))?;
        Ok(Self { pool, config: config.clone() })
    }

    /// A pooled connection within `POOL_TIMEOUT_MS`, counting both the wait for a free one and
    /// opening a new one.
    async fn connection(&self) -> Result<Object, StoreError> {
        match tokio::time::timeout(self.config.limits.pool_timeout, self.pool.get()).await {
            Ok(result) => result.map_err(from_pool),
            Err(_) => Err(StoreError::Busy(format!(
                "no database connection within POOL_TIMEOUT_MS ({} ms)",
                self.config.limits.pool_timeout.as_millis()
            ))),
        }
    }

    async fn query(&self, statement: &Statement, params: &[&(dyn ToSql + Sync)]) -> Result<Vec<Row>, StoreError> {
        let client = self.connection().await?;
        sql::query(&client, self.config.statement_mode, statement, params).await.map_err(from_db)
    }

    /// A statement that writes: once it may have reached the server, a lost connection leaves its
    /// outcome unknown.
    async fn write(&self, statement: &Statement, params: &[&(dyn ToSql + Sync)]) -> Result<Vec<Row>, StoreError> {
        let client = self.connection().await?;
        sql::query(&client, self.config.statement_mode, statement, params).await.map_err(from_write)
    }

    pub fn statement_mode(&self) -> StatementMode {
        self.config.statement_mode
    }

    /// The product search's plan counts of `first` and of every other connection idle at this
    /// moment, each taken from the pool without waiting and without opening a new one (all of
    /// them once a run has ended): F1 is about which plan each connection cached, not one.
    async fn pool_plans(&self, first: Object) -> Result<diagnostics::PoolPlans, StoreError> {
        let status = self.pool.status();
        let no_wait = Timeouts {
            wait: Some(Duration::ZERO),
            create: Some(Duration::ZERO),
            recycle: Some(self.config.limits.pool_timeout),
        };
        let mut held = vec![first];
        for _ in 0..status.available {
            match self.pool.timeout_get(&no_wait).await {
                Ok(client) => held.push(client),
                Err(_) => break,
            }
        }
        let mut plans = diagnostics::PoolPlans { connections_open: Some(status.size as u64), ..Default::default() };
        for client in &held {
            plans.add(diagnostics::product_plan_counts(client).await.map_err(from_db)?);
        }
        Ok(plans)
    }
}

/// The URL plus this service's session settings as start-up options (`-c name=value`).
fn connection_config(config: &PgConfig) -> Result<tokio_postgres::Config, StoreError> {
    let mut pg: tokio_postgres::Config = config
        .database_url
        .parse()
        .map_err(|e| StoreError::Internal(format!("DATABASE_URL is not a valid PostgreSQL URL: {e}")))?;
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
        pg.application_name("orders-pg");
    }
    if pg.get_connect_timeout().is_none() {
        pg.connect_timeout(config.limits.pool_timeout);
    }
    Ok(pg)
}

async fn connect_with_retry(pg: &tokio_postgres::Config) -> Result<tokio_postgres::Client, StoreError> {
    let started = Instant::now();
    loop {
        match pg.connect(NoTls).await {
            Ok((client, connection)) => {
                tokio::spawn(async move {
                    if let Err(error) = connection.await {
                        tracing::warn!(%error, "start-up connection ended");
                    }
                });
                return Ok(client);
            }
            Err(error) if error.code().is_none() && started.elapsed() < STARTUP_WAIT => {
                tracing::warn!(%error, "database not reachable yet; retrying");
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
            Err(error) => return Err(from_db(error)),
        }
    }
}

/// The JSON text of a `json` or `jsonb` value, borrowed from the row as the server sent it.
struct JsonText<'a>(&'a [u8]);

/// The only binary format of jsonb so far: a version byte, then the JSON text.
const JSONB_VERSION: u8 = 1;

impl<'a> FromSql<'a> for JsonText<'a> {
    fn from_sql(ty: &Type, raw: &'a [u8]) -> Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        match (*ty == Type::JSONB, raw.split_first()) {
            (false, _) => Ok(JsonText(raw)),
            (true, Some((&JSONB_VERSION, text))) => Ok(JsonText(text)),
            (true, _) => Err("unsupported jsonb encoding version".into()),
        }
    }

    fn accepts(ty: &Type) -> bool {
        *ty == Type::JSONB || *ty == Type::JSON
    }
}

fn stored_json(row: &Row) -> Result<&[u8], StoreError> {
    row.try_get::<_, JsonText>(0)
        .map(|JsonText(text)| text)
        .map_err(|e| StoreError::Internal(format!("stored document is not JSON: {e}")))
}

fn list_from(rows: &[Row]) -> Result<OrderListJson, StoreError> {
    let texts = rows.iter().map(stored_json).collect::<Result<Vec<_>, _>>()?;
    let mut list = OrderListJson::with_capacity(texts.iter().map(|text| text.len() + 1).sum());
    for text in texts {
        list.push_stored(text);
    }
    Ok(list)
}

impl OrderStore for PgStore {
    fn backend(&self) -> &'static str {
        "postgres"
    }

    async fn get(&self, id: OrderId) -> Result<OrderJson, StoreError> {
        let rows = self.query(&sql::GET_ORDER, &[&id.as_i64()]).await?;
        let row = rows.first().ok_or(StoreError::NotFound)?;
        Ok(OrderJson::from_stored(stored_json(row)?.to_vec()))
    }

    async fn by_customer(&self, query: CustomerQuery) -> Result<OrderListJson, StoreError> {
        let before = query.before.map_or(i64::MAX, OrderId::as_i64);
        let limit = i64::from(query.limit.get());
        let rows = self.query(&sql::ORDERS_BY_CUSTOMER, &[&query.customer.as_i64(), &before, &limit]).await?;
        list_from(&rows)
    }

    async fn by_product(&self, query: ProductQuery) -> Result<OrderListJson, StoreError> {
        let containment = serde_json::json!([{ "product_id": query.product.get() }]);
        let statement = sql::orders_by_product(self.config.limit_mode, query.limit);
        let rows = match self.config.limit_mode {
            LimitMode::Literal => self.query(&statement, &[&containment]).await?,
            LimitMode::Parameter => self.query(&statement, &[&containment, &i64::from(query.limit.get())]).await?,
        };
        list_from(&rows)
    }

    async fn insert(&self, order: &OrderToStore) -> Result<(), StoreError> {
        let (id, json) = (order.order().id, order.json());
        let rows = self.write(&sql::INSERT_ORDER, &[&id.as_i64(), &JsonbText(json.as_bytes())]).await?;
        if rows.is_empty() { Err(StoreError::id_taken(id)) } else { Ok(()) }
    }

    async fn insert_with_key(
        &self,
        order: &OrderToStore,
        key: &IdempotencyKey,
        fingerprint: i64,
    ) -> Result<KeyedInsert, StoreError> {
        let (id, json) = (order.order().id, order.json());
        let params: [&(dyn ToSql + Sync); 4] = [&id.as_i64(), &JsonbText(json.as_bytes()), &key.as_str(), &fingerprint];
        let rows = self.write(&sql::INSERT_ORDER_WITH_KEY, &params).await?;
        let rows = if rows.is_empty() {
            // Failure path only: the id is taken, or the key was committed by a concurrent request
            // after this statement's snapshot; a fresh snapshot tells which.
            let found = self.query(&sql::ORDER_BY_KEY, &[&key.as_str()]).await?;
            if found.is_empty() {
                return Err(StoreError::id_taken(id));
            }
            found
        } else {
            rows
        };
        let row = &rows[0];
        let existing: Option<Json<Order>> =
            row.try_get(0).map_err(|e| StoreError::Internal(format!("stored document is not a valid order: {e}")))?;
        let stored: Option<i64> = row.try_get(1).map_err(|e| StoreError::Internal(e.to_string()))?;
        Ok(match existing {
            None => KeyedInsert::Inserted,
            Some(Json(existing)) => KeyedInsert::Existing(Box::new(existing), stored.unwrap_or_default()),
        })
    }

    async fn forget_key(&self, key: &IdempotencyKey, id: OrderId) -> Result<(), StoreError> {
        self.write(&sql::FORGET_KEY, &[&id.as_i64(), &key.as_str()]).await.map(drop)
    }

    async fn update_status(
        &self,
        id: OrderId,
        change: StatusChange,
        now: Timestamp,
        returning: Returning,
    ) -> Result<Option<OrderJson>, StoreError> {
        let statement = match returning {
            Returning::Document => &sql::UPDATE_STATUS,
            Returning::Nothing => &sql::UPDATE_STATUS_MINIMAL,
        };
        let from = change.from.map(Status::as_str);
        let params: [&(dyn ToSql + Sync); 4] = [&id.as_i64(), &change.status.as_str(), &now.to_string(), &from];
        for _ in 0..MAX_STATUS_ATTEMPTS {
            let rows = self.write(statement, &params).await?;
            let Some(row) = rows.first() else { return Err(StoreError::NotFound) };
            let current: Option<String> = row.try_get(1).map_err(|e| StoreError::Internal(e.to_string()))?;
            let Some(current) = current else {
                return match returning {
                    Returning::Document => Ok(Some(OrderJson::from_stored(stored_json(row)?.to_vec()))),
                    Returning::Nothing => Ok(None),
                };
            };
            let current = Status::parse(&current).map_err(StoreError::Internal)?;
            match change.from {
                // The snapshot still showed `from`, but a concurrent change had replaced it by the
                // time the UPDATE looked: ask again rather than answer "has status paid, not paid".
                Some(expected) if current == expected => continue,
                Some(expected) => return Err(StoreError::status_differs(id, current, expected)),
                None => continue,
            }
        }
        Err(StoreError::Conflict(format!(
            "order {id} changed its status concurrently {MAX_STATUS_ATTEMPTS} times; retry"
        )))
    }

    async fn ready(&self) -> Result<(), StoreError> {
        let client = self.connection().await?;
        client.simple_query("SELECT 1").await.map(drop).map_err(from_db)
    }

    async fn diagnostics(&self) -> Result<serde_json::Value, StoreError> {
        let client = self.connection().await?;
        let mut report = diagnostics::collect(&client, &self.config).await.map_err(from_db)?;
        report.pool_plans = Some(self.pool_plans(client).await?);
        serde_json::to_value(report).map_err(|error| StoreError::Internal(error.to_string()))
    }

    fn pool_status(&self) -> PoolStatus {
        let status = self.pool.status();
        PoolStatus {
            max_size: status.max_size,
            size: status.size,
            available: status.available,
            waiting: status.waiting,
        }
    }
}
