//! Integration tests of curator-coalesce.

mod arb;
mod golden;
mod props;
mod render_props;
mod trace;
mod vocabulary;
