//! `ToolResultTruncator`: cap the length of each tool result.

use std::borrow::Cow;
use std::sync::Arc;

use curator_model::{Content, Message, Part, Role};

use crate::map::stable_hash;
use crate::shorten::floor_grapheme;
use crate::{CurationContext, Error, History, HistoryManager, MessageMap, Result, View};

/// The placeholder in a suffix that becomes the number of characters cut.
const CUT: &str = "{cut}";

/// Shortens every tool result longer than `max_length` characters to exactly `max_length`
/// characters, the suffix included.
///
/// Lengths count characters (Unicode scalar values), and the cut falls on a character
/// boundary, so multi-byte text and emoji are never split into invalid UTF-8. The suffix may
/// say how many characters were cut with the placeholder `{cut}`; the default suffix is
/// `"\n… [{cut} characters truncated]"`. If the number makes the suffix too long to fit, the
/// suffix is written without it, and if even that does not fit, the text is cut without a
/// suffix: the result never exceeds `max_length`.
///
/// The truncation is a lazy, memoised [`MessageMap`]: each tool result is examined at most
/// once over the life of a [`History`], and only when a later strategy keeps it.
///
/// # Errors
///
/// [`ToolResultTruncator::new`] and [`ToolResultTruncator::with_suffix`] fail with
/// [`Error::InvalidOption`] when `max_length` is shorter than the suffix (without its `{cut}`
/// placeholder).
///
/// # Examples
///
/// ```
/// use curator::model::{Message, ToolCall};
/// use curator::strategies::{CurationContext, HistoryManagerExt, ToolResultTruncator};
///
/// let truncator = ToolResultTruncator::with_suffix(20, "…[{cut} cut]")?;
/// let messages = vec![
///     Message::user("go"),
///     Message::assistant_with_calls(None, vec![ToolCall::new("1", "ls", "{}")]),
///     Message::tool_result("1", "0123456789abcdefghijklmnop"),
/// ];
/// let view = truncator.curate_messages(&messages, &CurationContext::default())?;
/// assert_eq!(view[2].text(), "0123456789a…[15 cut]");
/// assert!(view[2].text().chars().count() <= 20);
/// assert!(ToolResultTruncator::with_suffix(3, "[truncated]").is_err());
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct ToolResultTruncator {
    map: Arc<Truncate>,
}

#[derive(Debug)]
struct Truncate {
    max_length: usize,
    suffix: String,
    key: u64,
}

impl ToolResultTruncator {
    /// Caps tool results at `max_length` characters with the default suffix.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidOption`] when `max_length` is shorter than the default suffix.
    pub fn new(max_length: usize) -> Result<Self> {
        Self::build(max_length, "\n… [{cut} characters truncated]".to_owned())
    }

    /// Caps tool results at `max_length` characters, ending a cut result with `suffix`
    /// (where `{cut}` becomes the number of characters cut).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidOption`] when `max_length` is shorter than `suffix`.
    pub fn with_suffix(max_length: usize, suffix: impl Into<String>) -> Result<Self> {
        Self::build(max_length, suffix.into())
    }

    fn build(max_length: usize, suffix: String) -> Result<Self> {
        let fixed = suffix.replace(CUT, "").chars().count();
        if max_length < fixed {
            return Err(Error::InvalidOption {
                strategy: "tool_result_truncator",
                option: "max_length",
                reason: format!("is {max_length}, shorter than the suffix of {fixed} characters"),
            });
        }
        let key = stable_hash(&[b"truncate", &max_length.to_le_bytes(), suffix.as_bytes()]);
        Ok(Self { map: Arc::new(Truncate { max_length, suffix, key }) })
    }

    /// The maximum length, in characters.
    pub fn max_length(&self) -> usize {
        self.map.max_length
    }

    /// Truncates one text, or returns `None` when it is short enough.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::strategies::ToolResultTruncator;
    ///
    /// let t = ToolResultTruncator::with_suffix(10, "…")?;
    /// assert_eq!(t.truncate("héllo wörld 😀😀").as_deref(), Some("héllo wör…"));
    /// assert_eq!(t.truncate("short"), None);
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn truncate(&self, text: &str) -> Option<String> {
        self.map.truncate(text)
    }
}

