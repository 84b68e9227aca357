//! Every statement the service runs on the request path, with its parameter types, and the one
//! function that executes them in the configured `PG_STATEMENT_MODE`:
//! - `prepared`: a named statement prepared once per connection and cached (the first execution
//!   on a connection costs an extra round trip; then Postgres' plan cache decides between custom
//!   and generic plans, which is what study S1's finding F1 is about);
//! - `unprepared`: an unnamed statement sent with its parameters in one round trip (Parse, Bind,
//!   Execute), planned on every execution with the actual values.
//!
//! Orders go in as `JsonbText`: the JSON the service already wrote, sent without a second
//! serialisation; they come back as `JsonText` (`stored_json`; lists through `query_stream`): the document as the
//! server sent it, not parsed again.

use crate::config::{LimitMode, StatementMode};
use orders_core::{Limit, StoreError};
use std::sync::LazyLock;
use tokio_postgres::types::private::BytesMut;
use tokio_postgres::types::{FromSql, IsNull, ToSql, Type, accepts, to_sql_checked};
use tokio_postgres::{Row, RowStream};

#[derive(Debug, Clone, Copy)]
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

/// Study S1's product search without its limit; `$1` is `[{"product_id": N}]`.
pub const PRODUCT_SEARCH: &str = "SELECT doc FROM orders WHERE doc->'items' @> $1";

/// The product search with the limit as a parameter (`PG_LIMIT_MODE=parameter`): the generic plan
/// cannot see the limit and costs its `Limit` at a tenth of the rows it expects, so it never beats
/// the index plan and finding F1 cannot happen.
pub const ORDERS_BY_PRODUCT_LIMIT_PARAMETER: Statement =
    Statement { text: "SELECT doc FROM orders WHERE doc->'items' @> $1 LIMIT $2", types: &[Type::JSONB, Type::INT8] };

/// The product search's text with each limit the API accepts as a literal (`... LIMIT 10`), as
/// study S1's service (pgx) ran it: one statement, and so one prepared statement per connection,
/// per distinct limit. Index `n - 1` holds `LIMIT n`.
static PRODUCT_SEARCH_WITH_LIMIT: LazyLock<Vec<String>> =
    LazyLock::new(|| (1..=Limit::MAX).map(|n| format!("{PRODUCT_SEARCH} LIMIT {n}")).collect());

/// The product search for `limit` in `mode`; its parameters are `[containment]` for `literal`,
/// `[containment, limit]` for `parameter`.
pub fn orders_by_product(mode: LimitMode, limit: Limit) -> Statement {
    match mode {
        LimitMode::Literal => {
            Statement { text: PRODUCT_SEARCH_WITH_LIMIT[limit.get() as usize - 1].as_str(), types: &[Type::JSONB] }
        }
        LimitMode::Parameter => ORDERS_BY_PRODUCT_LIMIT_PARAMETER,
    }
}

/// Returns the id when inserted, no row when the id is taken.
pub const INSERT_ORDER: Statement = Statement {
    text: "INSERT INTO orders (id, doc) VALUES ($1, $2) ON CONFLICT (id) DO NOTHING RETURNING id",
    types: &[Type::INT8, Type::JSONB],
};

/// With an `Idempotency-Key` (`$3`) and the request's fingerprint (`$4`), in one statement: the
/// insert (nothing when the id or the key is taken), and if it wrote nothing, the order that
/// already carries the key with its fingerprint. One row with a NULL document: inserted. One row
/// with a document: the key's order. No row: the id is taken, or another request with this key
/// committed after this statement's snapshot (`ORDER_BY_KEY` tells which).
pub const INSERT_ORDER_WITH_KEY: Statement = Statement {
    text: "WITH inserted AS ( \
               INSERT INTO orders (id, doc, idempotency_key, idempotency_fingerprint) VALUES ($1, $2, $3, $4) \
               ON CONFLICT DO NOTHING RETURNING id) \
           SELECT NULL::jsonb, NULL::bigint FROM inserted \
           UNION ALL \
           SELECT doc, idempotency_fingerprint FROM orders \
           WHERE idempotency_key = $3 AND NOT EXISTS (SELECT 1 FROM inserted)",
    types: &[Type::INT8, Type::JSONB, Type::TEXT, Type::INT8],
};

/// Only after `INSERT_ORDER_WITH_KEY` returned no row.
pub const ORDER_BY_KEY: Statement = Statement {
    text: "SELECT doc, idempotency_fingerprint FROM orders WHERE idempotency_key = $1",
    types: &[Type::TEXT],
};

/// Releases a key past its retention window from the order that holds it.
pub const FORGET_KEY: Statement = Statement {
    text: "UPDATE orders SET idempotency_key = NULL, idempotency_fingerprint = NULL \
           WHERE id = $1 AND idempotency_key = $2",
    types: &[Type::INT8, Type::TEXT],
};

