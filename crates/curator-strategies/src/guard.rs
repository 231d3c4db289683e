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

use crate::{CurationContext, History, View};

/// What a view lost: what it was and its history position.
pub(crate) struct Loss {
    pub(crate) what: &'static str,
    pub(crate) position: usize,
}

/// `view` (curated from the whole of `history`) with coherence restored, or what it lost.
/// Costs O(pinned + present) lookups in the view's runs, not O(history).
pub(crate) fn check<'h>(
    history: &'h History<'h>,
    view: View<'h>,
    ctx: &CurationContext<'_>,
) -> Result<View<'h>, Loss> {
    let view = view.repaired();
    // What must be there is what coherence keeps of the whole history: a call whose result
    // never came is not sent. Repair plans only the history's unsettled tail.
    let full = View::full(history).repaired();
    let head = full.head(ctx);
    let position = |index: usize| full.pos(index).unwrap_or(index);
    for &index in head.pinned() {
        let system = full.structure(index).role() == Role::System;
        let Some(at) = view.index_of(position(index)) else {
            let what = if system { "dropped the system message" } else { "dropped the task" };
            return Err(Loss { what, position: position(index) });
        };
        if system && !ctx.shorten_system && view.is_replaced(at) {
            return Err(Loss { what: "edited the system message", position: position(index) });
        }
    }
    if let Some(present) = full.present(&head) {
        for index in present.range() {
            if view.index_of(position(index)).is_none() {
                return Err(Loss {
                    what: "dropped a message of the newest unit",
                    position: position(index),
                });
            }
        }
    }
    Ok(view)
}
