//! Integration tests of curator-strategies.
#![allow(clippy::unwrap_used, clippy::panic, reason = "test helpers fail loudly")]

#[cfg(feature = "tiktoken")]
mod bpe;
mod budget;
mod budget_props;
mod config;
mod corpus;
mod edges;
mod events;
#[cfg(feature = "tiktoken")]
mod never_lost;
mod pairing;
mod props;
mod reasoning;
mod redact;
mod relevance;
#[cfg(feature = "tiktoken")]
mod shapes;
mod stable;
mod starve;
mod summarize;
mod tally;
mod transform;
mod units;
