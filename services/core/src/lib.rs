//! The order domain shared by both services: typed values that cannot hold invalid data
//! (`values`, `order`), the parser that turns a request body into those types with one error per
//! bad field (`validate`; the errors, bounded, in `field_errors`), the id generator, timestamps,
//! the `Idempotency-Key` rules (`idempotency`), orders already written as JSON (`order_json`, what
//! reads return; `json_write` writes them by hand), and the `OrderStore` trait each backend
//! implements. Nothing here knows about HTTP or a database driver.

#![forbid(unsafe_code)]

pub mod field_errors;
pub mod idempotency;
pub mod ids;
pub mod json_tree;
pub mod json_write;
pub mod memory;
pub mod order;
pub mod order_json;
pub mod sample;
pub mod store;
pub mod time;
pub mod validate;
pub mod values;

pub use field_errors::{FieldError, FieldErrors, echo};
pub use idempotency::IdempotencyKey;
pub use ids::{CustomerId, IdGenerator, MAX_SAFE_INTEGER, OrderId, ProductId};
pub use order::{Customer, Item, NewOrder, Order, Shipping, Status, StatusChange};
pub use order_json::{ListBytes, OrderJson, OrderListJson, OrderToStore};
pub use store::{
    CustomerQuery, KeyedInsert, Limit, OrderStore, Placed, PoolStatus, ProductQuery, Returning, StoreError, place_order,
};
pub use time::Timestamp;
