//! Integration tests of curator-tasks.

mod driver;
mod kept;
mod lifecycle;
mod new_user;
mod props;
mod render;
mod review;
mod tools;
