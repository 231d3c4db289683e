//! Integration tests of curator-session.
#![allow(clippy::unwrap_used, clippy::panic, reason = "test helpers fail loudly")]

mod asynchronous;
mod conformance;
mod conversation;
mod crash;
mod driver;
mod run;
mod snapshot;
