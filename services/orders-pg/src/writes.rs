//! The two writes whose single statement answers with rows that say what happened, shared by both
//! Postgres layouts (orders-pg and orders-pg-hybrid write their own SQL with the same row shapes):
//! an insert under an `Idempotency-Key`, and a status change with its optional `from`.

use crate::pool::PgPool;
use crate::sql::{Statement, stored_json};
use orders_core::{IdempotencyKey, KeyedInsert, Order, OrderId, OrderJson, Returning, Status, StatusChange};
use orders_core::{StoreError, Timestamp};
use tokio_postgres::types::{Json, ToSql};

/// How often a conditional status change is tried when its status keeps changing underneath it.
const MAX_STATUS_ATTEMPTS: usize = 3;

/// A layout's keyed insert (rows: none, or one `(document or NULL, fingerprint)`) and its look-up
/// by key (`$1`), with the same rows.
#[derive(Debug, Clone, Copy)]
pub struct KeyedInsertStatements<'a> {
    pub insert: &'a Statement,
    pub by_key: &'a Statement,
}

/// Runs the keyed insert of order `id` with `params`: `Inserted`, `Existing` (the key's order and
/// fingerprint), or `Conflict` when only the id is taken.
pub async fn insert_with_key(
    pool: &PgPool,
    statements: KeyedInsertStatements<'_>,
    params: &[&(dyn ToSql + Sync)],
    id: OrderId,
    key: &IdempotencyKey,
) -> Result<KeyedInsert, StoreError> {
    let rows = pool.write(statements.insert, params).await?;
    let rows = if rows.is_empty() {
        // Failure path only: the id is taken, or the key was committed by a concurrent request
        // after this statement's snapshot; a fresh snapshot tells which.
        let found = pool.query(statements.by_key, &[&key.as_str()]).await?;
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

/// A layout's status change answering with the document, and the one answering without it. Both
/// take `$1` id, `$2` status, `$3` `updated_at` (text), `$4` the optional `from`, and return one
/// row `(document, NULL)` when updated (a NULL document for the minimal one), `(NULL, status)` when
/// the order has another status, none when there is no such order.
#[derive(Debug, Clone, Copy)]
pub struct StatusStatements<'a> {
    pub document: &'a Statement,
    pub minimal: &'a Statement,
}

pub async fn update_status(
    pool: &PgPool,
    statements: StatusStatements<'_>,
    id: OrderId,
    change: StatusChange,
    now: Timestamp,
    returning: Returning,
) -> Result<Option<OrderJson>, StoreError> {
    let statement = match returning {
        Returning::Document => statements.document,
        Returning::Nothing => statements.minimal,
    };
    let from = change.from.map(Status::as_str);
    let params: [&(dyn ToSql + Sync); 4] = [&id.as_i64(), &change.status.as_str(), &now.to_string(), &from];
    for _ in 0..MAX_STATUS_ATTEMPTS {
        let rows = pool.write(statement, &params).await?;
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
    Err(StoreError::Conflict(format!("order {id} changed its status concurrently {MAX_STATUS_ATTEMPTS} times; retry")))
}
