//! `MongoStore`: the `OrderStore` on the official `mongodb` driver. One collection (`orders`,
//! `_id` = order id), the indexes of `migrations/mongo`, and every write sent with the configured
//! write concern (`w` from `MONGO_WRITE_CONCERN`, `j` from `MONGO_JOURNAL`, set on the client, so
//! the collection and every write inherit it).
//! Each method is one command on its success path; filters are built only from typed ids, limits
//! and statuses, never from request text. Every command first takes a permit of the
//! `ConnectionGate` (at most `MONGO_POOL_SIZE` at once, waited for at most `POOL_TIMEOUT_MS`) and
//! carries `maxTimeMS` = `REQUEST_TIMEOUT_MS` where the command has one, so the server stops work
//! nobody waits for. A keyed insert stores its `Idempotency-Key` in the document
//! (`IDEMPOTENCY_KEY`, under a unique partial index that documents without a key never enter).
//! Reads fetch raw BSON and write the API's JSON straight from it (`raw_json`); inserts send BSON
//! bytes written straight from the order (`document::to_raw_document`).

use crate::config::MongoConfig;
use crate::diagnostics;
use crate::document::{IDEMPOTENCY_FINGERPRINT, IDEMPOTENCY_KEY, date, from_document, status_of, to_raw_document};
use crate::error::{describe, is_duplicate_key, is_unavailable, store_error, write_error};
use crate::indexes::{self, COLLECTION};
use crate::pool::ConnectionGate;
use crate::raw_json::{order_json, push_order};
use crate::tls::{ClientTls, is_certificate_refusal};
use mongodb::bson::{Document, RawDocumentBuf, doc};
use mongodb::options::{ClientOptions, ReturnDocument};
use mongodb::{Client, Collection, Cursor, Database};
use orders_core::{
    CustomerQuery, IdempotencyKey, KeyedInsert, ListBytes, OrderId, OrderJson, OrderListJson, OrderStore, OrderToStore,
    PoolStatus, ProductQuery, Returning, StatusChange, StoreError, Timestamp,
};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long `connect` waits for a server that is still starting.
pub const STARTUP_WAIT: Duration = Duration::from_secs(30);
/// How often a conditional status change is tried when its status keeps changing underneath it.
const MAX_STATUS_ATTEMPTS: usize = 3;

#[derive(Debug, Clone)]
pub struct MongoStore {
    db: Database,
    orders: Collection<Document>,
    /// The same collection, read as raw BSON (no `Document` built per read).
    raw_orders: Collection<RawDocumentBuf>,
    gate: Arc<ConnectionGate>,
    /// `maxTimeMS` of every command that takes one.
    max_time: Duration,
    /// `POOL_TIMEOUT_MS` and the server selection timeout in effect, for `/diagnostics`.
    pool_timeout: Duration,
    server_selection_timeout: Duration,
    /// `tls=true` and its CA file, from `MONGODB_URI`, for `/diagnostics`.
    tls: ClientTls,
}

/// Why the service could not start on MongoDB.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    #[error("MONGODB_URI is not usable: {}", describe(.0))]
    Options(mongodb::error::Error),
    #[error("MongoDB at MONGODB_URI did not answer a ping within {} s: {}", STARTUP_WAIT.as_secs(), describe(.0))]
    Unreachable(mongodb::error::Error),
    #[error("MongoDB at MONGODB_URI refused the ping: {}", describe(.0))]
    Refused(mongodb::error::Error),
    #[error("TLS to MongoDB failed (MONGODB_URI {setting}): {}", describe(.error))]
    Tls { setting: String, error: mongodb::error::Error },
    #[error("could not apply migrations/mongo/indexes.json with MONGO_WRITE_CONCERN={w} and MONGO_JOURNAL={j}")]
    Indexes { w: String, j: bool, source: indexes::ApplyError },
}

impl MongoStore {
    /// Connects, waits up to `STARTUP_WAIT` for the server to answer, and applies the indexes.
    /// The index build is the first write, so a write concern the deployment cannot satisfy (a
    /// `w` above the number of members, an unknown tag) stops start-up here.
    pub async fn connect(config: &MongoConfig) -> Result<Self, ConnectError> {
        let gate = Arc::new(ConnectionGate::new(config.pool_size as usize, config.limits.pool_timeout));
        let mut options = ClientOptions::parse(&config.uri).await.map_err(ConnectError::Options)?;
        options.app_name.get_or_insert_with(|| "orders-mongo".to_owned());
        // Without a reachable server a command waits this long (the driver's default is 30 s):
        // with the server down, a request gets 503 within POOL_TIMEOUT_MS, and while requests
        // wait the driver re-checks the server every 500 ms, so they find it again that fast.
        let server_selection_timeout = *options.server_selection_timeout.get_or_insert(config.limits.pool_timeout);
        options.max_pool_size = Some(config.pool_size);
        options.write_concern = Some(config.write_concern());
        options.cmap_event_handler = Some(gate.event_handler());
        let tls = ClientTls::from_options(&options);
        let client = Client::with_options(options).map_err(ConnectError::Options)?;
        let db = client.database(&config.db);
        wait_for_server(&db).await.map_err(|error| match error {
            ConnectError::Unreachable(error) | ConnectError::Refused(error) if is_certificate_refusal(&error) => {
                ConnectError::Tls { setting: tls.describe(), error }
            }
            other => other,
        })?;
        let orders = db.collection::<Document>(COLLECTION);
        indexes::apply(&orders).await.map_err(|source| ConnectError::Indexes {
            w: config.write_concern_text(),
            j: config.journal,
            source,
        })?;
        let raw_orders = orders.clone_with_type();
        Ok(Self {
            db,
            orders,
            raw_orders,
            gate,
            max_time: config.limits.statement_timeout,
            pool_timeout: config.limits.pool_timeout,
            server_selection_timeout,
            tls,
        })
    }

