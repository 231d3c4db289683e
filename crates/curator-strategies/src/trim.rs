//! The walk shared by the trimming strategies: keep the head, then the newest whole units.

use curator_model::{Message, Role};

use crate::{Head, Unit, View};

/// The user message a trimmed view starts with when what it kept would begin with an
/// assistant message: Anthropic requires the first message after the system prompt to be
/// the user's, and the model learns that something came before.
pub(crate) const OMITTED_NOTE: &str =
    "[Earlier messages of this conversation were left out by curator to fit the context.]";

/// What a trimming strategy decides about the next-older unit.
pub(crate) enum Take {
    /// Keep it and look at the next.
    Keep,
    /// Keep it with these messages replaced (view index, replacement, in index order), and
    /// stop.
    KeepAs(Vec<(usize, Message)>),
    /// Stop: neither it nor anything older is kept.
    Stop,
}

/// Keeps the pinned `head` and the newest units for which `decide` says so, newest first,
/// then restores coherence. The first unit `decide` sees is `present`, the view's
/// [`present`](View::present) (which may span several units, and pinned messages, which are
/// kept whatever it decides). `None` when every unit is kept: nothing needed trimming, and the
/// caller repairs the view it owns (no copy is made). With `never_empty`, a non-empty view
/// never becomes empty: older units are taken one by one until something survives
/// coherence. When what is kept would start (after the system messages) with an assistant
/// message although the view did not, a short user note saying that earlier messages were
/// left out comes first. Costs O(kept).
pub(crate) fn keep_newest<'h>(
    view: &View<'h>,
    head: &Head,
    present: Option<Unit>,
    never_empty: bool,
    mut decide: impl FnMut(Unit) -> Take,
) -> Option<View<'h>> {
    let mut units = view.units_rev_to(head.len(), present.map_or(view.len(), |u| u.start()));
    let mut cut = None;
    let mut replaced: Option<(Unit, Vec<(usize, Message)>)> = None;
    let mut stopped_at = None;
    let mut is_present = present.is_some();
    let mut stop = false;
    for unit in present.into_iter().chain(units.by_ref()) {
        // A pinned message in the body (a later system message, the task after a gap) is
        // kept whatever the strategy decides, so it is not the strategy's to count.
        if unit.len() == 1 && head.is_pinned(unit.start()) && !is_present {
            continue;
        }
        if stop {
            stopped_at = Some(unit);
            break;
        }
        match decide(unit) {
            Take::Keep => cut = Some(unit.start()),
            Take::KeepAs(replacements) => {
                replaced = Some((unit, replacements));
                stopped_at = Some(unit);
                break;
            }
            // The present is never dropped: a strategy that stops at it keeps it whole, and
            // nothing older.
            Take::Stop if is_present => {
                cut = Some(unit.start());
                stop = true;
            }
            Take::Stop => {
                stopped_at = Some(unit);
                break;
            }
        }
        is_present = false;
    }
    stopped_at?;
    // The pinned messages before `limit`, then a replaced unit, then everything from `cut`
    // (after a replaced unit: what is newer than it, pinned messages among them).
    let build = |limit: Option<usize>, replaced: Option<&(Unit, Vec<(usize, Message)>)>, cut| {
        let mut edit = view.edit();
        for &index in head.pinned().iter().filter(|&&i| limit.is_none_or(|l| i < l)) {
            edit.keep(index..index + 1);
        }
        if let Some((unit, replacements)) = replaced {
            let mut from = unit.start();
            for (index, message) in replacements {
                edit.keep(from..*index).replace(*index, message.clone());
                from = index + 1;
            }
            edit.keep(from..unit.range().end);
        }
        if let Some(cut) = cut {
            edit.keep(cut..view.len());
        }
        edit.finish()
    };
    let mut kept = match &replaced {
        Some(replaced) => {
            build(Some(replaced.0.start()), Some(replaced), Some(replaced.0.range().end))
        }
        None => build(cut, None, cut),
    };
    if never_empty && kept.is_empty() {
        // Take older units one at a time until one survives coherence.
        for unit in stopped_at.into_iter().chain(units) {
            kept = build(Some(unit.start()), None, Some(unit.start()));
            if !kept.is_empty() {
                break;
            }
        }
    }
    if leads_with(view) == Some(Role::Assistant) {
        // The input itself starts that way: keep it as it is.
        return Some(kept);
    }
    match leads_with(&kept) {
        Some(Role::Assistant) => {
            let first = (0..kept.len()).find(|&i| kept.structure(i).role() != Role::System);
            let first = first.unwrap_or(0);
            let mut edit = kept.edit();
            edit.keep(0..first).insert(Message::user(OMITTED_NOTE)).keep(first..kept.len());
            Some(edit.finish())
        }
        _ => Some(kept),
    }
}

/// The role of the first message that is not a system message.
fn leads_with(view: &View<'_>) -> Option<Role> {
    view.structures().map(Message::role).find(|role| *role != Role::System)
}
