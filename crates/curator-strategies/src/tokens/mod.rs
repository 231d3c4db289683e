//! Token counting: the [`TokenCounter`] trait, a fast estimate, and exact BPE encodings.

use curator_model::Message;

#[cfg(feature = "tiktoken")]
mod bpe;
mod content;
mod estimate;
#[cfg(feature = "tiktoken")]
mod stitch;

use std::sync::LazyLock;

use curator_model::Content;

#[cfg(feature = "tiktoken")]
pub use bpe::{Bpe, Encoding};
pub use content::{ContentRules, ImageRules};
pub use estimate::CharEstimate;

/// The rules of counters that do not choose their own.
static DEFAULT_RULES: LazyLock<ContentRules> = LazyLock::new(ContentRules::default);

/// Counts the tokens a provider bills for messages.
///
/// Implementations count text with [`count_text`](TokenCounter::count_text); the provided
/// [`count_message`](TokenCounter::count_message) adds the per-message overhead and the tool
/// calls. Counts are cached by [`History`](crate::History) under
/// [`cache_key`](TokenCounter::cache_key), so two counters that count differently must have
/// different keys.
///
/// # Examples
///
/// ```
/// use curator::model::Message;
/// use curator::strategies::{CharEstimate, TokenCounter};
///
/// let counter = CharEstimate::default();
/// assert_eq!(counter.count_text("abcdefgh"), 2);
/// assert_eq!(counter.count_message(&Message::user("abcdefgh")), 2 + 4);
/// ```
pub trait TokenCounter: Send + Sync + std::fmt::Debug {
    /// The identity of this way of counting, for caches: two counters that may count a text
    /// differently must have different keys.
    fn cache_key(&self) -> u64;

    /// Tokens of a piece of text.
    fn count_text(&self, text: &str) -> u64;

    /// Tokens every message costs besides its text (role and framing).
    fn per_message(&self) -> u64 {
        3
    }

    /// Tokens that prime the reply, counted once per request.
    fn reply_priming(&self) -> u64 {
        3
    }

    /// How this counter prices what is not text (images, documents, thinking blocks); see
    /// [`ContentRules`]. The default applies OpenAI's image rules.
    fn content_rules(&self) -> &ContentRules {
        &DEFAULT_RULES
    }

    /// Tokens of one message: the per-message overhead, the role, the text and every other
    /// part (images, documents, thinking blocks: see [`ContentRules`]), the name (plus one
    /// token), and for each tool call its name, its argument text and 3 tokens of framing; a
    /// tool message also pays for the id of the call it answers.
    fn count_message(&self, message: &Message) -> u64 {
        let mut n = self.per_message() + self.count_text(message.role().as_str());
        match message.content() {
            Some(Content::Text(text)) => n += self.count_text(text),
            Some(Content::Parts(parts)) => {
                let rules = self.content_rules();
                let count = |text: &str| self.count_text(text);
                n += parts.iter().map(|part| rules.part_tokens(part, &count)).sum::<u64>();
            }
            None => {}
        }
        if let Some(name) = message.name() {
            n += self.count_text(name) + 1;
        }
        for call in message.tool_calls() {
            n += 3 + self.count_text(call.name()) + self.count_text(call.arguments());
        }
        if let Some(id) = message.tool_call_id() {
            n += self.count_text(id);
        }
        n
    }

    /// The longest prefix of `text`, cut on a character boundary, that costs at most
    /// `max_tokens`. The default searches by halving over character boundaries, within the
    /// shortest prefix (doubling from a few bytes a token) that costs more: the time follows
    /// the length of what is kept, not of `text`.
    fn truncate_text<'t>(&self, text: &'t str, max_tokens: u64) -> &'t str {
        let window = reach(text, max_tokens, Edge::Start, &|t| self.count_text(t));
        longest_prefix(window, max_tokens, &|t| self.count_text(t))
    }

    /// The longest suffix of `text`, starting on a character boundary, that costs at most
    /// `max_tokens`: what [`truncate_text`](TokenCounter::truncate_text) is to the
    /// beginning. The default searches as it does.
    fn truncate_text_start<'t>(&self, text: &'t str, max_tokens: u64) -> &'t str {
        let window = reach(text, max_tokens, Edge::End, &|t| self.count_text(t));
        longest_suffix(window, max_tokens, &|t| self.count_text(t))
    }
}

