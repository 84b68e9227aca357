//! The shared store contract, against real PostgreSQL: one new database per test.

use orders_pg::testing::fresh_store;

orders_testkit::store_contract_tests!(fresh_store);
