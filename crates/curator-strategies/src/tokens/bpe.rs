//! Exact token counts under OpenAI's BPE encodings (feature `tiktoken`).

use crate::map::stable_hash;
use crate::{ContentRules, Error, Result, TokenCounter};

/// An OpenAI BPE encoding.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Encoding {
    /// `o200k_base`: GPT-4o, GPT-4.1, o-series and later.
    O200kBase,
    /// `cl100k_base`: GPT-4 and GPT-3.5.
    Cl100kBase,
}

impl Encoding {
    /// The encoding's name, as OpenAI spells it.
    pub const fn name(self) -> &'static str {
        match self {
            Encoding::O200kBase => "o200k_base",
            Encoding::Cl100kBase => "cl100k_base",
        }
    }
}

/// Counts tokens exactly as OpenAI's tokenizer does, with the vocabularies that ship inside
/// the pure-Rust `tiktoken` crate (no network, no files).
///
/// Text is encoded as ordinary text (special-token markers in content are counted as the
/// characters they are, as the API does). Messages are counted the way OpenAI bills chat
/// messages: 3 tokens per message, the role, the content, the name plus 1, and 3 tokens that
/// prime the reply; a tool call costs its name, its argument text and 3 tokens of framing
/// (OpenAI does not publish this part; it matches observed usage within a few tokens).
///
/// The vocabulary loads on first use (about 25 to 55 ms) and is shared by every counter.
///
/// # Examples
///
/// ```
/// use curator::model::Message;
/// use curator::strategies::{Bpe, Encoding, TokenCounter};
///
/// let bpe = Bpe::new(Encoding::O200kBase)?;
/// assert_eq!(bpe.count_text("hello world"), 2);
/// assert_eq!(bpe.count_message(&Message::user("hello world")), 3 + 1 + 2);
/// assert_eq!(bpe.truncate_text("hello world", 1), "hello");
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct Bpe {
    encoding: Encoding,
    core: &'static tiktoken::CoreBpe,
    content: ContentRules,
    /// The cache key, computed once: token caches ask for it on every read.
    key: u64,
}

impl Bpe {
    /// A counter for `encoding`.
    ///
    /// # Errors
    ///
    /// [`Error::Config`] if the encoding's vocabulary is not compiled in (it always is when
    /// the `tiktoken` feature is on).
    pub fn new(encoding: Encoding) -> Result<Self> {
        let core = tiktoken::get_encoding(encoding.name()).ok_or_else(|| {
            Error::config(format!("encoding `{}` is not available", encoding.name()))
        })?;
        let content = ContentRules::default();
        let key = Self::key(encoding, &content);
        Ok(Self { encoding, core, content, key })
    }

    /// The encoding.
    pub fn encoding(&self) -> Encoding {
        self.encoding
    }

    /// Prices images, documents and other non-text parts by `rules` (OpenAI's image rules
    /// by default, as befits an OpenAI encoding).
    #[must_use]
    pub fn with_content_rules(mut self, rules: ContentRules) -> Self {
        self.content = rules;
        self.key = Self::key(self.encoding, &self.content);
        self
    }

    /// The tokens of `text`; a long text is encoded in parts (see [`super::stitch`]).
    fn encode(&self, text: &str) -> Vec<u32> {
        if text.len() < LONG_TEXT {
            return self.core.encode(text);
        }
        super::stitch::encode(self.core, text)
    }

    fn key(encoding: Encoding, content: &ContentRules) -> u64 {
        stable_hash(&[b"bpe", encoding.name().as_bytes(), &content.cache_key().to_le_bytes()])
    }
}

impl std::fmt::Debug for Bpe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bpe").field("encoding", &self.encoding.name()).finish_non_exhaustive()
    }
}

impl TokenCounter for Bpe {
    fn cache_key(&self) -> u64 {
        self.key
    }

    fn count_text(&self, text: &str) -> u64 {
        if text.len() < LONG_TEXT {
            return self.core.count(text) as u64;
        }
        long_counts::count(self.encoding, text, || super::stitch::count(self.core, text) as u64)
    }

