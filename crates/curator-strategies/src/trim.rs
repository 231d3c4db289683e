//! The walk shared by the trimming strategies: keep the head, then the newest whole units.

use crate::View;
use crate::view::{Item, Pinned, Slot, Unit};

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
/// view is kept: nothing needed trimming. With `never_empty`, a non-empty view never becomes
/// empty: older units are taken one by one until something survives coherence. Costs
/// O(kept).
pub(crate) fn keep_newest<'h>(
    view: View<'h>,
    pinned: &Pinned,
    never_empty: bool,
    mut decide: impl FnMut(&View<'h>, Unit) -> Take,
    keep_head: impl FnOnce(&View<'h>) -> bool,
) -> View<'h> {
    let mut units = view.units_rev(pinned.head_len);
    let mut cut = None;
    let mut replaced_tail: Option<(Unit, Vec<Item>)> = None;
    let mut stopped_at = None;
    for unit in units.by_ref() {
        match decide(&view, unit) {
            Take::Keep => cut = Some(unit.first),
            Take::KeepAs(items) => {
                replaced_tail = Some((unit, items));
                stopped_at = Some(unit);
                break;
            }
            Take::Stop => {
                stopped_at = Some(unit);
                break;
            }
        }
    }
    if stopped_at.is_none() && keep_head(&view) {
        return view.repaired();
    }
    // The pinned slots before `limit`, then what replaced a unit, then every slot from `cut`.
    let build = |limit: Option<Slot>, replaced: Option<&Vec<Item>>, cut: Option<Slot>| {
        let before: Vec<Slot> =
            pinned.slots.iter().copied().filter(|s| limit.is_none_or(|l| *s < l)).collect();
        let mut items = view.assemble(&before, None);
        if let Some(replaced) = replaced {
            items.extend(replaced.iter().cloned());
        }
        if let Some(cut) = cut {
            for item in view.assemble(&[], Some(cut)) {
                crate::view::push_item(&mut items, item);
            }
        }
        view.clone().with_items(items).repaired()
    };
    let mut kept = match &replaced_tail {
        Some((unit, items)) => build(Some(unit.first), Some(items), None),
        None => build(cut, None, cut),
    };
    if never_empty && kept.is_empty() {
        // Take older units one at a time until one survives coherence.
        for unit in stopped_at.into_iter().chain(units) {
            kept = build(Some(unit.first), None, Some(unit.first));
            if !kept.is_empty() {
                break;
            }
        }
    }
    kept
}

/// Number of messages in a unit.
pub(crate) fn unit_len(view: &View<'_>, unit: Unit) -> usize {
    view.between(unit.first, unit.last).count()
}
