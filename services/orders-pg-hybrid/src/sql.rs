//! Every statement the hybrid layout runs on the request path, with its parameter types (they run
//! through orders-pg's `sql::query`, prepared or unprepared as `PG_STATEMENT_MODE` says).
//!
//! An order goes in as its JSON (`$5`, the text the service already wrote) plus its hot fields as
//! typed parameters; the statement stores the JSON without the fields the columns hold and writes
//! one `order_items` row per distinct product in the same statement. Every answer is `ORDER_JSON`:
//! the document with the columns joined back in, built as jsonb, so its text (keys in jsonb's
//! order) is exactly what orders-pg sends for the same order.

use orders_core::Limit;
use orders_pg::config::LimitMode;
use orders_pg::sql::Statement;
use std::sync::LazyLock;
use tokio_postgres::types::Type;

/// The API's order: `doc` with `id`, `customer.id`, `status` and `updated_at` from the columns
/// (`updated_at` in the API's form, RFC 3339 UTC with milliseconds). Column names are unqualified:
/// `orders` and `order_items` share none. Exported for the bench's seeding and fingerprint
/// (`orders_bench_engines::hybrid::admin`), which must build the same JSON.
#[macro_export]
macro_rules! order_json {
    () => {
        "doc || jsonb_build_object(\
             'id', id, \
             'customer', (doc->'customer') || jsonb_build_object('id', customer_id), \
             'status', status, \
             'updated_at', to_char(updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'))"
    };
}

/// `$5` (the order's JSON) without the fields the columns hold (exported like `order_json!`).
#[macro_export]
macro_rules! rest_of {
    ($param:literal) => {
        concat!($param, "::jsonb - 'id' - 'status' - 'updated_at' #- '{customer,id}'")
    };
}

/// The columns and parameters of an insert: `$1` id, `$2` customer id, `$3` status, `$4`
/// `updated_at` (text, RFC 3339), `$5` the order's JSON, `$6` its product ids.
const INSERT_TYPES: [Type; 6] = [Type::INT8, Type::INT8, Type::TEXT, Type::TEXT, Type::JSONB, Type::INT8_ARRAY];

pub const GET_ORDER: Statement =
    Statement { text: concat!("SELECT ", order_json!(), " FROM orders WHERE id = $1"), types: &[Type::INT8] };

pub const ORDERS_BY_CUSTOMER: Statement = Statement {
    text: concat!(
        "SELECT ",
        order_json!(),
        " FROM orders WHERE customer_id = $1 AND id < $2 ORDER BY id DESC LIMIT $3"
    ),
    types: &[Type::INT8, Type::INT8, Type::INT8],
};

/// The product search without its limit; `$1` is the product id. The B-tree `order_items_product`
/// finds the orders, each then read by its primary key.
pub const PRODUCT_SEARCH: &str =
    concat!("SELECT ", order_json!(), " FROM order_items JOIN orders ON id = order_id WHERE product_id = $1");

/// The product search with the limit as a parameter (`PG_LIMIT_MODE=parameter`).
pub const ORDERS_BY_PRODUCT_LIMIT_PARAMETER: Statement = Statement {
    text: concat!(
        "SELECT ",
        order_json!(),
        " FROM order_items JOIN orders ON id = order_id WHERE product_id = $1 LIMIT $2"
    ),
    types: &[Type::INT8, Type::INT8],
};

/// The product search's text with each limit the API accepts as a literal, as orders-pg runs it
/// by default (one prepared statement per distinct limit). Index `n - 1` holds `LIMIT n`.
static PRODUCT_SEARCH_WITH_LIMIT: LazyLock<Vec<String>> =
    LazyLock::new(|| (1..=Limit::MAX).map(|n| format!("{PRODUCT_SEARCH} LIMIT {n}")).collect());

/// The product search for `limit` in `mode`; its parameters are `[product]` for `literal`,
/// `[product, limit]` for `parameter`.
pub fn orders_by_product(mode: LimitMode, limit: Limit) -> Statement {
    match mode {
        LimitMode::Literal => {
            let index = limit.get().saturating_sub(1) as usize;
            Statement { text: PRODUCT_SEARCH_WITH_LIMIT[index].as_str(), types: &[Type::INT8] }
        }
        LimitMode::Parameter => ORDERS_BY_PRODUCT_LIMIT_PARAMETER,
    }
}