    /// The database this store works in (tests drop it when they are done).
    pub fn database(&self) -> &Database {
        &self.db
    }
}

async fn wait_for_server(db: &Database) -> Result<(), ConnectError> {
    let deadline = Instant::now() + STARTUP_WAIT;
    let mut last_error = None;
    loop {
        let remaining = deadline.saturating_duration_since(Instant::now());
        let error = match tokio::time::timeout(remaining, db.run_command(doc! {"ping": 1})).await {
            Ok(Ok(_)) => return Ok(()),
            // A certificate refused is not waited out: it will not change while the server starts.
            Ok(Err(error)) if !is_unavailable(&error) || is_certificate_refusal(&error) => {
                return Err(ConnectError::Refused(error));
            }
            Ok(Err(error)) => error,
            // The deadline passed during a ping: report why the previous one failed, if one did.
            Err(_elapsed) => last_error.unwrap_or_else(|| std::io::Error::from(std::io::ErrorKind::TimedOut).into()),
        };
        if Instant::now() >= deadline {
            return Err(ConnectError::Unreachable(error));
        }
        tracing::info!(error = describe(&error), "waiting for MongoDB");
        last_error = Some(error);
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// The list body, written document by document from the cursor's batch buffer until it is cut at
/// `max_bytes` (dropping the cursor then closes it on the server).
async fn collect_orders(mut cursor: Cursor<RawDocumentBuf>, max_bytes: ListBytes) -> Result<OrderListJson, StoreError> {
    let mut list = OrderListJson::bounded(max_bytes);
    while cursor.advance().await.map_err(store_error)? {
        if !push_order(&mut list, cursor.current()).map_err(internal)? {
            break;
        }
    }
    Ok(list)
}

fn internal(error: impl std::fmt::Display) -> StoreError {
    StoreError::Internal(error.to_string())
}

impl OrderStore for MongoStore {
    fn backend(&self) -> &'static str {
        "mongodb"
    }

    async fn get(&self, id: OrderId) -> Result<OrderJson, StoreError> {
        let _permit = self.gate.acquire().await?;
        let found = self.raw_orders.find_one(doc! {"_id": id.as_i64()}).max_time(self.max_time).await;
        match found.map_err(store_error)? {
            Some(document) => order_json(&document).map(OrderJson::from_stored).map_err(internal),
            None => Err(StoreError::NotFound),
        }
    }

    async fn by_customer(&self, query: CustomerQuery) -> Result<OrderListJson, StoreError> {
        let mut filter = doc! {"customer.id": query.customer.as_i64()};
        if let Some(before) = query.before {
            filter.insert("_id", doc! {"$lt": before.as_i64()});
        }
        let _permit = self.gate.acquire().await?;
        let cursor = self
            .raw_orders
            .find(filter)
            .sort(doc! {"_id": -1})
            .limit(i64::from(query.limit.get()))
            .max_time(self.max_time)
            .await
            .map_err(store_error)?;
        collect_orders(cursor, query.max_bytes).await
    }

    async fn by_product(&self, query: ProductQuery) -> Result<OrderListJson, StoreError> {
        let filter = doc! {"items.product_id": query.product.as_i64()};
        let _permit = self.gate.acquire().await?;
        let find = self.raw_orders.find(filter).limit(i64::from(query.limit.get())).max_time(self.max_time);
        collect_orders(find.await.map_err(store_error)?, query.max_bytes).await
    }

    async fn insert(&self, order: &OrderToStore) -> Result<(), StoreError> {
        let order = order.order();
        let document = to_raw_document(order).map_err(internal)?;
        let _permit = self.gate.acquire().await?;
        match self.raw_orders.insert_one(document).await {
            Ok(_) => Ok(()),
            Err(error) if is_duplicate_key(&error) => Err(StoreError::id_taken(order.id)),
            Err(error) => Err(write_error(error)),
        }
    }

    async fn insert_with_key(
        &self,
        order: &OrderToStore,
        key: &IdempotencyKey,
        fingerprint: i64,
    ) -> Result<KeyedInsert, StoreError> {
        let order = order.order();
        let mut document = to_raw_document(order).map_err(internal)?;
        document.append_ref(IDEMPOTENCY_KEY, key.as_str());
        document.append(IDEMPOTENCY_FINGERPRINT, fingerprint);
        let _permit = self.gate.acquire().await?;
        match self.raw_orders.insert_one(document).await {
            Ok(_) => return Ok(KeyedInsert::Inserted),
            Err(error) if is_duplicate_key(&error) => {}
            Err(error) => return Err(write_error(error)),
        }
        // Failure path only: the id or the key is taken (a duplicate is only reported once the
        // other insert committed, so it is visible now); the key's order tells which.
        let existing = self
            .orders
            .find_one(doc! {IDEMPOTENCY_KEY: key.as_str()})
            .max_time(self.max_time)
            .await
            .map_err(store_error)?;
        let Some(document) = existing else { return Err(StoreError::id_taken(order.id)) };
        let stored = document.get_i64(IDEMPOTENCY_FINGERPRINT).unwrap_or_default();
        from_document(&document).map(|existing| KeyedInsert::Existing(Box::new(existing), stored)).map_err(internal)
    }

    async fn forget_key(&self, key: &IdempotencyKey, id: OrderId) -> Result<(), StoreError> {
        let filter = doc! {"_id": id.as_i64(), IDEMPOTENCY_KEY: key.as_str()};
        let _permit = self.gate.acquire().await?;
        self.orders
            .update_one(filter, doc! {"$unset": {IDEMPOTENCY_KEY: "", IDEMPOTENCY_FINGERPRINT: ""}})
            .await
            .map(drop)
            .map_err(write_error)
    }

    async fn update_status(
        &self,
        id: OrderId,
        change: StatusChange,
        now: Timestamp,
        returning: Returning,
    ) -> Result<Option<OrderJson>, StoreError> {
        let mut filter = doc! {"_id": id.as_i64()};
        if let Some(from) = change.from {
            filter.insert("status", from.as_str());
        }
        let update = doc! {"$set": {"status": change.status.as_str(), "updated_at": date(now)}};
        let _permit = self.gate.acquire().await?;
        let mut attempts = 0;
        loop {
            let updated = match returning {
                Returning::Document => self
                    .raw_orders
                    .find_one_and_update(filter.clone(), update.clone())
                    .return_document(ReturnDocument::After)
                    .max_time(self.max_time)
                    .await
                    .map_err(write_error)?
                    .map(|document| {
                        order_json(&document).map(|json| Some(OrderJson::from_stored(json))).map_err(internal)
                    }),
                Returning::Nothing => {
                    let result = self.orders.update_one(filter.clone(), update.clone()).await.map_err(write_error)?;
                    (result.matched_count > 0).then_some(Ok(None))
                }
            };
            if let Some(answer) = updated {
                return answer;
            }
            let Some(expected) = change.from else {
                return Err(StoreError::NotFound);
            };
            // Nothing matched: the order is missing, or its status is not `from`. One more look
            // tells which (the only second round trip, and only on a failure path).
            let current = self
                .orders
                .find_one(doc! {"_id": id.as_i64()})
                .projection(doc! {"_id": 0, "status": 1})
                .max_time(self.max_time)
                .await
                .map_err(store_error)?;
            let Some(document) = current else {
                return Err(StoreError::NotFound);
            };
            let current = status_of(&document).map_err(internal)?;
            attempts += 1;
            // The status can have become `from` between the two commands; then try again rather
            // than answer "has status paid, not paid".
            if current != expected {
                return Err(StoreError::status_differs(id, current, expected));
            }
            if attempts == MAX_STATUS_ATTEMPTS {
                return Err(StoreError::Conflict(format!(
                    "order {id} changed its status concurrently {MAX_STATUS_ATTEMPTS} times; retry"
                )));
            }
        }
    }

    async fn ready(&self) -> Result<(), StoreError> {
        let _permit = self.gate.acquire().await?;
        self.db.run_command(doc! {"ping": 1}).await.map(drop).map_err(store_error)
    }

    async fn diagnostics(&self) -> Result<serde_json::Value, StoreError> {
        let _permit = self.gate.acquire().await?;
        let mut report =
            diagnostics::collect(&self.db, &self.orders, self.gate.status().max_size as u32, &self.tls).await?;
        if let Some(settings) = report.settings.as_mut() {
            let millis = |d: Duration| Some(d.as_millis() as u64);
            settings.pool_timeout_ms = millis(self.pool_timeout);
            settings.max_time_ms = millis(self.max_time);
            settings.server_selection_timeout_ms = millis(self.server_selection_timeout);
        }
        serde_json::to_value(report).map_err(|error| StoreError::Internal(error.to_string()))
    }

    fn pool_status(&self) -> PoolStatus {
        self.gate.status()
    }
}
