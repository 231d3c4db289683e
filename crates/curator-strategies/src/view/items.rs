//! How a view is held: runs of history positions and owned messages. Private to `view/`.

use std::ops::Range;
use std::sync::Arc;

use curator_model::Message;

/// A stretch of a view.
#[derive(Clone, Debug)]
pub(super) enum Item {
    /// History messages `start..end`, unchanged but for the view's maps.
    Run { start: u32, end: u32 },
    /// A message a strategy built: a changed copy of the message at `pos`, or a new message
    /// (`pos` is `None`). The first `applied` maps of the view's chain are already in it.
    Owned { pos: Option<u32>, message: Arc<Message>, applied: usize },
}

impl Item {
    fn len(&self) -> u32 {
        match self {
            Item::Run { start, end } => end - start,
            Item::Owned { .. } => 1,
        }
    }

    /// The part of the item from `from` to `to` (offsets inside it).
    fn part(&self, from: u32, to: u32) -> Item {
        match self {
            Item::Run { start, .. } => Item::Run { start: start + from, end: start + to },
            owned @ Item::Owned { .. } => owned.clone(),
        }
    }
}

/// A place in a view: an item and an offset inside it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Slot {
    pub(super) item: usize,
    pub(super) offset: u32,
}

/// The items of a view, each with the view index it ends at (one allocation), so that a
/// view index is found in O(log items) and adjacent runs are merged as they are pushed.
#[derive(Clone, Debug, Default)]
pub(super) struct Items {
    /// Each item and the number of messages in it and every item before it.
    items: Vec<(Item, u32)>,
}

impl Items {
    pub(super) fn with_capacity(n: usize) -> Self {
        Self { items: Vec::with_capacity(n) }
    }

    /// Number of messages.
    pub(super) fn len(&self) -> usize {
        self.items.last().map_or(0, |(_, end)| *end as usize)
    }

    pub(super) fn get(&self, item: usize) -> &Item {
        &self.items[item].0
    }

