//! The curated view: positions into a [`History`](crate::History) plus the few messages a
//! strategy changed. How a view is held (runs of positions, owned messages) is private to
//! this folder; strategies use the reading and editing API of [`View`].

mod chains;
mod edit;
mod entries;
mod entry;
mod frozen;
mod items;
mod paired;
mod reasoning;
mod selection;
mod shape;
mod tally;
mod walk;

pub use edit::Edit;
pub use entry::{MessageRef, ViewEntry};
pub(crate) use frozen::Frozen;
pub use selection::View;
pub use shape::{Head, Unit};
pub use tally::Tally;
pub use walk::UnitsRev;
