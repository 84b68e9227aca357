//! The shared store contract, against real PostgreSQL in the hybrid layout: one new database per
//! test.

use orders_pg_hybrid::testing::fresh_store;

orders_testkit::store_contract_tests!(fresh_store);
