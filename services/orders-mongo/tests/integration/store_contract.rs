//! The shared store contract (`orders-testkit`) against a real mongod: every check on a fresh
//! database of its own, dropped afterwards.

use crate::common;

use common::fresh_store;

orders_testkit::store_contract_tests!(fresh_store);
