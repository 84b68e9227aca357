//! `PgStore`: `OrderStore` on PostgreSQL jsonb. Each order is one row `(id, doc)`; every request
//! is one statement on a pooled connection. Session settings (`plan_cache_mode`,
//! `synchronous_commit`) travel as start-up options, so every pooled connection has them from its
//! first statement and no request pays a `SET`. Reads answer with the document as PostgreSQL
//! sends it (jsonb's binary form is its JSON text): only the service writes `doc`, and only
//! orders that passed validation, so the text is an order's JSON already (keys in jsonb's order).

use crate::config::{PgConfig, StatementMode, setting_name};
use crate::errors::{from_db, from_pool};
use crate::sql::{self, Statement};
use crate::{diagnostics, migrate};
use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod, Runtime};
use orders_core::{
    CustomerQuery, Order, OrderId, OrderJson, OrderListJson, OrderStore, PoolStatus, ProductQuery, Status,
    StatusChange, StoreError, Timestamp,
};
use std::time::{Duration, Instant};
use tokio_postgres::types::{FromSql, Json, ToSql, Type};
use tokio_postgres::{NoTls, Row};

/// How long start-up waits for the database to accept connections.
const STARTUP_WAIT: Duration = Duration::from_secs(30);
/// How long a request waits for a free pooled connection before answering 503.
const POOL_WAIT: Duration = Duration::from_secs(5);

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

        let manager = Manager::from_config(pg, NoTls, ManagerConfig { recycling_method: RecyclingMethod::Fast });
        let pool = Pool::builder(manager)
            .max_size(usize::from(config.pool_size))
            .wait_timeout(Some(POOL_WAIT))
            .create_timeout(Some(POOL_WAIT))
            .runtime(Runtime::Tokio1)
            .build()
            .map_err(|e| StoreError::Internal(format!("could not build the connection pool: {e}")))?;
        Ok(Self { pool, config: config.clone() })
    }

    async fn query(&self, statement: &Statement, params: &[&(dyn ToSql + Sync)]) -> Result<Vec<Row>, StoreError> {
        let client = self.pool.get().await.map_err(from_pool)?;
        sql::query(&client, self.config.statement_mode, statement, params).await.map_err(from_db)
    }

    pub fn statement_mode(&self) -> StatementMode {
        self.config.statement_mode
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
        pg.connect_timeout(POOL_WAIT);
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

fn order_from(row: &Row) -> Result<Order, StoreError> {
    row.try_get::<_, Json<Order>>(0)
        .map(|Json(order)| order)
        .map_err(|e| StoreError::Internal(format!("stored document is not a valid order: {e}")))
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
        let limit = i64::from(query.limit.get());
        let rows = self.query(&sql::ORDERS_BY_PRODUCT, &[&containment, &limit]).await?;
        list_from(&rows)
    }

    async fn insert(&self, order: &Order) -> Result<(), StoreError> {
        let rows = self.query(&sql::INSERT_ORDER, &[&order.id.as_i64(), &Json(order)]).await?;
        if rows.is_empty() { Err(StoreError::id_taken(order.id)) } else { Ok(()) }
    }

    async fn update_status(&self, id: OrderId, change: StatusChange, now: Timestamp) -> Result<Order, StoreError> {
        let from = change.from.map(Status::as_str);
        let params: [&(dyn ToSql + Sync); 4] = [&id.as_i64(), &change.status.as_str(), &now.to_string(), &from];
        let rows = self.query(&sql::UPDATE_STATUS, &params).await?;
        if let Some(row) = rows.first() {
            return order_from(row);
        }
        // Failure path only: a second look tells "no such order" from "other status".
        let current = self.query(&sql::CURRENT_STATUS, &[&id.as_i64()]).await?;
        let status: Option<String> = current.first().map(|row| row.get(0));
        match (status, change.from) {
            (Some(status), Some(expected)) => {
                let current = Status::parse(&status).map_err(StoreError::Internal)?;
                Err(StoreError::status_differs(id, current, expected))
            }
            // The order appeared or changed between the two statements: report what we saw first.
            _ => Err(StoreError::NotFound),
        }
    }

    async fn ready(&self) -> Result<(), StoreError> {
        let client = self.pool.get().await.map_err(from_pool)?;
        client.simple_query("SELECT 1").await.map(drop).map_err(from_db)
    }

    async fn diagnostics(&self) -> Result<serde_json::Value, StoreError> {
        let client = self.pool.get().await.map_err(from_pool)?;
        diagnostics::collect(&client, &self.config).await.map_err(from_db)
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
