//! `orders-pg-hybrid`: the order service on PostgreSQL with the fields the API filters on or
//! changes in typed columns (`customer_id`, `status`, `updated_at`) beside a jsonb document of the
//! rest, and product ids in a child table `order_items` with a B-tree. `config` is the service's
//! command line (the same Postgres settings as orders-pg), `migrate` applies
//! `migrations/postgres-hybrid`, `sql` holds every statement (each answer joins the columns back
//! into the document, so the JSON is byte for byte orders-pg's), `store` implements `OrderStore`
//! on orders-pg's pool, and `diagnostics` reports this layout. Connections, statement modes,
//! errors and the report's types are orders-pg's; what the bench runner sends this layout
//! besides lives in `orders-bench-engines`.

#![forbid(unsafe_code)]

// First: its `order_json!` and `rest_of!` macros are used by the modules after it.
#[macro_use]
pub mod sql;

pub mod config;
pub mod diagnostics;
pub mod migrate;
pub mod store;
pub mod testing;

pub use config::Config;
pub use store::HybridStore;
