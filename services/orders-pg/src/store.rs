//! `PgStore`: `OrderStore` on PostgreSQL jsonb. Each order is one row `(id, doc)` (plus the
//! `idempotency_key` of a keyed insert); every request is one statement on a pooled connection.
//! Session settings (`plan_cache_mode`, `synchronous_commit`, and `statement_timeout` from
//! `REQUEST_TIMEOUT_MS`) travel as start-up options (`pool`). Reads answer with the
//! document as PostgreSQL sends it (jsonb's binary form is its JSON text): only the service writes
//! `doc`, and only orders that passed validation, so the text is an order's JSON already (keys in
//! jsonb's order).

use crate::config::{LimitMode, PgConfig, StatementMode, setting_name};
use crate::errors::from_db;
use crate::pool;
use crate::pools::Pools;
use crate::sql::{self, JsonbText, Statement, stored_json};
use crate::writes::{self, KeyedInsertStatements, StatusStatements};
use crate::{diagnostics, migrate};
use orders_core::{
    CustomerQuery, IdempotencyKey, KeyedInsert, OrderId, OrderJson, OrderListJson, OrderStore, OrderToStore,
    PoolStatus, ProductQuery, Returning, StatusChange, StoreError, Timestamp,
};
use tokio_postgres::Row;
use tokio_postgres::types::ToSql;

pub struct PgStore {
    pools: Pools,
}

impl PgStore {
    /// Connects (waiting up to 30 s for the server), applies migrations and `PG_GIN_FASTUPDATE`,
    /// and builds the pool.
    pub async fn connect(config: &PgConfig) -> Result<Self, StoreError> {
        let pg = pool::connection_config(config, "orders-pg")?;
        let mut client = pool::connect_with_retry(&pg).await?;
        let applied = migrate::run(&mut client).await.map_err(from_db)?;
        if !applied.is_empty() {
            tracing::info!(?applied, "applied migrations");
        }
        if let Some(setting) = config.gin_fastupdate {
            migrate::set_gin_fastupdate(&client, setting).await.map_err(from_db)?;
            tracing::info!(fastupdate = setting_name(setting), "set GIN fastupdate on orders_items");
        }
        drop(client);
        Ok(Self { pools: Pools::new(pg, config, "orders-pg")? })
    }

    async fn query(&self, statement: &Statement, params: &[&(dyn ToSql + Sync)]) -> Result<Vec<Row>, StoreError> {
        self.pools.reads().query(statement, params).await
    }

    async fn write(&self, statement: &Statement, params: &[&(dyn ToSql + Sync)]) -> Result<Vec<Row>, StoreError> {
        self.pools.writes.write(statement, params).await
    }

    pub fn statement_mode(&self) -> StatementMode {
        self.pools.writes.config().statement_mode
    }
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
        let params: [&(dyn ToSql + Sync); 3] = [&query.customer.as_i64(), &before, &limit];
        self.pools.reads().list(&sql::ORDERS_BY_CUSTOMER, &params, query.max_bytes).await
    }

    async fn by_product(&self, query: ProductQuery) -> Result<OrderListJson, StoreError> {
        let containment = serde_json::json!([{ "product_id": query.product.get() }]);
        let statement = sql::orders_by_product(self.pools.writes.config().limit_mode, query.limit);
        let limit = i64::from(query.limit.get());
        let params: &[&(dyn ToSql + Sync)] = match self.pools.writes.config().limit_mode {
            LimitMode::Literal => &[&containment],
            LimitMode::Parameter => &[&containment, &limit],
        };
        self.pools.reads().list(&statement, params, query.max_bytes).await
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
        let statements = KeyedInsertStatements { insert: &sql::INSERT_ORDER_WITH_KEY, by_key: &sql::ORDER_BY_KEY };
        writes::insert_with_key(&self.pools.writes, statements, &params, id, key).await
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
        let statements = StatusStatements { document: &sql::UPDATE_STATUS, minimal: &sql::UPDATE_STATUS_MINIMAL };
        writes::update_status(&self.pools.writes, statements, id, change, now, returning).await
    }

    async fn ready(&self) -> Result<(), StoreError> {
        let client = self.pools.writes.connection().await?;
        client.simple_query("SELECT 1").await.map(drop).map_err(from_db)
    }

    async fn diagnostics(&self) -> Result<serde_json::Value, StoreError> {
        let client = self.pools.writes.connection().await?;
        let mut report = diagnostics::collect(&client, self.pools.writes.config()).await.map_err(from_db)?;
        report.pool_plans = Some(self.pools.writes.plans(client, sql::PRODUCT_SEARCH).await?);
        report.reads = Some(self.pools.reads_report().await);
        serde_json::to_value(report).map_err(|error| StoreError::Internal(error.to_string()))
    }

    fn pool_status(&self) -> PoolStatus {
        self.pools.status()
    }
}
