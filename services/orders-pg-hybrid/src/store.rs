//! `HybridStore`: `OrderStore` on the hybrid layout. Each order is one `orders` row (typed hot
//! fields and the jsonb rest) plus one `order_items` row per product, written by one statement;
//! every request is one statement on one of orders-pg's pooled connections (same session settings,
//! `POOL_TIMEOUT_MS`, statement modes and error mapping). Reads answer with the jsonb the statement
//! built from the columns and the document, as PostgreSQL sends it.

use crate::{diagnostics, migrate, sql};
use orders_core::{
    CustomerQuery, IdempotencyKey, KeyedInsert, OrderId, OrderJson, OrderListJson, OrderStore, OrderToStore,
    PoolStatus, ProductQuery, Returning, StatusChange, StoreError, Timestamp,
};
use orders_pg::PgConfig;
use orders_pg::config::LimitMode;
use orders_pg::errors::from_db;
use orders_pg::pool;
use orders_pg::pools::Pools;
use orders_pg::sql::{JsonbText, stored_json};
use orders_pg::writes::{self, KeyedInsertStatements, StatusStatements};
use tokio_postgres::types::ToSql;

pub struct HybridStore {
    pools: Pools,
}

impl HybridStore {
    /// Connects (waiting up to 30 s for the server), applies `migrations/postgres-hybrid`, and
    /// builds the pool.
    pub async fn connect(config: &PgConfig) -> Result<Self, StoreError> {
        let pg = pool::connection_config(config, "orders-pg-hybrid")?;
        let mut client = pool::connect_with_retry(&pg).await?;
        let applied = migrate::run(&mut client).await.map_err(from_db)?;
        if !applied.is_empty() {
            tracing::info!(?applied, "applied migrations");
        }
        drop(client);
        if config.gin_fastupdate.is_some() {
            tracing::warn!("PG_GIN_FASTUPDATE is ignored: the hybrid layout has no GIN index");
        }
        Ok(Self { pools: Pools::new(pg, config, "orders-pg-hybrid")? })
    }
}

/// The parameters of an insert (`$1`..`$6` of `sql::INSERT_ORDER`): the order's JSON and its hot
/// fields, typed.
struct InsertParams<'a> {
    id: i64,
    customer: i64,
    status: &'static str,
    updated_at: String,
    json: JsonbText<'a>,
    products: Vec<i64>,
}

impl<'a> InsertParams<'a> {
    fn of(order: &'a OrderToStore) -> Self {
        let (fields, json) = (order.order(), order.json());
        Self {
            id: fields.id.as_i64(),
            customer: fields.customer.id.as_i64(),
            status: fields.status.as_str(),
            updated_at: fields.updated_at.to_string(),
            json: JsonbText(json.as_bytes()),
            products: fields.items.iter().map(|item| item.product_id.as_i64()).collect(),
        }
    }

    fn as_params(&self) -> [&(dyn ToSql + Sync); 6] {
        [&self.id, &self.customer, &self.status, &self.updated_at, &self.json, &self.products]
    }
}

impl OrderStore for HybridStore {
    fn backend(&self) -> &'static str {
        "postgres"
    }

    async fn get(&self, id: OrderId) -> Result<OrderJson, StoreError> {
        let rows = self.pools.reads().query(&sql::GET_ORDER, &[&id.as_i64()]).await?;
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
        let product = query.product.as_i64();
        let mode = self.pools.writes.config().limit_mode;
        let statement = sql::orders_by_product(mode, query.limit);
        let limit = i64::from(query.limit.get());
        let params: &[&(dyn ToSql + Sync)] = match mode {
            LimitMode::Literal => &[&product],
            LimitMode::Parameter => &[&product, &limit],
        };
        self.pools.reads().list(&statement, params, query.max_bytes).await
    }

    async fn insert(&self, order: &OrderToStore) -> Result<(), StoreError> {
        let params = InsertParams::of(order);
        let rows = self.pools.writes.write(&sql::INSERT_ORDER, &params.as_params()).await?;
        if rows.is_empty() { Err(StoreError::id_taken(order.order().id)) } else { Ok(()) }
    }

    async fn insert_with_key(
        &self,
        order: &OrderToStore,
        key: &IdempotencyKey,
        fingerprint: i64,
    ) -> Result<KeyedInsert, StoreError> {
        let insert = InsertParams::of(order);
        let [id, customer, status, updated_at, json, products] = insert.as_params();
        let params: [&(dyn ToSql + Sync); 8] =
            [id, customer, status, updated_at, json, products, &key.as_str(), &fingerprint];
        let statements = KeyedInsertStatements { insert: &sql::INSERT_ORDER_WITH_KEY, by_key: &sql::ORDER_BY_KEY };
        writes::insert_with_key(&self.pools.writes, statements, &params, order.order().id, key).await
    }

    async fn forget_key(&self, key: &IdempotencyKey, id: OrderId) -> Result<(), StoreError> {
        self.pools.writes.write(&sql::FORGET_KEY, &[&id.as_i64(), &key.as_str()]).await.map(drop)
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
