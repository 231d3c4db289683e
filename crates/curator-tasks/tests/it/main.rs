//! Integration tests of curator-tasks.

mod lifecycle;
mod props;
mod render;
mod review;
mod tools;
