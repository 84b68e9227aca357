//! The shared store contract, against real PostgreSQL: one new database per test.

mod support;

use support::fresh_store;

orders_testkit::store_contract_tests!(fresh_store);
