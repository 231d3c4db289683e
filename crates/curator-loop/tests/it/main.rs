//! Integration tests of curator-loop.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "tests fail loudly")]

mod bound;
mod config;
mod http;
mod inject;
mod lens;
mod persist;
mod processes;
mod props;
mod quota;
mod resume;
mod support;
mod trace;
mod turns;