impl Truncate {
    /// For a text of `total` characters over the limit: how many characters to keep and the
    /// suffix that follows them.
    fn plan(&self, total: usize) -> (usize, String) {
        // The rendered suffix depends on how much is cut, which depends on its length: try
        // the suffix with the count, then without it, then none.
        let mut candidates = Vec::with_capacity(3);
        if self.suffix.contains(CUT) {
            let without = self.suffix.replace(CUT, "");
            // With `w` fixed characters and a count of `d` digits, the cut is
            // `total - max_length + w + d`; find the `d` that agrees with itself.
            let base = total - (self.max_length - without.chars().count().min(self.max_length));
            for digits in 1..=20 {
                let cut = base + digits;
                if cut.to_string().len() == digits {
                    candidates.push(self.suffix.replace(CUT, &cut.to_string()));
                    break;
                }
            }
            candidates.push(without);
        } else {
            candidates.push(self.suffix.clone());
        }
        candidates.push(String::new());
        let suffix = candidates
            .into_iter()
            .find(|s| s.chars().count() <= self.max_length)
            .unwrap_or_default();
        (self.max_length - suffix.chars().count(), suffix)
    }

    fn truncate(&self, text: &str) -> Option<String> {
        let total = text.chars().count();
        if total <= self.max_length {
            return None;
        }
        let (keep, suffix) = self.plan(total);
        let cut = prefix_chars(text, keep);
        let mut out = String::with_capacity(cut.len() + suffix.len());
        out.push_str(cut);
        out.push_str(&suffix);
        Some(out)
    }

    /// Parts cut in place: text parts keep their share of the kept characters (the newline
    /// that joins two texts counts as one), the part where the cut falls ends with the
    /// suffix, later text parts are left out (their provider fields, such as a cache
    /// breakpoint, move to the cut part when it has none), and other parts stay where they
    /// are.
    fn truncate_parts(&self, parts: &[Part], total: usize) -> Vec<Part> {
        let (keep, suffix) = self.plan(total);
        let mut left = keep;
        let mut out = Vec::with_capacity(parts.len());
        let mut cut_at: Option<usize> = None;
        let mut first_text = true;
        for part in parts {
            let Part::Text { text, extra } = part else {
                out.push(part.clone());
                continue;
            };
            if let Some(at) = cut_at {
                if let (Some(Part::Text { extra: kept @ None, .. }), Some(extra)) =
                    (out.get_mut(at), extra)
                {
                    *kept = Some(extra.clone());
                }
                continue;
            }
            if !std::mem::replace(&mut first_text, false) {
                left = left.saturating_sub(1);
            }
            let chars = text.chars().count();
            if chars <= left {
                left -= chars;
                out.push(part.clone());
            } else {
                let mut cut = prefix_chars(text, left).to_owned();
                cut.push_str(&suffix);
                out.push(Part::Text { text: cut, extra: extra.clone() });
                cut_at = Some(out.len() - 1);
            }
        }
        out
    }
}

/// The first `chars` characters of `text`, or fewer so as to end on a grapheme boundary.
fn prefix_chars(text: &str, chars: usize) -> &str {
    let cut = text.char_indices().nth(chars).map_or(text.len(), |(i, _)| i);
    &text[..floor_grapheme(text, cut)]
}

impl MessageMap for Truncate {
    fn map(
        &self,
        message: &Message,
        _pos: Option<usize>,
        _history: &History<'_>,
    ) -> Option<Message> {
        if message.role() != Role::Tool {
            return None;
        }
        let content = message.content()?;
        let total = content.text_chars();
        if total <= self.max_length {
            return None;
        }
        let new = match content {
            Content::Text(text) => Content::Text(self.truncate(text)?),
            Content::Parts(parts) => Content::Parts(self.truncate_parts(parts, total)),
        };
        Some(message.clone_with_content(Some(new)))
    }

    fn memo_key(&self, _pos: usize) -> Option<u64> {
        Some(self.key)
    }

