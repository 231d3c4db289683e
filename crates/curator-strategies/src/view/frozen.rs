//! A view's selection held apart from the history it borrows, so that a strategy can keep
//! a view it built between calls and build the next view from it (see
//! [`StableBudget`](crate::StableBudget)).

use std::sync::Arc;

use super::entry::MessageRef;
use super::items::{Item, Items};
use super::selection::View;

/// What a view selects (runs of positions, owned messages), without the borrow of its
/// history or its maps. Valid for the history it was taken from, or any history that holds
/// the same messages at the same positions (histories only grow).
#[derive(Clone, Debug, Default)]
pub(crate) struct Frozen {
    items: Items,
    /// Whether the view it was taken from follows the coherence rules as it stands.
    coherent: bool,
}

impl Frozen {
    /// Number of messages.
    pub(crate) fn len(&self) -> usize {
        self.items.len()
    }
}

impl<'h> View<'h> {
    /// The view's selection, kept apart from the history.
    pub(crate) fn freeze(&self) -> Frozen {
        Frozen { items: self.items.clone(), coherent: self.coherent }
    }

    /// The view's selection as a view under only its first `base` maps would show it: what
    /// the maps after those (a strategy's lazy cut) change is written into owned messages,
    /// so that the selection joined to a view under the `base` maps shows the same messages.
    pub(crate) fn freeze_under(&self, base: usize) -> Frozen {
        if self.maps.len() <= base {
            return self.freeze();
        }
        let under = View {
            history: self.history,
            items: self.items.clone(),
            maps: self.maps[..base].to_vec(),
            coherent: false,
        };
        let mut items = Items::with_capacity(self.items.len());
        for slot in self.items.slots() {
            let shown = self.slot_message(slot);
            let pos = self.slot_pos(slot).map(|p| p as u32);
            match self.items.get(slot.item) {
                Item::Run { start, .. } if *under.slot_message(slot) == *shown => {
                    let at = start + slot.offset;
                    items.push(Item::Run { start: at, end: at + 1 });
                }
                _ => {
                    let message = match shown {
                        MessageRef::Shared(message) => message,
                        MessageRef::Borrowed(message) => Arc::new(message.clone()),
                    };
                    items.push(Item::Owned { pos, message, applied: base });
                }
            }
        }
        Frozen { items, coherent: false }
    }

    /// One past the history position of the view's newest history message (0 when it holds
    /// none): the history the view was curated from, as far as it reaches.
    pub(crate) fn horizon(&self) -> usize {
        self.items
            .iter()
            .rev()
            .find_map(|item| match item {
                Item::Run { end, .. } => Some(*end as usize),
                Item::Owned { pos: Some(pos), .. } => Some(*pos as usize + 1),
                Item::Owned { pos: None, .. } => None,
            })
            .unwrap_or(0)
    }

    /// Number of lazy maps the view shows its messages through.
    pub(crate) fn map_count(&self) -> usize {
        self.maps.len()
    }

    /// The first `len` messages of this view, as a view (its maps kept).
    pub(crate) fn prefix(&self, len: usize) -> View<'h> {
        let mut items = self.items.clone();
        items.truncate(len);
        View { history: self.history, items, maps: self.maps.clone(), coherent: false }
    }

    /// Whether this view's first `frozen.len()` messages are the ones `frozen` selects: the
    /// same positions, and owned messages equal. Costs O(items), and a comparison of each
    /// owned message that is not the same allocation.
    pub(crate) fn starts_with(&self, frozen: &Frozen) -> bool {
        if self.len() < frozen.len() {
            return false;
        }
        let mut mine = self.items.clone();
        mine.truncate(frozen.len());
        mine.iter().count() == frozen.items.iter().count()
            && mine.iter().zip(frozen.items.iter()).all(|(a, b)| same_item(a, b))
    }

    /// The view `kept` (a selection frozen from an earlier view of this history, under the
    /// same maps) followed by this view's messages from index `from` on.
    pub(crate) fn kept_then(&self, kept: &Frozen, from: usize) -> View<'h> {
        let mut items = kept.items.clone();
        items.extend_from(&self.items, from..self.len());
        // Nothing appended: the view frozen, as coherent as it was.
        let coherent = kept.coherent && from >= self.len();
        View { history: self.history, items, maps: self.maps.clone(), coherent }
    }
}

fn same_item(a: &Item, b: &Item) -> bool {
    match (a, b) {
        (Item::Run { start: s1, end: e1 }, Item::Run { start: s2, end: e2 }) => {
            s1 == s2 && e1 == e2
        }
        (
            Item::Owned { pos: p1, message: m1, applied: a1 },
            Item::Owned { pos: p2, message: m2, applied: a2 },
        ) => p1 == p2 && a1 == a2 && (Arc::ptr_eq(m1, m2) || m1 == m2),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use curator_model::Message;

    use crate::{History, View};

    #[test]
    fn a_frozen_prefix_is_recognised_and_joined_to_what_follows() {
        let history = History::from(vec![
            Message::user("a"),
            Message::assistant("b"),
            Message::user("c"),
            Message::assistant("d"),
        ]);
        let full = View::full(&history);
        let mut edit = full.edit();
        edit.keep(0..1).insert(Message::user("[note]"));
        let kept = edit.build().freeze();
        let joined = full.kept_then(&kept, 2);
        let texts: Vec<String> = joined.iter().map(|e| e.message.text().into_owned()).collect();
        assert_eq!(texts, ["a", "[note]", "c", "d"]);
        assert!(joined.starts_with(&kept));
        assert!(full.starts_with(&full.prefix(3).freeze()));
        assert!(!full.starts_with(&kept));
        assert!(!full.prefix(1).starts_with(&full.prefix(2).freeze()));
    }
}
