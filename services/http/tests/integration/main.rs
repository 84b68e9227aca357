//! The HTTP layer's integration tests, one test binary (each file a module): the behaviour over
//! the in-memory store and the failure modes below it.

mod api_over_memory;
mod failure_modes;
