//! Integration tests of curator-tasks.

mod driver;
mod lifecycle;
mod props;
mod render;
mod review;
mod tools;
