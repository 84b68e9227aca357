//! `orders-pg-hybrid`'s integration tests, one test binary (each file a module: compiled and
//! linked once, not once per file): the API and store contracts over real PostgreSQL, the layout
//! read back from the server, the migration, and the same JSON as orders-pg. nextest runs every
//! test in a process of its own; `.config/nextest.toml` runs `layout` alone.

mod api_contract;
mod layout;
mod migrate;
mod same_json;
mod store_contract;
