//! Integration tests of curator-postgres, against a real PostgreSQL server that the test
//! harness starts (`curator_testkit::postgres`); the multi-process tests are in
//! `tests/processes.rs`.
#![allow(clippy::unwrap_used, clippy::panic, reason = "test helpers fail loudly")]

mod claims;
mod conformance;
mod fencing;
mod opening;
mod pgpass;
mod redaction;
mod restart;
mod rows;
mod support;
#[cfg(feature = "tls")]
mod tls;
