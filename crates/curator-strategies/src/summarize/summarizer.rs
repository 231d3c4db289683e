//! Turning messages into summary text.

use std::borrow::Cow;

use std::fmt::Write as _;

use curator_model::{BoxError, Message, Role};

use crate::map::stable_hash;
use crate::terms::essentials;
use crate::{Error, Result};

/// Turns a run of messages (and, when there is one, the summary of what came before them)
/// into summary text. Fallible: a model behind it can fail.
///
/// # Examples
///
/// ```
/// use curator::model::Message;
/// use curator::strategies::{Extractive, Summarizer};
///
/// let messages = [Message::user("Refund order 42."), Message::assistant("Refunded.")];
/// let refs: Vec<&Message> = messages.iter().collect();
/// let summary = Extractive::default().summarize(None, &refs)?;
/// assert!(summary.contains("User asked: Refund order 42."));
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait Summarizer: Send + Sync {
    /// Summarizes `messages`, continuing `previous` (a rolling summary) when given.
    ///
    /// # Errors
    ///
    /// [`Error::Summarizer`] when the summary cannot be made.
    fn summarize(&self, previous: Option<&str>, messages: &[&Message]) -> Result<String>;

    /// Identity of this summarizer's way of summarizing, part of the memo key: two
    /// summarizers that may write different summaries must have different keys.
    fn key(&self) -> u64;

    /// A name for events and errors.
    fn name(&self) -> Cow<'_, str> {
        Cow::Borrowed("custom")
    }

    /// The tokens this summarizer's model calls took so far (input and output, as the
    /// model reported them), so that a caller with a budget (a loop's quota) can charge
    /// them; 0 for a summarizer that calls no model, the default.
    fn tokens_used(&self) -> u64 {
        0
    }
}

/// A shared summarizer summarizes as the one it shares.
impl<T: Summarizer + ?Sized> Summarizer for std::sync::Arc<T> {
    fn summarize(&self, previous: Option<&str>, messages: &[&Message]) -> Result<String> {
        (**self).summarize(previous, messages)
    }

    fn key(&self) -> u64 {
        (**self).key()
    }

    fn name(&self) -> Cow<'_, str> {
        (**self).name()
    }

    fn tokens_used(&self) -> u64 {
        (**self).tokens_used()
    }
}

/// A summary without a model: the first user request, what the user said after, the tool
/// calls made (arguments shortened), the errors met, and the last thing the assistant said,
/// within `max_chars` characters. Deterministic. User text stays attributed to the user.
///
/// # Examples
///
/// ```
/// use curator::model::{Message, ToolCall};
/// use curator::strategies::{Extractive, Summarizer};
///
/// let messages = [
///     Message::user("Fix the failing test."),
///     Message::assistant_with_calls(Some("Running it.".into()), vec![ToolCall::new("1", "bash", r#"{"command":"cargo test"}"#)]),
///     Message::tool_error("1", "error[E0308]: mismatched types"),
///     Message::assistant("The types differ in parse.rs."),
/// ];
/// let refs: Vec<&Message> = messages.iter().collect();
/// let summary = Extractive::new(500).summarize(None, &refs)?;
/// assert_eq!(summary, "User asked: Fix the failing test.\nTool calls: bash({\"command\":\"cargo test\"})\nErrors: error[E0308]: mismatched types\nLast assistant note: The types differ in parse.rs.");
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Extractive {
    max_chars: usize,
}

impl Extractive {
    /// Summaries of at most `max_chars` characters.
    pub const fn new(max_chars: usize) -> Self {
        Self { max_chars }
    }
}

impl Default for Extractive {
    fn default() -> Self {
        Self::new(2_000)
    }
}

/// The first line of `text`, cut to `max` characters with an ellipsis.
fn line(text: &str, max: usize) -> String {
    let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("").trim();
    if first.chars().count() <= max {
        first.to_owned()
    } else {
        let mut cut: String = first.chars().take(max.saturating_sub(1)).collect();
        cut.push('…');
        cut
    }
}

