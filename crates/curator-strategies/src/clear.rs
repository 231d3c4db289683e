//! `ClearOldToolResults`: keep every pair, clear the content of old tool results.

use std::borrow::Cow;
use std::collections::BTreeSet;
use std::sync::Arc;

use curator_model::{Content, Message, Role};

use crate::map::{chain_key, stable_hash};
use crate::terms::essentials;
use crate::{CurationContext, History, HistoryManager, MessageMap, Result, View};

/// Replaces the content of all but the newest `keep_last` tool results with a short
/// placeholder that names the tool and how much was cleared, keeping every call and result
/// in place. The model learns that a result existed and was cleared; the record keeps it.
///
/// The placeholder may use `{tool}` (the tool's name, from the result's `name` or the call it
/// answers), `{chars}` (the characters cleared) and `{essentials}`: what the result must not
/// lose (its first, last and error lines, then its distinctive terms; see
/// [`essentials`](crate::terms::essentials)), at most 200 characters by default
/// ([`with_essentials`](ClearOldToolResults::with_essentials)). The default placeholder
/// ends with them (`; it held: …`); a placeholder of your own carries them where it says
/// `{essentials}`. Tools named in `exclude` are never cleared, nor counted among the newest.
///
/// # Examples
///
/// ```
/// use curator::model::{Message, ToolCall};
/// use curator::strategies::{ClearOldToolResults, CurationContext, HistoryManagerExt};
///
/// let messages = vec![
///     Message::user("go"),
///     Message::assistant_with_calls(None, vec![ToolCall::new("1", "read_file", "{}")]),
///     Message::tool_result("1", format!("test parse_binary ... FAILED\n{}test result: FAILED. 13 passed; 1 failed", "ok\n".repeat(200))),
///     Message::assistant_with_calls(None, vec![ToolCall::new("2", "read_file", "{}")]),
///     Message::tool_result("2", "latest"),
/// ];
/// let view = ClearOldToolResults::new(1).curate_messages(&messages, &CurationContext::default())?;
/// assert_eq!(view.len(), 5);
/// assert_eq!(
///     view[2].text(),
///     "[cleared: result of `read_file`, 669 characters; it held: test parse_binary ... FAILED | test result: FAILED. 13 passed; 1 failed]"
/// );
/// assert_eq!(view[4].text(), "latest");
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct ClearOldToolResults {
    keep_last: usize,
    placeholder: Arc<str>,
    exclude: Arc<BTreeSet<String>>,
    essentials: usize,
}

/// The default placeholder; the essentials, when there are any, go before its `]`.
const DEFAULT_PLACEHOLDER: &str = "[cleared: result of `{tool}`, {chars} characters]";

/// The most characters of essentials a placeholder carries by default.
const ESSENTIALS: usize = 200;

impl ClearOldToolResults {
    /// Keeps the newest `keep_last` tool results, clearing older ones with the default
    /// placeholder `[cleared: result of `{tool}`, {chars} characters]`.
    pub fn new(keep_last: usize) -> Self {
        Self {
            keep_last,
            placeholder: Arc::from(DEFAULT_PLACEHOLDER),
            exclude: Arc::default(),
            essentials: ESSENTIALS,
        }
    }

    /// Keeps at most `max_chars` characters of each cleared result's essentials (0: none).
    #[must_use]
    pub fn with_essentials(mut self, max_chars: usize) -> Self {
        self.essentials = max_chars;
        self
    }

    /// Uses `placeholder` (with `{tool}` and `{chars}`) instead of the default.
    #[must_use]
    pub fn with_placeholder(mut self, placeholder: impl Into<String>) -> Self {
        self.placeholder = Arc::from(placeholder.into());
        self
    }

    /// Never clears the results of these tools.
    #[must_use]
    pub fn with_exclude(mut self, tools: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.exclude = Arc::new(tools.into_iter().map(Into::into).collect());
        self
    }
}

/// The name of the tool a tool message at `pos` reports on.
pub(crate) fn tool_name<'a>(
    history: &'a History<'_>,
    pos: Option<usize>,
    message: &'a Message,
) -> Option<&'a str> {
    if let Some(name) = message.name() {
        return Some(name);
    }
    let head = history.get(history.unit_head(pos?)?)?;
    let id = message.tool_call_id()?;
    head.tool_calls().iter().rev().find(|c| c.id() == id).map(curator_model::ToolCall::name)
}

#[derive(Debug)]
struct Clear {
    /// Tool results at positions before this are cleared.
    boundary: usize,
    /// Identity of the placeholder and exclusions.
    key: u64,
    placeholder: Arc<str>,
    exclude: Arc<BTreeSet<String>>,
    essentials: usize,
}

impl MessageMap for Clear {
    fn map(&self, message: &Message, pos: Option<usize>, history: &History<'_>) -> Option<Message> {
        let pos = pos?;
        if message.role() != Role::Tool || pos >= self.boundary {
            return None;
        }
        let tool = tool_name(history, Some(pos), message).unwrap_or("tool");
        if self.exclude.contains(tool) {
            return None;
        }
        let chars = message.content().map_or(0, Content::text_chars);
        let mut text =
            self.placeholder.replace("{tool}", tool).replace("{chars}", &chars.to_string());
        let held = if self.essentials > 0 {
            essentials(&message.text(), self.essentials)
        } else {
            String::new()
        };
        if text.contains("{essentials}") {
            text = text.replace("{essentials}", &held);
        } else if !held.is_empty()
            && &*self.placeholder == DEFAULT_PLACEHOLDER
            && let Some(open) = text.strip_suffix(']')
        {
            text = format!("{open}; it held: {held}]");
        }
        Some(message.clone_with_content(Some(Content::Text(text))))
    }

    /// The result depends on the position only through which side of the boundary it is
    /// on, so at most two entries per position are ever memoised.
    fn memo_key(&self, pos: usize) -> Option<u64> {
        chain_key(Some(self.key), Some(u64::from(pos < self.boundary)))
    }
}

impl HistoryManager for ClearOldToolResults {
    fn curate<'h>(&self, view: View<'h>, _ctx: &CurationContext<'_>) -> Result<View<'h>> {
        let history = view.history();
        // Walk back to the `keep_last`-th newest result that may be cleared.
        let mut seen = 0;
        let mut boundary = 0;
        for index in (0..view.len()).rev() {
            let structure = view.structure(index);
            if structure.role() != Role::Tool {
                continue;
            }
            let pos = view.pos(index);
            if tool_name(history, pos, structure).is_some_and(|t| self.exclude.contains(t)) {
                continue;
            }
            if seen == self.keep_last {
                boundary = pos.map_or(0, |p| p + 1);
                break;
            }
            seen += 1;
        }
        if boundary == 0 {
            return Ok(view);
        }
        let size = self.essentials.to_le_bytes();
        let mut parts: Vec<&[u8]> = vec![b"clear", self.placeholder.as_bytes(), &size];
        parts.extend(self.exclude.iter().map(String::as_bytes));
        let clear = Clear {
            boundary,
            key: stable_hash(&parts),
            placeholder: Arc::clone(&self.placeholder),
            exclude: Arc::clone(&self.exclude),
            essentials: self.essentials,
        };
        Ok(view.with_map(Arc::new(clear)))
    }

    fn name(&self) -> Cow<'_, str> {
        Cow::Borrowed("clear_old_tool_results")
    }
}
