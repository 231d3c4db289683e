//! Integration tests of curator-coalesce.

mod arb;
mod bounds;
mod budget_props;
mod config;
mod driver;
mod golden;
mod props;
mod recording;
mod render_props;
mod review;
mod trace;
mod vocabulary;
