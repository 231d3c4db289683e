//! Integration tests of curator-sqlite (the multi-process tests are in `tests/processes.rs`).
#![allow(clippy::unwrap_used, clippy::panic, reason = "test helpers fail loudly")]

mod asynchronous;
mod concurrency;
mod conformance;
mod corruption;
mod fencing;
mod files;
mod opening;
mod retention;
mod stamps;
mod support;