    /// The items, front to back.
    pub(super) fn iter(&self) -> impl DoubleEndedIterator<Item = &Item> + '_ {
        self.items.iter().map(|(item, _)| item)
    }

    /// Number of items (not messages).
    #[cfg(test)]
    pub(super) fn count(&self) -> usize {
        self.items.len()
    }

    /// Appends an item, merging it into the last one when both are adjacent runs.
    pub(super) fn push(&mut self, item: Item) {
        let len = item.len();
        if len == 0 {
            return;
        }
        if let (Some((Item::Run { end, .. }, total)), Item::Run { start, end: new_end }) =
            (self.items.last_mut(), &item)
            && *end == *start
        {
            *end = *new_end;
            *total += len;
            return;
        }
        let before = self.items.last().map_or(0, |(_, end)| *end);
        self.items.push((item, before + len));
    }

    /// The slot of view index `index`, or `None` past the end.
    pub(super) fn locate(&self, index: usize) -> Option<Slot> {
        let index = u32::try_from(index).ok()?;
        let item = self.items.partition_point(|(_, end)| *end <= index);
        let start = if item == 0 { 0 } else { self.items[item - 1].1 };
        (item < self.items.len()).then(|| Slot { item, offset: index - start })
    }

    /// The view index of the message at history position `pos`, if the view holds it.
    /// O(items).
    pub(super) fn index_of_pos(&self, pos: u32) -> Option<usize> {
        let mut before = 0;
        for (item, end) in &self.items {
            match item {
                Item::Run { start, end } if (*start..*end).contains(&pos) => {
                    return Some((before + pos - start) as usize);
                }
                Item::Owned { pos: Some(p), .. } if *p == pos => return Some(before as usize),
                _ => {}
            }
            before = *end;
        }
        None
    }

    /// Keeps the first `len` messages (cutting a run where it must), dropping the rest.
    pub(super) fn truncate(&mut self, len: usize) {
        let Some(slot) = self.locate(len) else { return };
        self.items.truncate(slot.item + 1);
        if slot.offset == 0 {
            self.items.pop();
        } else if let Some((item, end)) = self.items.last_mut() {
            // A slot inside an item is inside a run: owned items hold one message.
            *item = item.part(0, slot.offset);
            *end = len as u32;
        }
    }

    /// Appends every item of `other`, merging adjacent runs at the seam.
    pub(super) fn append(&mut self, other: Items) {
        for (item, _) in other.items {
            self.push(item);
        }
    }

    /// Appends the messages at view indices `range` of `other`.
    pub(super) fn extend_from(&mut self, other: &Items, range: Range<usize>) {
        if range.is_empty() {
            return;
        }
        let Some(first) = other.locate(range.start) else { return };
        let mut left = range.len().min(other.len() - range.start) as u32;
        let mut offset = first.offset;
        for (item, _) in &other.items[first.item..] {
            if left == 0 {
                break;
            }
            let take = (item.len() - offset).min(left);
            self.push(item.part(offset, offset + take));
            left -= take;
            offset = 0;
        }
    }

    /// Every slot, front to back.
    pub(super) fn slots(&self) -> Slots<'_> {
        Slots { items: &self.items, item: 0, offset: 0 }
    }

    /// Every slot from view index `index` on, front to back: O(log items) to start, not
    /// O(index) as skipping [`slots`](Items::slots) would be.
    pub(super) fn slots_from(&self, index: usize) -> Slots<'_> {
        let (item, offset) =
            self.locate(index).map_or((self.items.len(), 0), |s| (s.item, s.offset));
        Slots { items: &self.items, item, offset }
    }

    /// Whether the items are the one run of positions `start..end` (or nothing, when the
    /// run is empty).
    pub(super) fn is_run_of(&self, start: usize, end: usize) -> bool {
        match self.items.as_slice() {
            [] => start == end,
            [(Item::Run { start: s, end: e }, _)] => *s as usize == start && *e as usize == end,
            _ => false,
        }
    }

    /// Item `item`, or `None` past the last.
    pub(super) fn item(&self, item: usize) -> Option<&Item> {
        self.items.get(item).map(|(item, _)| item)
    }

    /// The number of messages in the items before item `item`.
    pub(super) fn end_of(&self, item: usize) -> usize {
        match item.checked_sub(1).and_then(|k| self.items.get(k)) {
            Some((_, end)) => *end as usize,
            None if item == 0 => 0,
            None => self.len(),
        }
    }

    /// Whether item `item` is a run of history.
    pub(super) fn is_run(&self, item: usize) -> bool {
        matches!(self.items.get(item), Some((Item::Run { .. }, _)))
    }

    /// The slot before `slot`, or `None` at the front. O(1).
    pub(super) fn prev(&self, slot: Slot) -> Option<Slot> {
        if slot.offset > 0 {
            return Some(Slot { offset: slot.offset - 1, ..slot });
        }
        let item = slot.item.checked_sub(1)?;
        let len = self.items.get(item)?.0.len();
        Some(Slot { item, offset: len - 1 })
    }

    /// Whether view index `index` begins a run item (so that a stretch of history from it
    /// can be counted as one range).
    pub(super) fn run_at(&self, slot: Slot) -> Option<(u32, u32)> {
        match &self.items[slot.item].0 {
            Item::Run { start, end } => Some((start + slot.offset, *end)),
            Item::Owned { .. } => None,
        }
    }
}

/// The iterator of [`Items::slots`]: a cursor over the items, so that a step costs O(1)
/// with no closure per item.
#[derive(Clone, Debug)]
pub(super) struct Slots<'i> {
    items: &'i [(Item, u32)],
    item: usize,
    offset: u32,
}

