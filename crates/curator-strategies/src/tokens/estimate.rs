//! A fast token estimate from character counts.

use crate::map::stable_hash;
use crate::{ContentRules, TokenCounter};

/// Estimates tokens from characters: `ceil(chars / chars_per_token)` for text, plus
/// `per_message` tokens of framing per message.
///
/// With the defaults (4 characters a token, 3 tokens a message, 3 for reply priming) a
/// message costs `3 + ceil(chars(role)/4) + ceil(chars(text)/4)`, plus for each tool call
/// `3 + ceil(chars(name)/4) + ceil(chars(arguments)/4)`. English prose averages about four
/// characters a token under OpenAI's encodings; code and JSON run denser, so treat the
/// estimate as approximate and use the exact counter (feature `tiktoken`) where the budget is
/// tight.
///
/// # Examples
///
/// ```
/// use curator::strategies::{CharEstimate, TokenCounter};
///
/// let estimate = CharEstimate::default();
/// assert_eq!(estimate.count_text("héllo wörld"), 3); // 11 characters
/// assert_eq!(estimate.truncate_text("abcdefghij", 2), "abcdefgh");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CharEstimate {
    chars_per_token: u64,
    per_message: u64,
    content: ContentRules,
    /// The cache key, computed once: token caches ask for it on every read.
    key: u64,
}

impl CharEstimate {
    /// An estimate with `chars_per_token` characters a token (at least 1) and `per_message`
    /// tokens of framing per message; non-text content priced by OpenAI's rules.
    pub fn new(chars_per_token: u64, per_message: u64) -> Self {
        let chars_per_token = if chars_per_token == 0 { 1 } else { chars_per_token };
        let content = ContentRules::default();
        let key = Self::key(chars_per_token, per_message, &content);
        Self { chars_per_token, per_message, content, key }
    }

    fn key(chars_per_token: u64, per_message: u64, content: &ContentRules) -> u64 {
        stable_hash(&[
            b"estimate",
            &chars_per_token.to_le_bytes(),
            &per_message.to_le_bytes(),
            &content.cache_key().to_le_bytes(),
        ])
    }

    /// Prices images, documents and other non-text parts by `rules`.
    #[must_use]
    pub fn with_content_rules(mut self, rules: ContentRules) -> Self {
        self.content = rules;
        self.key = Self::key(self.chars_per_token, self.per_message, &self.content);
        self
    }
}

impl Default for CharEstimate {
    fn default() -> Self {
        Self::new(4, 3)
    }
}

impl TokenCounter for CharEstimate {
    fn cache_key(&self) -> u64 {
        self.key
    }

    fn count_text(&self, text: &str) -> u64 {
        // Byte length bounds the character count; most text is ASCII, where they agree.
        let chars = if text.is_ascii() { text.len() } else { text.chars().count() };
        (chars as u64).div_ceil(self.chars_per_token)
    }

    fn per_message(&self) -> u64 {
        self.per_message
    }

    fn content_rules(&self) -> &ContentRules {
        &self.content
    }

    fn truncate_text<'t>(&self, text: &'t str, max_tokens: u64) -> &'t str {
        let max_chars =
            usize::try_from(max_tokens.saturating_mul(self.chars_per_token)).unwrap_or(usize::MAX);
        match text.char_indices().nth(max_chars) {
            Some((cut, _)) => &text[..cut],
            None => text,
        }
    }
}
