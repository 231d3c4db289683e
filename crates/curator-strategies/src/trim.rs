//! The walk shared by the trimming strategies: keep the head, then the newest whole units.

use crate::view::{Item, Pinned, Unit};
use crate::View;

/// What a trimming strategy decides about the next-older unit.
pub(crate) enum Take {
    /// Keep it and look at the next.
    Keep,
    /// Keep it, with these items standing for its slots, and stop.
    KeepAs(Vec<Item>),
    /// Stop: neither it nor anything older is kept.
    Stop,
}

/// Keeps the `pinned` head slots and the newest units for which `decide` says so, newest
/// first, then restores coherence. When every unit is kept and `keep_head` agrees, the whole
/// view is kept: nothing needed trimming. Costs O(kept).
pub(crate) fn keep_newest<'h>(
    view: View<'h>,
    pinned: &Pinned,
    mut decide: impl FnMut(&View<'h>, Unit) -> Take,
    keep_head: impl FnOnce(&View<'h>) -> bool,
) -> View<'h> {
    let mut cut = None;
    let mut replaced_tail: Option<Vec<Item>> = None;
    let mut all = true;
    for unit in view.units_rev(pinned.head_len) {
        match decide(&view, unit) {
            Take::Keep => cut = Some(unit.first),
            Take::KeepAs(items) => {
                replaced_tail = Some(items);
                all = false;
                break;
            }
            Take::Stop => {
                all = false;
                break;
            }
        }
    }
    if all && keep_head(&view) {
        return view.repaired();
    }
    let mut items = view.assemble(&pinned.slots, None);
    if let Some(replaced) = replaced_tail {
        items.extend(replaced);
    }
    if let Some(cut) = cut {
        let suffix = view.assemble(&[], Some(cut));
        for item in suffix {
            crate::view::push_item(&mut items, item);
        }
    }
    view.with_items(items).repaired()
}

/// Number of messages in a unit.
pub(crate) fn unit_len(view: &View<'_>, unit: Unit) -> usize {
    view.between(unit.first, unit.last).count()
}
