//! `ToolFilter`: drop the calls and results of some tools.

use std::borrow::Cow;
use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::sync::Arc;

use curator_model::{Message, Role};

use crate::view::{Item, push_item};
use crate::{CurationContext, HistoryManager, Result, View};

/// Drops the calls of tools that match (by name set or predicate) together with their
/// results. An assistant message left with no call and no content is dropped. Costs O(view).
///
/// # Examples
///
/// ```
/// use curator_model::{Message, ToolCall};
/// use curator_strategies::{CurationContext, HistoryManagerExt, ToolFilter};
///
/// let messages = vec![
///     Message::user("go"),
///     Message::assistant_with_calls(None, vec![ToolCall::new("1", "think", "{}"), ToolCall::new("2", "ls", "{}")]),
///     Message::tool_result("1", "pondering..."),
///     Message::tool_result("2", "a.txt"),
/// ];
/// let view = ToolFilter::names(["think"]).curate_messages(&messages, &CurationContext::default())?;
/// assert_eq!(view.len(), 3);
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
    fn curate<'h>(&self, view: View<'h>, _ctx: &CurationContext<'_>) -> Result<View<'h>> {
        let slots: Vec<_> = view.slots().collect();
        // Calls of filtered tools that are open, by id: their results are dropped too.
        let mut open: HashMap<&str, Vec<bool>> = HashMap::new();
        let mut items: Vec<Item> = Vec::with_capacity(view.items().len());
        let mut changed = false;
        for slot in slots {
            let structure = view.structure(slot);
            match structure.role() {
                Role::Tool => {
                    let dropped =
                        structure.tool_call_id().and_then(|id| open.get_mut(id)).and_then(Vec::pop);
                    if dropped == Some(true) {
                        changed = true;
                        continue;
                    }
                }
                Role::Assistant if structure.has_tool_calls() => {
                    open.clear();
                    let mut any = false;
                    for call in structure.tool_calls() {
                        let drop = (self.matches)(call.name());
                        any |= drop;
                        open.entry(call.id()).or_default().push(drop);
                    }
                    if any {
                        changed = true;
                        let kept = Message::clone(&view.message(slot))
                            .retain_tool_calls(|c| !(self.matches)(c.name()));
                        let empty = kept.content().is_none_or(curator_model::Content::is_empty);
                        if kept.has_tool_calls() || !empty {
                            items.push(view.owned_item(slot, kept));
                        }
                        continue;
                    }
                }
                _ => open.clear(),
            }
            push_item(&mut items, view.slot_item(slot));
        }
        if !changed {
            return Ok(view);
        }
        Ok(view.with_items(items).repaired())
    }

    fn name(&self) -> Cow<'_, str> {
        Cow::Borrowed("filter_tools")
    }
}
