//! Integration tests of curator-tasks.

mod render;
mod tools;
