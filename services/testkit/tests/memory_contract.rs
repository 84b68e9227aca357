//! The store contract run against the in-memory reference store: if it fails here, the suite
//! itself (not a backend) is wrong.

use orders_core::memory::MemoryStore;

async fn fresh_store() -> MemoryStore {
    MemoryStore::new()
}

orders_testkit::store_contract_tests!(fresh_store);
