//! Holds no code: this crate's tests (`tests/`) start the services (orders-pg, orders-pg-hybrid,
//! orders-mongo) over real databases and check that they answer the same requests identically.

#![forbid(unsafe_code)]
