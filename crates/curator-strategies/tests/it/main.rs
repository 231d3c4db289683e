//! Integration tests of curator-strategies.
#![allow(clippy::unwrap_used, clippy::panic, reason = "test helpers fail loudly")]

mod budget;
mod config;
mod corpus;
mod edges;
mod events;
mod props;
mod transform;
