//! Integration tests of curator-agent.
#![allow(clippy::unwrap_used, clippy::panic, reason = "test helpers fail loudly")]

mod agent;
mod client;