/// Returns the id when inserted, no row when the id is taken (and then writes no product rows).
pub const INSERT_ORDER: Statement = Statement {
    text: concat!(
        "WITH inserted AS ( \
             INSERT INTO orders (id, customer_id, status, updated_at, doc) \
             VALUES ($1, $2, $3, $4::timestamptz, ",
        rest_of!("$5"),
        ") ON CONFLICT (id) DO NOTHING RETURNING id), \
         items AS ( \
             INSERT INTO order_items (order_id, product_id) \
             SELECT DISTINCT inserted.id, product FROM inserted, unnest($6::bigint[]) AS product) \
         SELECT id FROM inserted"
    ),
    types: &INSERT_TYPES,
};

/// `INSERT_ORDER` with an `Idempotency-Key` (`$7`) and the request's fingerprint (`$8`), answered
/// as orders-pg's: one row with a NULL document: inserted; one row with a document: the key's
/// order; no row: the id is taken, or the key was committed after this statement's snapshot.
pub const INSERT_ORDER_WITH_KEY: Statement = Statement {
    text: concat!(
        "WITH inserted AS ( \
             INSERT INTO orders (id, customer_id, status, updated_at, doc, idempotency_key, idempotency_fingerprint) \
             VALUES ($1, $2, $3, $4::timestamptz, ",
        rest_of!("$5"),
        ", $7, $8) ON CONFLICT DO NOTHING RETURNING id), \
         items AS ( \
             INSERT INTO order_items (order_id, product_id) \
             SELECT DISTINCT inserted.id, product FROM inserted, unnest($6::bigint[]) AS product) \
         SELECT NULL::jsonb, NULL::bigint FROM inserted \
         UNION ALL \
         SELECT ",
        order_json!(),
        ", idempotency_fingerprint FROM orders WHERE idempotency_key = $7 AND NOT EXISTS (SELECT 1 FROM inserted)"
    ),
    types: &[Type::INT8, Type::INT8, Type::TEXT, Type::TEXT, Type::JSONB, Type::INT8_ARRAY, Type::TEXT, Type::INT8],
};

/// Only after `INSERT_ORDER_WITH_KEY` returned no row.
pub const ORDER_BY_KEY: Statement = Statement {
    text: concat!("SELECT ", order_json!(), ", idempotency_fingerprint FROM orders WHERE idempotency_key = $1"),
    types: &[Type::TEXT],
};

/// Releases a key past its retention window: the same columns as orders-pg's, so its statement.
pub const FORGET_KEY: Statement = orders_pg::sql::FORGET_KEY;

/// A status change writes two typed columns and nothing indexed, so it can be a HOT update; the
/// document stays as it is. Rows as orders-pg's `UPDATE_STATUS`: a document: updated; a status:
/// the order has that one; none: no such order.
pub const UPDATE_STATUS: Statement = Statement {
    text: concat!(
        "WITH updated AS ( \
             UPDATE orders SET status = $2, updated_at = $3::timestamptz \
             WHERE id = $1 AND ($4::text IS NULL OR status = $4::text) \
             RETURNING ",
        order_json!(),
        " AS doc) \
         SELECT doc, NULL::text FROM updated \
         UNION ALL \
         SELECT NULL::jsonb, status FROM orders WHERE id = $1 AND NOT EXISTS (SELECT 1 FROM updated)"
    ),
    types: &[Type::INT8, Type::TEXT, Type::TEXT, Type::TEXT],
};

/// `UPDATE_STATUS` for `Prefer: return=minimal`: the document is never built.
pub const UPDATE_STATUS_MINIMAL: Statement = Statement {
    text: "WITH updated AS ( \
               UPDATE orders SET status = $2, updated_at = $3::timestamptz \
               WHERE id = $1 AND ($4::text IS NULL OR status = $4::text) \
               RETURNING 1) \
           SELECT NULL::jsonb, NULL::text FROM updated \
           UNION ALL \
           SELECT NULL::jsonb, status FROM orders WHERE id = $1 AND NOT EXISTS (SELECT 1 FROM updated)",
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_product_search_carries_its_limit_as_orders_pg_does() {
        let ten = Limit::new(10).expect("limit");
        let literal = orders_by_product(LimitMode::Literal, ten);
        assert_eq!(literal.text, format!("{PRODUCT_SEARCH} LIMIT 10"));
        assert_eq!(literal.types, &[Type::INT8], "one parameter: the product");
        let last = orders_by_product(LimitMode::Literal, Limit::new(u64::from(Limit::MAX)).expect("limit"));
        assert!(last.text.ends_with(" LIMIT 100"), "{}", last.text);
        let parameter = orders_by_product(LimitMode::Parameter, ten);
        assert!(parameter.text.starts_with(PRODUCT_SEARCH) && parameter.text.ends_with(" LIMIT $2"));
        assert_eq!(parameter.types.len(), 2);
    }
}
