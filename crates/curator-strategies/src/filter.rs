//! `ToolFilter`: drop the calls and results of some tools.

use std::borrow::Cow;
use std::collections::BTreeSet;
use std::fmt;
use std::sync::Arc;

use curator_model::{Content, Message};

use crate::{CurationContext, HistoryManager, Result, View};

/// Drops the calls of tools that match (by name set or predicate) together with their
/// results. An assistant message left with no call and no content is dropped. The newest
/// unit ([`View::present`](crate::View::present)) is never filtered: curation never loses it,
/// and its calls are what the model just did. Costs O(view):
/// one pass to find a match, one to build the view.
///
/// # Examples
///
/// ```
/// use curator::model::{Message, ToolCall};
/// use curator::strategies::{CurationContext, HistoryManagerExt, ToolFilter};
///
/// let messages = vec![
///     Message::user("go"),
///     Message::assistant_with_calls(None, vec![ToolCall::new("1", "think", "{}"), ToolCall::new("2", "ls", "{}")]),
///     Message::tool_result("1", "pondering..."),
///     Message::tool_result("2", "a.txt"),
///     Message::assistant("There is a.txt."),
/// ];
/// let view = ToolFilter::names(["think"]).curate_messages(&messages, &CurationContext::default())?;
/// assert_eq!(view.len(), 4);
/// assert_eq!(view[1].tool_calls()[0].name(), "ls");
/// assert_eq!(view[2].text(), "a.txt");
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct ToolFilter {
    matches: Arc<dyn Fn(&str) -> bool + Send + Sync>,
    names: Option<BTreeSet<String>>,
}

impl ToolFilter {
    /// Drops the tools with these names.
    pub fn names(names: impl IntoIterator<Item = impl Into<String>>) -> Self {
        let names: BTreeSet<String> = names.into_iter().map(Into::into).collect();
        let set = names.clone();
        Self { matches: Arc::new(move |name| set.contains(name)), names: Some(names) }
    }

    /// Drops the tools whose name `predicate` accepts.
    pub fn predicate(predicate: impl Fn(&str) -> bool + Send + Sync + 'static) -> Self {
        Self { matches: Arc::new(predicate), names: None }
    }
}

impl fmt::Debug for ToolFilter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.names {
            Some(names) => {
                f.debug_struct("ToolFilter").field("names", names).finish_non_exhaustive()
            }
            None => {
                f.debug_struct("ToolFilter").field("predicate", &"<fn>").finish_non_exhaustive()
            }
        }
    }
}

impl HistoryManager for ToolFilter {
    fn curate<'h>(&self, view: View<'h>, ctx: &CurationContext<'_>) -> Result<View<'h>> {
        // Nothing to do unless some call is filtered: check first, without building anything.
        let filtered = |m: &Message| m.tool_calls().iter().any(|c| (self.matches)(c.name()));
        if !view.structures().any(filtered) {
            return Ok(view);
        }
        // The newest unit is never lost: its calls are what the model just did.
        let present = view.present(&view.head(ctx)).map_or(view.len()..view.len(), |u| u.range());
        // Where the view is known coherent and settled up to (O(items)): filtering keeps that
        // part coherent, so only what follows needs planning.
        let settled = view.repair_from();
        let answered = view.answered_calls();
        let mut edit = view.edit();
        // Messages kept as they are go in runs, from `run` to the next one that changes.
        let mut run = 0;
        for (index, (structure, call)) in view.structures().zip(&answered).enumerate() {
            if present.contains(&index) {
                continue;
            }
            match call {
                // A result goes with its call.
                Some(call) if (self.matches)(call.name()) => {}
                _ if filtered(structure) => {
                    edit.keep(run..index);
                    let kept = Message::clone(&view.message(index))
                        .retain_tool_calls(|c| !(self.matches)(c.name()));
                    if kept.has_tool_calls() || !kept.content().is_none_or(Content::is_empty) {
                        edit.replace(index, kept);
                    }
                }
                _ => continue,
            }
            edit.keep(run..index);
            run = index + 1;
        }
        edit.keep(run..view.len());
        // Calls and their results were dropped together, so a coherent part stays coherent:
        // only the part after the settled point (calls still open at the end) is planned.
        let next = edit.build();
        Ok(match settled {
            Some(settled) => {
                let from = (settled..view.len())
                    .find_map(|i| view.pos(i).and_then(|p| next.index_of(p)))
                    .unwrap_or(next.len());
                next.repaired_after(from)
            }
            None => next,
        })
    }

    fn name(&self) -> Cow<'_, str> {
        Cow::Borrowed("tool_filter")
    }
}
