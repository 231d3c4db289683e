//! Integration tests of curator-model.
#![allow(clippy::unwrap_used, clippy::panic, reason = "test helpers fail loudly")]

mod anthropic;
mod convert;
mod corpus;
mod current;
mod entry_json;
mod errors;
mod items;
mod numbers;
mod openai;
mod passthrough;
mod props;
mod responses;
mod rules;
mod strict;
mod tools;
mod validate;
