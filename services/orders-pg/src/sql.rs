//! Every statement the service runs on the request path, with its parameter types, and the one
//! function that executes them in the configured `PG_STATEMENT_MODE`:
//! - `prepared`: a named statement prepared once per connection and cached (the first execution
//!   on a connection costs an extra round trip; then Postgres' plan cache decides between custom
//!   and generic plans, which is what study S1's finding F1 is about);
//! - `unprepared`: an unnamed statement sent with its parameters in one round trip (Parse, Bind,
//!   Execute), planned on every execution with the actual values.

use crate::config::StatementMode;
use tokio_postgres::Row;
use tokio_postgres::types::{ToSql, Type};

pub struct Statement {
    pub text: &'static str,
    pub types: &'static [Type],
}

pub const GET_ORDER: Statement = Statement { text: "SELECT doc FROM orders WHERE id = $1", types: &[Type::INT8] };

pub const ORDERS_BY_CUSTOMER: Statement = Statement {
    text: "SELECT doc FROM orders \
           WHERE (doc->'customer'->>'id')::bigint = $1 AND id < $2 \
           ORDER BY id DESC LIMIT $3",
    types: &[Type::INT8, Type::INT8, Type::INT8],
};

/// Study S1's product search; `$1` is `[{"product_id": N}]`.
pub const ORDERS_BY_PRODUCT: Statement =
    Statement { text: "SELECT doc FROM orders WHERE doc->'items' @> $1 LIMIT $2", types: &[Type::JSONB, Type::INT8] };

/// Returns the id when inserted, no row when the id is taken.
pub const INSERT_ORDER: Statement = Statement {
    text: "INSERT INTO orders (id, doc) VALUES ($1, $2) ON CONFLICT (id) DO NOTHING RETURNING id",
    types: &[Type::INT8, Type::JSONB],
};

/// One statement: set status and updated_at when the order exists and (if `$4` is given) has
/// status `$4`; returns the new document, or no row.
pub const UPDATE_STATUS: Statement = Statement {
    text: "UPDATE orders \
           SET doc = jsonb_set(jsonb_set(doc, '{status}', to_jsonb($2::text)), '{updated_at}', to_jsonb($3::text)) \
           WHERE id = $1 AND ($4::text IS NULL OR doc->>'status' = $4::text) \
           RETURNING doc",
    types: &[Type::INT8, Type::TEXT, Type::TEXT, Type::TEXT],
};

/// Only after `UPDATE_STATUS` returned no row: tells "missing" from "other status".
pub const CURRENT_STATUS: Statement =
    Statement { text: "SELECT doc->>'status' FROM orders WHERE id = $1", types: &[Type::INT8] };

/// Every statement a request may run, for reading back their plan-cache counters.
pub const REQUEST_STATEMENTS: [&Statement; 6] =
    [&GET_ORDER, &ORDERS_BY_CUSTOMER, &ORDERS_BY_PRODUCT, &INSERT_ORDER, &UPDATE_STATUS, &CURRENT_STATUS];

/// Runs `statement` in `mode` and returns its rows.
pub async fn query(
    client: &deadpool_postgres::Client,
    mode: StatementMode,
    statement: &Statement,
    params: &[&(dyn ToSql + Sync)],
) -> Result<Vec<Row>, tokio_postgres::Error> {
    match mode {
        StatementMode::Prepared => {
            let prepared = client.prepare_typed_cached(statement.text, statement.types).await?;
            client.query(&prepared, params).await
        }
        StatementMode::Unprepared => {
            let typed: Vec<(&(dyn ToSql + Sync), Type)> =
                params.iter().copied().zip(statement.types.iter().cloned()).collect();
            client.query_typed(statement.text, &typed).await
        }
    }
}
