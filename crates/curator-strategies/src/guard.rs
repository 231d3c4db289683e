//! The one check of what curation never loses, run on every pipeline's final view.
//!
//! Every system message (unchanged unless
//! [`shorten_system`](crate::CurationContext::shorten_system), wherever it stands), the task
//! and the newest unit ([`View::present`]) must be in the view; the built-in strategies plan
//! for it and say [`BudgetTooSmall`](crate::Error::BudgetTooSmall) when they cannot, and
//! this check turns any other loss (a custom strategy's, or a defect) into
//! [`Error::Lost`](crate::Error::Lost) instead of a view sent without it. It also restores
//! coherence, so that no strategy, a transforming one included, sends a call left
//! unanswered at the end.

use curator_model::Role;

use crate::{CurationContext, Head, History, View};

/// What a view lost: what it was and its history position.
pub(crate) struct Loss {
    pub(crate) what: &'static str,
    pub(crate) position: usize,
}

/// `view` (curated from the whole of `history`) with coherence restored, or what it lost.
/// Costs O(pinned + present) lookups in the view's runs, not O(history), unless a message of
/// the present is missing.
pub(crate) fn check<'h>(
    history: &'h History<'h>,
    view: View<'h>,
    ctx: &CurationContext<'_>,
) -> Result<View<'h>, Loss> {
    let view = view.repaired();
    let full = View::full(history);
    let head = full.head(ctx);
    for &index in head.pinned() {
        // Repair never removes a user or system message, so the whole history's own
        // positions are the ones to find.
        let system = full.structure(index).role() == Role::System;
        let Some(at) = view.index_of(index) else {
            let what = if system { "dropped the system message" } else { "dropped the task" };
            return Err(Loss { what, position: index });
        };
        if system && !ctx.shorten_system && (view.is_replaced(at) || view.map_edits_system(at)) {
            return Err(Loss { what: "edited the system message", position: index });
        }
    }
    let missing = |full: &View<'_>, head: &Head| {
        let present = full.present(head)?;
        present.range().filter_map(|i| full.pos(i)).find(|&pos| view.index_of(pos).is_none())
    };
    if missing(&full, &head).is_some() {
        // What must be there is what coherence keeps of the whole history (an orphan result
        // at the end is not sent): only on this path is the history repaired, which costs
        // O(history) when it holds an orphan anywhere.
        let full = full.repaired();
        let head = full.head(ctx);
        if let Some(position) = missing(&full, &head) {
            return Err(Loss { what: "dropped a message of the newest unit", position });
        }
    }
    Ok(view)
}
