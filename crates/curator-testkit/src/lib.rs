//! Shared test fixtures for the curator workspace (not published).
//!
//! - [`corpus`]: the real agent transcripts of `../shared/corpus/`, when present (required
//!   under CI).
//! - [`arb`]: proptest generators of provider-valid message lists.
//! - [`projection`]: the part of a message both providers can express, for comparing
//!   messages across formats.
//! - [`chat_server`]: a loopback HTTP server that speaks OpenAI chat completions.
//! - [`postgres`]: a throwaway PostgreSQL server (`initdb`, `pg_ctl`) for tests and benches.
//! - [`processes`]: the harness of the process tests, a test binary that is its own child.
//! - [`error_chain`]: an error with all its causes, for asserting on what a cause said.

#![expect(clippy::print_stderr, reason = "tests print why they skip")]
#![expect(clippy::panic, reason = "a missing (under CI) or broken fixture must fail the test")]

pub mod arb;
pub mod chat_server;
pub mod corpus;
pub mod postgres;
pub mod processes;
pub mod projection;
pub mod synthetic;

/// `error` and each of its causes, joined by ` / `: for asserting on what a cause said.
pub fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(" / ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
