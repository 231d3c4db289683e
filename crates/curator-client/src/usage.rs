//! The tokens a model call took, as the provider billed them ([`Usage`]); their record is in
//! [`usage_record`](crate::usage_record).

#[cfg(any(feature = "openai", feature = "anthropic"))]
use serde_json::Value;

/// The tokens one call took, as the provider counted and billed them: the input (cached
/// tokens included), the part of it read from or written to the provider's prompt cache, and
/// the output.
///
/// # Examples
///
/// ```
/// use curator::client::Usage;
///
/// let usage = Usage::new(1_000, 50).with_cache(800, 0);
/// assert_eq!((usage.input_tokens, usage.output_tokens, usage.total()), (1_000, 50, 1_050));
/// assert_eq!(usage.bill().uncached_tokens(), 200);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct Usage {
    /// Every token of the request, cached or not (OpenAI's `prompt_tokens`; Anthropic's
    /// `input_tokens` plus its two cache counts).
    pub input_tokens: u64,
    /// The tokens of the reply (OpenAI's `completion_tokens`, Anthropic's `output_tokens`).
    pub output_tokens: u64,
    /// The input tokens read from the prompt cache (OpenAI's
    /// `prompt_tokens_details.cached_tokens`, Anthropic's `cache_read_input_tokens`).
    pub cache_read_tokens: u64,
    /// The input tokens written to the prompt cache (Anthropic's
    /// `cache_creation_input_tokens`; OpenAI bills no writes).
    pub cache_write_tokens: u64,
}

impl Usage {
    /// `input_tokens` in, `output_tokens` out, nothing from the cache.
    pub const fn new(input_tokens: u64, output_tokens: u64) -> Self {
        Self { input_tokens, output_tokens, cache_read_tokens: 0, cache_write_tokens: 0 }
    }

    /// The same usage with `read` input tokens read from the cache and `written` written to
    /// it (both part of `input_tokens`).
    #[must_use]
    pub const fn with_cache(mut self, read: u64, written: u64) -> Self {
        self.cache_read_tokens = read;
        self.cache_write_tokens = written;
        self
    }

    /// This usage and `other` added, count by count (a run's usage over its calls).
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::client::Usage;
    ///
    /// let run = Usage::new(1_000, 10).plus(Usage::new(1_200, 20).with_cache(1_000, 0));
    /// assert_eq!((run.input_tokens, run.output_tokens, run.cache_read_tokens), (2_200, 30, 1_000));
    /// ```
    #[must_use]
    pub const fn plus(self, other: Self) -> Self {
        Self {
            input_tokens: self.input_tokens.saturating_add(other.input_tokens),
            output_tokens: self.output_tokens.saturating_add(other.output_tokens),
            cache_read_tokens: self.cache_read_tokens.saturating_add(other.cache_read_tokens),
            cache_write_tokens: self.cache_write_tokens.saturating_add(other.cache_write_tokens),
        }
    }

    /// Both counts together.
    pub const fn total(&self) -> u64 {
        self.input_tokens.saturating_add(self.output_tokens)
    }

    /// The usage as a bill, for [`Prices::price`](curator_strategies::bill::Prices::price)
    /// (five-minute cache writes).
    pub fn bill(&self) -> curator_strategies::bill::CallBill {
        curator_strategies::bill::CallBill {
            input_tokens: self.input_tokens,
            cache_read_tokens: self.cache_read_tokens,
            cache_write_tokens: self.cache_write_tokens,
            output_tokens: self.output_tokens,
            ..curator_strategies::bill::CallBill::default()
        }
    }

    /// Reads an OpenAI chat completion's `usage` (`prompt_tokens`, `completion_tokens`,
    /// `prompt_tokens_details.cached_tokens`); `None` when there is no such object or it
    /// holds neither count (a count missing alone is 0).
    #[cfg(feature = "openai")]
    pub(crate) fn read_openai(reply: &Value) -> Option<Self> {
        Self::read_cached(
            reply,
            ["prompt_tokens", "completion_tokens"],
            "/prompt_tokens_details/cached_tokens",
        )
    }

    /// Reads a Responses API response's `usage` (`input_tokens`, `output_tokens`,
    /// `input_tokens_details.cached_tokens`); `None` as [`read_openai`](Self::read_openai).
    #[cfg(feature = "openai")]
    pub(crate) fn read_responses(reply: &Value) -> Option<Self> {
        Self::read_cached(
            reply,
            ["input_tokens", "output_tokens"],
            "/input_tokens_details/cached_tokens",
        )
    }

    /// A `usage` whose input count includes the cached tokens that `cached` points at.
    #[cfg(feature = "openai")]
    fn read_cached(reply: &Value, [input, output]: [&str; 2], cached: &str) -> Option<Self> {
        let usage = reply.get("usage")?;
        let count = |name: &str| usage.get(name).and_then(Value::as_u64);
        let (input, output) = match (count(input), count(output)) {
            (None, None) => return None,
            (i, o) => (i.unwrap_or(0), o.unwrap_or(0)),
        };
        let cached = usage.pointer(cached).and_then(Value::as_u64).unwrap_or(0).min(input);
        Some(Self::new(input, output).with_cache(cached, 0))
    }

    /// Reads an Anthropic message's `usage` (`input_tokens`, `output_tokens`,
    /// `cache_read_input_tokens`, `cache_creation_input_tokens`), whose `input_tokens`
    /// leaves out the cached ones; `None` as [`read_openai`](Self::read_openai).
    #[cfg(feature = "anthropic")]
    pub(crate) fn read_anthropic(reply: &Value) -> Option<Self> {
        let usage = reply.get("usage")?;
        let count = |name: &str| usage.get(name).and_then(Value::as_u64);
        let (input, output) = match (count("input_tokens"), count("output_tokens")) {
            (None, None) => return None,
            (i, o) => (i.unwrap_or(0), o.unwrap_or(0)),
        };
        let read = count("cache_read_input_tokens").unwrap_or(0);
        let written = count("cache_creation_input_tokens").unwrap_or(0);
        let all = input.saturating_add(read).saturating_add(written);
        Some(Self::new(all, output).with_cache(read, written))
    }
}

impl std::iter::Sum for Usage {
    /// The usages added, count by count (see [`Usage::plus`]).
    fn sum<I: Iterator<Item = Usage>>(usages: I) -> Self {
        usages.fold(Usage::default(), Usage::plus)
    }
}
