//! Integration tests of curator-coalesce.

mod props;
mod vocabulary;