    fn content_rules(&self) -> &ContentRules {
        &self.content
    }

    fn truncate_text<'t>(&self, text: &'t str, max_tokens: u64) -> &'t str {
        // Only the part a prefix of `max_tokens` can reach is encoded, however long `text`.
        let text = super::reach(text, max_tokens, super::Edge::Start, &|t| self.count_text(t));
        let tokens = self.encode(text);
        let max = usize::try_from(max_tokens).unwrap_or(usize::MAX);
        if tokens.len() <= max {
            return text;
        }
        // Tokens decode to consecutive bytes of the text; cut on the char boundary at or
        // before the end of the first `max_tokens` tokens.
        let mut end = self.core.decode(&tokens[..max]).len().min(text.len());
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        // A prefix re-encodes into at most as many tokens in practice; make sure of it.
        let mut steps = 0;
        while end > 0 && self.count_text(&text[..end]) > max_tokens {
            steps += 1;
            if steps > FIX_STEPS {
                return super::longest_prefix(&text[..end], max_tokens, &|t| self.count_text(t));
            }
            end -= 1;
            while !text.is_char_boundary(end) {
                end -= 1;
            }
        }
        &text[..end]
    }

    fn truncate_text_start<'t>(&self, text: &'t str, max_tokens: u64) -> &'t str {
        let text = super::reach(text, max_tokens, super::Edge::End, &|t| self.count_text(t));
        let tokens = self.encode(text);
        let max = usize::try_from(max_tokens).unwrap_or(usize::MAX);
        if tokens.len() <= max {
            return text;
        }
        // The last `max_tokens` tokens decode to the text's last bytes; start on the char
        // boundary at or after them, then make sure the suffix re-encodes within the limit.
        let mut start = text.len() - self.core.decode(&tokens[tokens.len() - max..]).len();
        while !text.is_char_boundary(start) {
            start += 1;
        }
        let mut steps = 0;
        while start < text.len() && self.count_text(&text[start..]) > max_tokens {
            steps += 1;
            if steps > FIX_STEPS {
                return super::longest_suffix(&text[start..], max_tokens, &|t| self.count_text(t));
            }
            start += 1;
            while !text.is_char_boundary(start) {
                start += 1;
            }
        }
        &text[start..]
    }
}

/// Characters a cut found from the tokens moves by one at a time before it falls back to
/// halving: a text re-encodes into as many tokens, or one or two more, in practice.
const FIX_STEPS: usize = 8;

/// Bytes from which a text is encoded in parts and its count remembered: the budget, the
/// shortening and the next call each ask for a long text's count.
const LONG_TEXT: usize = 64 * 1024;

/// The counts of the last long texts counted, process-wide, by encoding, length and a
/// keyed hash of their bytes (the key is random per process, so that texts cannot be made
/// to collide).
mod long_counts {
    use std::hash::{BuildHasher, RandomState};
    use std::sync::{Mutex, OnceLock, PoisonError};

    use super::Encoding;

    /// Long texts remembered at once.
    const REMEMBERED: usize = 32;

    type Seen = Mutex<Vec<(Encoding, usize, u64, u64)>>;

    pub(super) fn count(encoding: Encoding, text: &str, count: impl FnOnce() -> u64) -> u64 {
        static KEYS: OnceLock<RandomState> = OnceLock::new();
        static SEEN: OnceLock<Seen> = OnceLock::new();
        let hash = KEYS.get_or_init(RandomState::new).hash_one(text.as_bytes());
        let seen = SEEN.get_or_init(Seen::default);
        let key = (encoding, text.len(), hash);
        {
            let mut seen = seen.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(at) = seen.iter().position(|&(e, l, h, _)| (e, l, h) == key) {
                let entry = seen.remove(at);
                seen.push(entry);
                return entry.3;
            }
        }
        // Counted without the lock: other threads count their own texts meanwhile.
        let n = count();
        let mut seen = seen.lock().unwrap_or_else(PoisonError::into_inner);
        if seen.len() >= REMEMBERED {
            seen.remove(0);
        }
        seen.push((encoding, text.len(), hash, n));
        n
    }
}