    /// Messages other than tool results, and tool results whose text has no more bytes than
    /// the characters kept (a text has at least as many bytes as characters).
    fn leaves_unchanged(&self, message: &Message) -> bool {
        message.role() != Role::Tool
            || message.content().is_none_or(|content| match content {
                Content::Text(text) => text.len() <= self.max_length,
                // Parts are counted with the newline joining two texts.
                Content::Parts(parts) => {
                    let texts = parts.iter().filter_map(Part::as_text);
                    texts.map(|t| t.len() + 1).sum::<usize>() <= self.max_length
                }
            })
    }

    /// The answers above depend on the length kept alone.
    fn unchanged_key(&self) -> Option<u64> {
        Some(stable_hash(&[b"truncate.leaves_unchanged", &self.max_length.to_le_bytes()]))
    }
}

impl HistoryManager for ToolResultTruncator {
    fn curate<'h>(&self, view: View<'h>, _ctx: &CurationContext<'_>) -> Result<View<'h>> {
        Ok(view.with_map(self.map.clone()))
    }

    fn name(&self) -> Cow<'_, str> {
        Cow::Borrowed("tool_result_truncator")
    }
}

#[cfg(test)]
mod tests {
    use curator_model::{Format, ImageSource, ProviderFields};
    use serde_json::json;

    use super::*;

    fn cache(mark: &str) -> Option<ProviderFields> {
        let mut fields = serde_json::Map::new();
        fields.insert("cache_control".into(), json!({"type": mark}));
        ProviderFields::non_empty(Format::Anthropic, fields)
    }

    proptest::proptest! {
        /// A tool result the truncator says it leaves unchanged is left unchanged.
        #[test]
        fn what_it_says_it_leaves_is_left(
            text in "(\\PC|\n){0,60}",
            texts in proptest::collection::vec("(\\PC|\n){0,20}", 0..4),
            max in 1usize..50,
        ) {
            let t = ToolResultTruncator::with_suffix(max, "").unwrap();
            let history = History::from(Vec::<Message>::new());
            let parts = texts.iter().map(|t| Part::Text { text: t.clone(), extra: None }).collect();
            for message in [Message::tool_result("c", text.clone()), Message::tool_result("c", "").with_content(Some(Content::Parts(parts))), Message::user(text.clone())] {
                if t.map.leaves_unchanged(&message) {
                    proptest::prop_assert_eq!(t.map.map(&message, None, &history), None);
                }
            }
        }
    }

    #[test]
    fn parts_are_cut_in_place_with_their_fields() {
        let t = ToolResultTruncator::with_suffix(12, "…").unwrap();
        let image = Part::image(ImageSource::from_url("https://x/a.png"));
        let parts = vec![
            Part::Text { text: "abcde".into(), extra: None },
            image.clone(),
            Part::Text { text: "fghijklmnop".into(), extra: cache("ephemeral") },
            Part::Text { text: "qrstuvwxyz".into(), extra: None },
        ];
        let out = t.map.truncate_parts(&parts, Content::Parts(parts.clone()).text_chars());
        // "abcde" + "\n" + "fghij" + "…" = 12 characters; the image stays second.
        assert_eq!(
            out,
            vec![
                Part::Text { text: "abcde".into(), extra: None },
                image,
                Part::Text { text: "fghij…".into(), extra: cache("ephemeral") },
            ]
        );
    }

    #[test]
    fn a_breakpoint_on_a_text_left_out_moves_to_the_cut_part() {
        let t = ToolResultTruncator::with_suffix(6, "…").unwrap();
        let parts = vec![
            Part::Text { text: "abcdefgh".into(), extra: None },
            Part::Text { text: "ijk".into(), extra: cache("ephemeral") },
        ];
        let out = t.map.truncate_parts(&parts, 12);
        assert_eq!(out, vec![Part::Text { text: "abcde…".into(), extra: cache("ephemeral") }]);
    }

    #[test]
    fn a_cut_never_leaves_a_dangling_zero_width_joiner() {
        let family = "👨\u{200d}👩\u{200d}👧";
        let text = format!("ab{family}{family}");
        for max in 3..text.chars().count() {
            let t = ToolResultTruncator::with_suffix(max, "").unwrap();
            let cut = t.truncate(&text).unwrap();
            assert!(!cut.ends_with('\u{200d}'), "{max}: {cut:?}");
            assert!(cut.chars().count() <= max);
            assert!(cut == "ab" || cut == format!("ab{family}"), "{max}: {cut:?}");
        }
    }
}