/// Bytes a token takes at first guess, when looking for the part of a text a cut can reach.
const FIRST_BYTES_PER_TOKEN: u64 = 4;

/// The end of a text a cut keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Edge {
    /// Its beginning: a prefix.
    Start,
    /// Its end: a suffix.
    End,
}

/// The shortest prefix (or suffix, by `edge`) of `text`, doubling from
/// [`FIRST_BYTES_PER_TOKEN`] bytes a token, that costs more than `max_tokens` (or `text`
/// itself): the longest one within `max_tokens` lies inside it, as a longer one never costs
/// less. Reads at most about twice as many bytes as the part returned.
pub(crate) fn reach<'t>(
    text: &'t str,
    max_tokens: u64,
    edge: Edge,
    count: &dyn Fn(&str) -> u64,
) -> &'t str {
    let mut len = usize::try_from(max_tokens.saturating_mul(FIRST_BYTES_PER_TOKEN))
        .unwrap_or(usize::MAX)
        .max(64);
    while len < text.len() {
        // Widened to the next character boundary.
        let window = match edge {
            Edge::Start => {
                let mut end = len;
                while !text.is_char_boundary(end) {
                    end += 1;
                }
                &text[..end]
            }
            Edge::End => {
                let mut start = text.len() - len;
                while !text.is_char_boundary(start) {
                    start -= 1;
                }
                &text[start..]
            }
        };
        if count(window) > max_tokens {
            return window;
        }
        len = len.saturating_mul(2);
    }
    text
}

/// The longest prefix of `text` costing at most `max_tokens`, by halving over character
/// boundaries.
pub(crate) fn longest_prefix<'t>(
    text: &'t str,
    max_tokens: u64,
    count: &dyn Fn(&str) -> u64,
) -> &'t str {
    if count(text) <= max_tokens {
        return text;
    }
    let bounds: Vec<usize> =
        text.char_indices().map(|(i, _)| i).chain(std::iter::once(text.len())).collect();
    let (mut lo, mut hi) = (0, bounds.len() - 1);
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        if count(&text[..bounds[mid]]) <= max_tokens {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    &text[..bounds[lo]]
}

/// The longest suffix of `text` costing at most `max_tokens`, by halving over character
/// boundaries.
pub(crate) fn longest_suffix<'t>(
    text: &'t str,
    max_tokens: u64,
    count: &dyn Fn(&str) -> u64,
) -> &'t str {
    if count(text) <= max_tokens {
        return text;
    }
    // The later the start, the fewer tokens.
    let bounds: Vec<usize> = text.char_indices().map(|(i, _)| i).collect();
    let (mut lo, mut hi) = (0, bounds.len());
    while lo < hi {
        let mid = usize::midpoint(lo, hi);
        if count(&text[bounds[mid]..]) <= max_tokens {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    &text[bounds.get(lo).copied().unwrap_or(text.len())..]
}

/// Forwards every method, so that a counter can be shared by reference or by `Arc`.
macro_rules! forward_counter {
    ($($ty:ty),*) => {$(
        impl<T: TokenCounter + ?Sized> TokenCounter for $ty {
            fn cache_key(&self) -> u64 {
                (**self).cache_key()
            }
            fn count_text(&self, text: &str) -> u64 {
                (**self).count_text(text)
            }
            fn per_message(&self) -> u64 {
                (**self).per_message()
            }
            fn reply_priming(&self) -> u64 {
                (**self).reply_priming()
            }
            fn content_rules(&self) -> &ContentRules {
                (**self).content_rules()
            }
            fn count_message(&self, message: &Message) -> u64 {
                (**self).count_message(message)
            }
            fn truncate_text<'t>(&self, text: &'t str, max_tokens: u64) -> &'t str {
                (**self).truncate_text(text, max_tokens)
            }
            fn truncate_text_start<'t>(&self, text: &'t str, max_tokens: u64) -> &'t str {
                (**self).truncate_text_start(text, max_tokens)
            }
        }
    )*};
}

forward_counter!(&T, std::sync::Arc<T>, Box<T>);

/// `share` (0 to 1) of `tokens`, rounded down.
#[expect(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_precision_loss,
    reason = "a share of a token count"
)]
pub(crate) fn share(share: f64, tokens: u64) -> u64 {
    (share * tokens as f64).floor() as u64
}