impl Summarizer for Extractive {
    fn summarize(&self, previous: Option<&str>, messages: &[&Message]) -> Result<String> {
        let mut out = String::new();
        let mut users = messages.iter().filter(|m| m.role() == Role::User);
        match previous {
            Some(previous) => out.push_str(previous.trim_end()),
            None => {
                if let Some(first) = users.next() {
                    let _ = write!(out, "User asked: {}", line(&first.text(), 300));
                }
            }
        }
        let later: Vec<String> = users.map(|m| line(&m.text(), 200)).take(5).collect();
        for said in later {
            let _ = write!(out, "\nUser said: {said}");
        }
        let calls: Vec<String> = messages
            .iter()
            .flat_map(|m| m.tool_calls())
            .map(|c| format!("{}({})", c.name(), line(c.arguments(), 60)))
            .collect();
        if !calls.is_empty() {
            let shown = calls.iter().take(20).cloned().collect::<Vec<_>>().join(", ");
            let more = calls.len().saturating_sub(20);
            let _ = write!(
                out,
                "\nTool calls: {shown}{}",
                if more > 0 { format!(", and {more} more") } else { String::new() }
            );
        }
        let errors: Vec<String> = messages
            .iter()
            .filter(|m| m.is_error())
            .map(|m| line(&m.text(), 120))
            .take(5)
            .collect();
        if !errors.is_empty() {
            let _ = write!(out, "\nErrors: {}", errors.join("; "));
        }
        // What the newest results held: first, last and failure lines, then their terms.
        let name_of = |id: Option<&str>| {
            messages
                .iter()
                .flat_map(|m| m.tool_calls())
                .find(|c| Some(c.id()) == id)
                .map_or("tool", |c| c.name())
        };
        let mut results: Vec<String> = messages
            .iter()
            .rev()
            .filter(|m| m.role() == Role::Tool && !m.is_error())
            .filter_map(|m| {
                let held = essentials(&m.text(), 200);
                (!held.is_empty()).then(|| format!("{}: {held}", name_of(m.tool_call_id())))
            })
            .take(5)
            .collect();
        results.reverse();
        if !results.is_empty() {
            let _ = write!(out, "\nResults: {}", results.join("; "));
        }
        if let Some(last) = messages
            .iter()
            .rev()
            .find(|m| m.role() == Role::Assistant && !m.text().trim().is_empty())
        {
            let _ = write!(out, "\nLast assistant note: {}", line(&last.text(), 300));
        }
        let out = out.trim_start().to_owned();
        Ok(if out.chars().count() > self.max_chars {
            out.chars().take(self.max_chars).collect()
        } else {
            out
        })
    }

    fn key(&self) -> u64 {
        stable_hash(&[b"extractive-2", &self.max_chars.to_le_bytes()])
    }

    fn name(&self) -> Cow<'_, str> {
        Cow::Borrowed("extractive")
    }
}

/// A [`Summarizer`] from a closure, named and keyed by the caller.
///
/// # Examples
///
/// ```
/// use curator::strategies::{FnSummarizer, Summarizer};
///
/// let count = FnSummarizer::new("count", 1, |previous, messages| {
///     Ok(format!("{}{} messages", previous.map(|p| format!("{p} + ")).unwrap_or_default(), messages.len()))
/// });
/// assert_eq!(count.summarize(Some("3 messages"), &[])?, "3 messages + 0 messages");
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct FnSummarizer<F> {
    name: String,
    key: u64,
    f: F,
}

impl<F> FnSummarizer<F>
where
    F: Fn(Option<&str>, &[&Message]) -> std::result::Result<String, BoxError> + Send + Sync,
{
    /// A summarizer named `name`, whose summaries are memoised under `key` (change the key
    /// when the closure changes how it summarizes).
    pub fn new(name: impl Into<String>, key: u64, f: F) -> Self {
        Self { name: name.into(), key, f }
    }
}

impl<F> Summarizer for FnSummarizer<F>
where
    F: Fn(Option<&str>, &[&Message]) -> std::result::Result<String, BoxError> + Send + Sync,
{
    fn summarize(&self, previous: Option<&str>, messages: &[&Message]) -> Result<String> {
        (self.f)(previous, messages).map_err(|source| Error::Summarizer {
            summarizer: self.name.clone(),
            message: "the summarizing function returned an error".into(),
            source: Some(source),
        })
    }

    fn key(&self) -> u64 {
        stable_hash(&[b"fn", self.name.as_bytes(), &self.key.to_le_bytes()])
    }

    fn name(&self) -> Cow<'_, str> {
        Cow::Borrowed(&self.name)
    }
}

impl<F> std::fmt::Debug for FnSummarizer<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FnSummarizer")
            .field("name", &self.name)
            .field("key", &self.key)
            .finish_non_exhaustive()
    }
}
