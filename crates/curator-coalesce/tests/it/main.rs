//! Integration tests of curator-coalesce.

mod golden;
mod props;
mod vocabulary;
