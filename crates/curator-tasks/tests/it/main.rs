//! Integration tests of curator-tasks.

mod lifecycle;
mod render;
mod tools;