/// One statement for every outcome of a status change: the `UPDATE` (when the order exists and,
/// if `$4` is given, has status `$4`), and only when it changed nothing, the current status. One
/// row with a document: updated. One row with a status: the order has that status. No row: no
/// such order. The fallback `SELECT` reads the statement's snapshot, so in a race it can report
/// the status `$4` that a concurrent change has just replaced; the store then tries again.
pub const UPDATE_STATUS: Statement = Statement {
    text: "WITH updated AS ( \
               UPDATE orders \
               SET doc = jsonb_set(jsonb_set(doc, '{status}', to_jsonb($2::text)), '{updated_at}', to_jsonb($3::text)) \
               WHERE id = $1 AND ($4::text IS NULL OR doc->>'status' = $4::text) \
               RETURNING doc) \
           SELECT doc, NULL::text FROM updated \
           UNION ALL \
           SELECT NULL::jsonb, doc->>'status' FROM orders WHERE id = $1 AND NOT EXISTS (SELECT 1 FROM updated)",
    types: &[Type::INT8, Type::TEXT, Type::TEXT, Type::TEXT],
};

/// `UPDATE_STATUS` for `Prefer: return=minimal`: the same rows, but the document never leaves the
/// database (a row with a NULL status means updated).
pub const UPDATE_STATUS_MINIMAL: Statement = Statement {
    text: "WITH updated AS ( \
               UPDATE orders \
               SET doc = jsonb_set(jsonb_set(doc, '{status}', to_jsonb($2::text)), '{updated_at}', to_jsonb($3::text)) \
               WHERE id = $1 AND ($4::text IS NULL OR doc->>'status' = $4::text) \
               RETURNING 1) \
           SELECT NULL::jsonb, NULL::text FROM updated \
           UNION ALL \
           SELECT NULL::jsonb, doc->>'status' FROM orders WHERE id = $1 AND NOT EXISTS (SELECT 1 FROM updated)",
    types: &[Type::INT8, Type::TEXT, Type::TEXT, Type::TEXT],
};

/// Every statement a request may run besides the product search (whose texts all begin with
/// `PRODUCT_SEARCH`), for reading back their plan-cache counters.
pub const REQUEST_STATEMENTS: [&Statement; 9] = [
    &GET_ORDER,
    &ORDERS_BY_CUSTOMER,
    &ORDERS_BY_PRODUCT_LIMIT_PARAMETER,
    &INSERT_ORDER,
    &INSERT_ORDER_WITH_KEY,
    &ORDER_BY_KEY,
    &FORGET_KEY,
    &UPDATE_STATUS,
    &UPDATE_STATUS_MINIMAL,
];

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

/// Runs `statement` in `mode` and returns its rows as they arrive: the driver reads the next rows
/// from the server only as the stream is consumed, and discards the rest once it is dropped.
pub async fn query_stream(
    client: &deadpool_postgres::Client,
    mode: StatementMode,
    statement: &Statement,
    params: &[&(dyn ToSql + Sync)],
) -> Result<RowStream, tokio_postgres::Error> {
    match mode {
        StatementMode::Prepared => {
            let prepared = client.prepare_typed_cached(statement.text, statement.types).await?;
            client.query_raw(&prepared, params.iter().copied()).await
        }
        StatementMode::Unprepared => {
            let typed = params.iter().copied().zip(statement.types.iter().cloned());
            client.query_typed_raw(statement.text, typed).await
        }
    }
}

/// JSON text (an `OrderJson`'s bytes) as a `jsonb` or `json` parameter, as it is: jsonb's binary
/// input is a version byte (1) and the text, so there is nothing for the driver to serialise. The
/// server parses the text like any jsonb input, so malformed JSON is an error there, never stored.
#[derive(Debug, Clone, Copy)]
pub struct JsonbText<'a>(pub &'a [u8]);

impl ToSql for JsonbText<'_> {
    fn to_sql(&self, ty: &Type, out: &mut BytesMut) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        if *ty == Type::JSONB {
            out.extend_from_slice(&[1]);
        }
        out.extend_from_slice(self.0);
        Ok(IsNull::No)
    }

    accepts!(JSON, JSONB);
    to_sql_checked!();
}

/// The JSON text of a `json` or `jsonb` value, borrowed from the row as the server sent it.
pub struct JsonText<'a>(pub &'a [u8]);

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

/// The document in the row's first column, as JSON text.
pub fn stored_json(row: &Row) -> Result<&[u8], StoreError> {
    row.try_get::<_, JsonText>(0)
        .map(|JsonText(text)| text)
        .map_err(|e| StoreError::Internal(format!("stored document is not JSON: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_product_search_carries_its_limit_as_a_literal_unless_asked_for_a_parameter() {
        let ten = Limit::new(10).expect("limit");
        let literal = orders_by_product(LimitMode::Literal, ten);
        assert_eq!(literal.text, "SELECT doc FROM orders WHERE doc->'items' @> $1 LIMIT 10");
        assert_eq!(literal.types, &[Type::JSONB], "one parameter: the containment");
        let last = orders_by_product(LimitMode::Literal, Limit::new(u64::from(Limit::MAX)).expect("limit"));
        assert!(last.text.ends_with(" LIMIT 100"), "{}", last.text);
        assert_eq!(
            orders_by_product(LimitMode::Literal, Limit::new(1).expect("limit")).text,
            format!("{PRODUCT_SEARCH} LIMIT 1")
        );
        let parameter = orders_by_product(LimitMode::Parameter, ten);
        assert_eq!(parameter.text, "SELECT doc FROM orders WHERE doc->'items' @> $1 LIMIT $2");
        assert_eq!(parameter.types.len(), 2);
    }
}