impl Iterator for Slots<'_> {
    type Item = Slot;

    #[inline]
    fn next(&mut self) -> Option<Slot> {
        let (item, _) = self.items.get(self.item)?;
        let slot = Slot { item: self.item, offset: self.offset };
        self.offset += 1;
        if self.offset >= item.len() {
            self.item += 1;
            self.offset = 0;
        }
        Some(slot)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let before = match self.item.checked_sub(1).and_then(|k| self.items.get(k)) {
            Some((_, end)) => *end as usize + self.offset as usize,
            None => self.offset as usize,
        };
        let total = self.items.last().map_or(0, |(_, end)| *end as usize);
        let left = total.saturating_sub(before);
        (left, Some(left))
    }
}

impl ExactSizeIterator for Slots<'_> {}

#[cfg(test)]
mod tests {
    use super::*;

    fn runs(items: &Items) -> Vec<(u32, u32)> {
        (0..items.count())
            .filter_map(|k| match items.get(k) {
                Item::Run { start, end } => Some((*start, *end)),
                Item::Owned { .. } => None,
            })
            .collect()
    }

    #[test]
    fn adjacent_runs_merge_and_indices_locate() {
        let mut items = Items::default();
        items.push(Item::Run { start: 0, end: 3 });
        items.push(Item::Run { start: 3, end: 5 });
        items.push(Item::Owned { pos: None, message: Arc::new(Message::user("s")), applied: 0 });
        items.push(Item::Run { start: 9, end: 10 });
        assert_eq!(items.len(), 7);
        assert_eq!(items.count(), 3);
        assert_eq!(items.locate(4), Some(Slot { item: 0, offset: 4 }));
        assert_eq!(items.locate(5), Some(Slot { item: 1, offset: 0 }));
        assert_eq!(items.locate(6), Some(Slot { item: 2, offset: 0 }));
        assert_eq!(items.locate(7), None);
    }

    #[test]
    fn truncate_cuts_inside_a_run_and_append_merges_at_the_seam() {
        let mut items = Items::default();
        items.push(Item::Run { start: 0, end: 4 });
        items.push(Item::Owned { pos: None, message: Arc::new(Message::user("s")), applied: 0 });
        items.push(Item::Run { start: 10, end: 14 });
        let mut cut = items.clone();
        cut.truncate(2);
        assert_eq!((cut.len(), runs(&cut)), (2, vec![(0, 2)]));
        let mut tail = Items::default();
        tail.push(Item::Run { start: 2, end: 3 });
        tail.push(Item::Run { start: 12, end: 13 });
        cut.append(tail);
        assert_eq!((cut.len(), runs(&cut)), (4, vec![(0, 3), (12, 13)]));
        // At an item's start the item goes whole; past the end nothing changes.
        let mut at_owned = items.clone();
        at_owned.truncate(4);
        assert_eq!((at_owned.len(), at_owned.count()), (4, 1));
        let mut past = items.clone();
        past.truncate(9);
        assert_eq!((past.len(), past.count()), (9, 3));
        items.truncate(0);
        assert_eq!(items.len(), 0);
    }

    #[test]
    fn slots_from_starts_inside_an_item() {
        let mut items = Items::default();
        items.push(Item::Run { start: 0, end: 3 });
        items.push(Item::Owned { pos: None, message: Arc::new(Message::user("s")), applied: 0 });
        items.push(Item::Run { start: 9, end: 11 });
        for index in 0..=6 {
            let all: Vec<Slot> = items.slots().skip(index).collect();
            assert_eq!(items.slots_from(index).collect::<Vec<_>>(), all, "from {index}");
        }
    }

    #[test]
    fn extend_from_copies_a_range_across_items() {
        let mut items = Items::default();
        items.push(Item::Run { start: 0, end: 4 });
        items.push(Item::Run { start: 10, end: 14 });
        let mut out = Items::default();
        out.extend_from(&items, 2..6);
        assert_eq!(runs(&out), [(2, 4), (10, 12)]);
        out.extend_from(&items, 6..100);
        assert_eq!(runs(&out), [(2, 4), (10, 14)]);
    }
}
