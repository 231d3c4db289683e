//! The iterator of [`View::iter`]: runs of history under no map are read as slices.

use std::slice;

use curator_model::Message;

use super::entry::{MessageRef, ViewEntry};
use super::items::{Item, Slot};
use super::selection::View;

/// The iterator of [`View::iter`]. A run of history messages under no map is handed out
/// from the history's slice, with no per-message lookup; other items slot by slot.
#[derive(Debug)]
pub(super) struct Entries<'v, 'h> {
    view: &'v View<'h>,
    /// The next item to start.
    item: usize,
    /// The rest of a run read as a slice: the position of its next message, and the messages.
    run: (usize, slice::Iter<'h, Message>),
    /// The rest of a run read slot by slot (under maps): its next offset and its length.
    slots: (u32, u32),
}

impl<'h> View<'h> {
    /// The messages with their positions, in order.
    pub fn iter(&self) -> impl Iterator<Item = ViewEntry<'h>> + '_ {
        Entries { view: self, item: 0, run: (0, [].iter()), slots: (0, 0) }
    }
}

impl<'h> Iterator for Entries<'_, 'h> {
    type Item = ViewEntry<'h>;

    #[inline]
    fn next(&mut self) -> Option<ViewEntry<'h>> {
        loop {
            if let Some(message) = self.run.1.next() {
                let pos = self.run.0;
                self.run.0 += 1;
                return Some(ViewEntry { pos: Some(pos), message: MessageRef::Borrowed(message) });
            }
            if self.slots.0 < self.slots.1 {
                let slot = Slot { item: self.item - 1, offset: self.slots.0 };
                self.slots.0 += 1;
                return Some(self.view.slot_entry(slot));
            }
            let item = self.view.items.item(self.item)?;
            self.item += 1;
            match item {
                Item::Run { start, end } if self.view.maps.is_empty() => {
                    let (start, end) = (*start as usize, *end as usize);
                    let messages = self.view.history.messages();
                    // A run only ever holds history positions; were that broken, the view's
                    // other readers (which index) would panic where this would skip.
                    debug_assert!(end <= messages.len(), "run {start}..{end} past the history");
                    self.run = (start, messages.get(start..end).unwrap_or_default().iter());
                }
                Item::Run { start, end } => self.slots = (0, end - start),
                Item::Owned { .. } => {
                    return Some(self.view.slot_entry(Slot { item: self.item - 1, offset: 0 }));
                }
            }
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = self.view.len().saturating_sub(self.view.items.end_of(self.item))
            + self.run.1.len()
            + (self.slots.1 - self.slots.0) as usize;
        (left, Some(left))
    }
}

impl ExactSizeIterator for Entries<'_, '_> {}
