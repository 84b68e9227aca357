//! Holds no code: this crate's tests (`tests/`) start both services over real databases and
//! check that they answer the same requests identically.

#![forbid(unsafe_code)]
