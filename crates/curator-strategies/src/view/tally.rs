//! Token counts of a view's messages, read from the history's caches.

use std::fmt;
use std::ops::Range;
use std::sync::Arc;

use super::chains::ChainSlots;
use super::items::Slot;
use super::selection::View;
use crate::TokenCounter;
use crate::history::{Changed, Counts};

/// The token counts of a view's messages under one counter; see [`View::tally`].
///
/// Counts of unchanged history messages come from the [`History`](crate::History)'s prefix
/// sums (a run of them costs O(1)), counts of memoised transformations from their memo; a
/// tally holds a read lock on the history's count cache while it lives.
pub struct Tally<'v, 'h> {
    view: &'v View<'h>,
    counter: &'v dyn TokenCounter,
    counts: Counts,
    /// The history positions the view's maps may change, when every map names its
    /// [`unchanged_key`](crate::MessageMap::unchanged_key).
    changed: Option<Arc<Changed>>,
    /// The counts of the view's memoised chain, found on first use.
    chains: ChainSlots,
}

impl<'h> View<'h> {
    /// The token counts of this view's messages under `counter`, counting history messages
    /// not yet counted (each at most once over the life of the history).
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::model::Message;
    /// use curator::strategies::{CharEstimate, History, View};
    ///
    /// let history = History::from(vec![Message::user("hello"), Message::assistant("hi there")]);
    /// let view = View::full(&history);
    /// let counter = CharEstimate::default();
    /// let tally = view.tally(&counter);
    /// assert_eq!(tally.range(0..2), tally.message(0) + tally.message(1));
    /// ```
    pub fn tally<'v>(&'v self, counter: &'v dyn TokenCounter) -> Tally<'v, 'h> {
        let changed_by = |map: &Arc<dyn crate::MessageMap>| {
            let key = map.unchanged_key()?;
            Some(self.history.changed_by(key, |message| map.leaves_unchanged(message)))
        };
        let changed = match self.maps.as_slice() {
            [] => None,
            [map] => changed_by(map),
            maps => maps
                .iter()
                .map(changed_by)
                .collect::<Option<Vec<_>>>()
                .map(|all| Arc::new(Changed::union(&all))),
        };
        Tally {
            view: self,
            counter,
            counts: self.history.counts(counter),
            changed,
            chains: ChainSlots::default(),
        }
    }
}

impl Tally<'_, '_> {
    /// Tokens of the message at view index `index`, as the view shows it.
    ///
    /// # Panics
    ///
    /// When `index` is not below the view's length.
    pub fn message(&self, index: usize) -> u64 {
        self.view.slot_tokens(self.view.slot(index), self.counter, &self.counts, &self.chains)
    }

    /// Tokens of the messages at view indices `range` (ends past the view are cut).
    pub fn range(&self, range: Range<usize>) -> u64 {
        // A stretch of one run under no map (a unit, as a rule): one prefix-sum subtraction.
        let items = &self.view.items;
        if self.view.maps.is_empty()
            && let Some(slot) = items.locate(range.start)
            && let Some((from, to)) = items.run_at(slot)
            && range.len() <= (to - from) as usize
        {
            let from = from as usize;
            return self.counts.range(from..from + range.len());
        }
        let mut others = 0;
        let base = self.split(range, |slot| {
            others += self.view.slot_tokens(slot, self.counter, &self.counts, &self.chains);
        });
        base + others
    }

    /// For a view that is the whole history under no map (view indices are positions):
    /// the first index `s` in `range.start..=range.end` from which the messages up to
    /// `range.end` take at most `room` tokens. O(log range).
    pub(crate) fn first_within(&self, range: Range<usize>, room: u64) -> usize {
        debug_assert!(self.view.is_whole_history(), "first_within on an edited view");
        self.counts.first_within(range, room)
    }

    /// Tokens of the messages at view indices `range` (ends past the view are cut) when they
    /// are at most `limit`, `None` when they are more. The messages a map may change are
    /// counted last, and not at all when the others alone pass `limit`: asking whether a
    /// unit fits what is left of a budget then costs the same as [`range`](Tally::range) at
    /// most, and usually a prefix-sum subtraction.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::model::Message;
    /// use curator::strategies::{CharEstimate, History, View};
    ///
    /// let history = History::from(vec![Message::user("hello"), Message::assistant("hi there")]);
    /// let view = View::full(&history);
    /// let counter = CharEstimate::default();
    /// let tally = view.tally(&counter);
    /// let all = tally.range(0..2);
    /// assert_eq!(tally.range_within(0..2, all), Some(all));
    /// assert_eq!(tally.range_within(0..2, all - 1), None);
    /// ```
    pub fn range_within(&self, range: Range<usize>, limit: u64) -> Option<u64> {
        let mut others = false;
        let unchanged = self.split(range.clone(), |_| others = true);
        if unchanged > limit {
            return None;
        }
        let total = if others { self.range(range) } else { unchanged };
        (total <= limit).then_some(total)
    }

    /// The tokens of the messages at view indices `range` that surely show a history message
    /// unchanged, read from the prefix sums; `other` is called with the slot of every other
    /// message (one a map may change, or one that stands outside the history).
    fn split(&self, range: Range<usize>, mut other: impl FnMut(Slot)) -> u64 {
        let view = self.view;
        let end = range.end.min(view.len());
        let mut index = range.start;
        let mut total = 0;
        while index < end {
            let slot = view.slot(index);
            match view.items.run_at(slot) {
                // A stretch of unchanged history: one prefix-sum subtraction.
                Some((from, to)) if view.maps.is_empty() => {
                    let take = (to - from).min((end - index) as u32);
                    total += self.counts.range(from as usize..(from + take) as usize);
                    index += take as usize;
                }
                // A stretch of history under maps that name the positions they may change:
                // the prefix sum, less those positions (read from their bit set).
                Some((from, to)) if let Some(changed) = &self.changed => {
                    let take = (to - from).min((end - index) as u32);
                    let (from, stop) = (from as usize, (from + take) as usize);
                    total += self.counts.range(from..stop);
                    changed.each_in(from..stop, |pos| {
                        total -= self.counts.at(pos);
                        other(Slot { offset: slot.offset + (pos - from) as u32, ..slot });
                    });
                    index += take as usize;
                }
                // A stretch of history under maps: prefix sums over the messages every map
                // surely leaves unchanged.
                Some((from, to)) => {
                    let take = (to - from).min((end - index) as u32);
                    let (from, stop) = (from as usize, (from + take) as usize);
                    let messages = view.history.messages();
                    let mut unchanged_from = from;
                    for (pos, message) in messages.iter().enumerate().take(stop).skip(from) {
                        if view.maps.iter().all(|map| map.leaves_unchanged(message)) {
                            continue;
                        }
                        total += self.counts.range(unchanged_from..pos);
                        other(Slot { offset: slot.offset + (pos - from) as u32, ..slot });
                        unchanged_from = pos + 1;
                    }
                    total += self.counts.range(unchanged_from..stop);
                    index += take as usize;
                }
                None => {
                    other(slot);
                    index += 1;
                }
            }
        }
        total
    }
}

impl fmt::Debug for Tally<'_, '_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tally").field("view_len", &self.view.len()).finish_non_exhaustive()
    }
}
