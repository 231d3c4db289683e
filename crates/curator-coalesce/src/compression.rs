//! The `Compression` trait: render a run's turns into the messages the model is sent.

use std::borrow::Cow;

use std::fmt::Write as _;

use curator_model::Message;
use serde::{Deserialize, Serialize};

use crate::error::Error;
use crate::format::{Limits, to_clojure};
use crate::namespace::Run;
use crate::render::{self, HistoryLimits};
use crate::turn::{Turn, TurnResult, Turns};

/// A pure render function from a run's turns to the messages for the next provider call.
///
/// The turns are never changed; the same turns can be rendered by several compressions (the
/// compressed prompt, the full debugging view).
///
/// # Examples
///
/// ```
/// use curator::coalesce::{Compression, Run, SingleUserCoalesced, Turns, Uncompressed};
///
/// let run = Run::new("You write PTC-Lisp.", "Count the items");
/// let turns = Turns::new();
/// for compression in [&SingleUserCoalesced::default() as &dyn Compression, &Uncompressed] {
///     let messages = compression.to_messages(&run, &turns);
///     assert_eq!(messages.len(), 2, "{}", compression.name());
/// }
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait Compression: Send + Sync {
    /// The strategy's name, as configuration spells it.
    fn name(&self) -> Cow<'_, str>;

    /// The messages for the next call: SYSTEM first, then the history as this strategy shows it.
    fn to_messages(&self, run: &Run, turns: &Turns) -> Vec<Message>;
}

// Traces hold a `&dyn Compression`; its name is what a reader needs to see.
impl std::fmt::Debug for dyn Compression + '_ {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.name())
    }
}

/// Every turn coalesced into one USER message after the static SYSTEM message: the mission,
/// the `tool/`, `data/` and `user/` namespaces, the tool calls and output so far, the failed
/// attempt while the run is still failing, and the turns left.
///
/// # Bounds
///
/// The USER message never exceeds [`max_chars`](Self::max_chars) characters (default
/// [`DEFAULT_MAX_CHARS`](Self::DEFAULT_MAX_CHARS), about 12,500 tokens at four characters a
/// token), whatever the run holds. Every piece is bounded first: a println call to a
/// quarter of the budget, the failed program and its error to an eighth each (their
/// beginning and end kept, `[... N characters cut ...]` between), samples and tool
/// arguments by [`Limits::SAMPLE`] and [`Limits::TOOL_ARGS`], descriptions and docstrings to
/// 240 characters. When the whole is still too long, whole entries are cut, the oldest
/// output first and the mission last (see `docs/coalesce.md`), and each cut leaves a line
/// saying what and how many: `;; ... 3 earlier println calls cut to fit the message budget`.
/// The newest println call and tool call are the last history to go.
///
/// Names starting with `_` are private: `data/` and `user/` list them with their type and
/// `[hidden]` in place of a sample, and maps everywhere in the message leave out their
/// `_` keys, saying how many (`{:user "bob", ... 1 private key hidden}`).
///
/// # Examples
///
/// ```
/// use curator::coalesce::{Compression, Run, SingleUserCoalesced, TurnDraft, Turns, Value};
///
/// let mut turns = Turns::new();
/// turns.push(TurnDraft::returned("(+ 1 2)", Value::from(3)));
/// let messages = SingleUserCoalesced::default().to_messages(&Run::new("system", "Add"), &turns);
/// assert_eq!(messages[1].text(), "Add\n\nTurns left: 4");
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "SingleUserCoalescedOptions")]
#[non_exhaustive]
pub struct SingleUserCoalesced {
    /// The most recent `println` calls shown (default 15); the older ones are counted in a
    /// line under the section's header.
    pub println_limit: usize,
    /// The most recent tool calls shown (default 20); the older ones are counted in a line
    /// under the section's header.
    pub tool_call_limit: usize,
    /// The most characters of the USER message; at least [`Self::MIN_MAX_CHARS`], so
    /// private, and saved only when it is not the default.
    #[serde(skip_serializing_if = "is_default_budget")]
    max_chars: usize,
}

#[expect(
    clippy::trivially_copy_pass_by_ref,
    reason = "serde's `skip_serializing_if` lends the field"
)]
fn is_default_budget(max_chars: &usize) -> bool {
    *max_chars == SingleUserCoalesced::DEFAULT_MAX_CHARS
}

/// The options as configuration writes them, checked before they become a
/// [`SingleUserCoalesced`].
#[derive(Deserialize)]
#[serde(default, deny_unknown_fields)]
struct SingleUserCoalescedOptions {
    println_limit: usize,
    tool_call_limit: usize,
    max_chars: usize,
}

impl Default for SingleUserCoalescedOptions {
    fn default() -> Self {
        let defaults = SingleUserCoalesced::default();
        Self {
            println_limit: defaults.println_limit,
            tool_call_limit: defaults.tool_call_limit,
            max_chars: defaults.max_chars,
        }
    }
}

impl TryFrom<SingleUserCoalescedOptions> for SingleUserCoalesced {
    type Error = Error;

    fn try_from(options: SingleUserCoalescedOptions) -> Result<Self, Error> {
        Self::default()
            .with_println_limit(options.println_limit)
            .with_tool_call_limit(options.tool_call_limit)
            .with_max_chars(options.max_chars)
    }
}

impl Default for SingleUserCoalesced {
    fn default() -> Self {
        Self { println_limit: 15, tool_call_limit: 20, max_chars: Self::DEFAULT_MAX_CHARS }
    }
}

impl SingleUserCoalesced {
    /// The default budget of the USER message: 50,000 characters.
    pub const DEFAULT_MAX_CHARS: usize = 50_000;

    /// The smallest budget: what the section headers, the cut markers and `Turns left` need,
    /// with room for the mission's beginning and end.
    pub const MIN_MAX_CHARS: usize = 1_000;

    /// The same strategy showing at most `limit` println calls.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::coalesce::SingleUserCoalesced;
    ///
    /// assert_eq!(SingleUserCoalesced::default().with_println_limit(10).println_limit, 10);
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub const fn with_println_limit(mut self, limit: usize) -> Self {
        self.println_limit = limit;
        self
    }

    /// The same strategy showing at most `limit` tool calls.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::coalesce::SingleUserCoalesced;
    ///
    /// assert_eq!(SingleUserCoalesced::default().with_tool_call_limit(15).tool_call_limit, 15);
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub const fn with_tool_call_limit(mut self, limit: usize) -> Self {
        self.tool_call_limit = limit;
        self
    }

    /// The same strategy with a budget of `max_chars` characters for the USER message
    /// (`usize::MAX` for none); configuration writes it `"max_chars": 20000`.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::coalesce::SingleUserCoalesced;
    ///
    /// let coalesced = SingleUserCoalesced::default().with_max_chars(20_000)?;
    /// assert_eq!(coalesced.max_chars(), 20_000);
    /// assert!(SingleUserCoalesced::default().with_max_chars(10).is_err());
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::BudgetTooSmall`] below [`Self::MIN_MAX_CHARS`]: the markers that say what
    /// was cut would not fit.
    pub const fn with_max_chars(mut self, max_chars: usize) -> Result<Self, Error> {
        if max_chars < Self::MIN_MAX_CHARS {
            return Err(Error::BudgetTooSmall { max_chars, minimum: Self::MIN_MAX_CHARS });
        }
        self.max_chars = max_chars;
        Ok(self)
    }

    /// The most characters of the USER message.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::coalesce::SingleUserCoalesced;
    ///
    /// assert_eq!(SingleUserCoalesced::default().max_chars(), SingleUserCoalesced::DEFAULT_MAX_CHARS);
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub const fn max_chars(&self) -> usize {
        self.max_chars
    }

    /// The USER message alone.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::coalesce::{Run, SingleUserCoalesced, Turns};
    ///
    /// let text = SingleUserCoalesced::default().user_message(&Run::new("s", "Mission"), &Turns::new());
    /// assert!(text.starts_with("Mission\n"));
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn user_message(&self, run: &Run, turns: &Turns) -> String {
        render::coalesced(
            run,
            turns,
            HistoryLimits {
                println_limit: self.println_limit,
                tool_call_limit: self.tool_call_limit,
                max_chars: self.max_chars,
            },
        )
    }
}

impl Compression for SingleUserCoalesced {
    fn name(&self) -> Cow<'_, str> {
        Cow::Borrowed("single_user_coalesced")
    }

    fn to_messages(&self, run: &Run, turns: &Turns) -> Vec<Message> {
        vec![Message::system(run.system.as_str()), Message::user(self.user_message(run, turns))]
    }
}

/// The full history: the mission and namespaces, then one ASSISTANT/USER pair per turn with
/// the whole program, its result or error, every tool call and all output; no limits and no
/// collapsing.
///
/// # Examples
///
/// ```
/// use curator::coalesce::{Compression, Run, TurnDraft, Turns, Uncompressed, Value};
///
/// let mut turns = Turns::new();
/// turns.push(TurnDraft::returned("(+ 1 2)", Value::from(3)));
/// let messages = Uncompressed.to_messages(&Run::new("system", "Add"), &turns);
/// assert_eq!(messages[2].text(), "(+ 1 2)");
/// assert_eq!(messages[3].text(), "Result: 3\n\nTurns left: 4");
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Uncompressed;

impl Compression for Uncompressed {
    fn name(&self) -> Cow<'_, str> {
        Cow::Borrowed("uncompressed")
    }

    fn to_messages(&self, run: &Run, turns: &Turns) -> Vec<Message> {
        let mut messages = Vec::with_capacity(2 + 2 * turns.len());
        messages.push(Message::system(run.system.as_str()));
        let opening = render::mission_and_namespaces(run);
        messages.push(Message::user(opening.trim_end()));
        for (index, turn) in turns.iter().enumerate() {
            messages.push(Message::assistant(turn.program()));
            let mut text = execution_report(turn);
            if index + 1 == turns.len() {
                let _ = write!(text, "\n\nTurns left: {}", render::turns_left(run, turns));
            }
            messages.push(Message::user(text));
        }
        messages
    }
}

/// What happened when a turn's program ran, as the full history shows it: `Result: {value}`
/// or `Error: {error}`, every tool call and all output, unbounded but for private (`_`) map
/// keys, which the model never sees.
pub(crate) fn execution_report(turn: &Turn) -> String {
    const FULL: Limits = Limits::UNLIMITED.with_private_hidden();
    let mut text = match turn.result() {
        TurnResult::Returned(value) => format!("Result: {}", to_clojure(value, FULL)),
        TurnResult::Failed(error) => format!("Error: {error}"),
    };
    if !turn.tool_calls().is_empty() {
        text.push_str("\n\n;; Tool calls made:");
        for call in turn.tool_calls() {
            let _ = write!(text, "\n;   {}({})", call.name, to_clojure(&call.args, FULL));
        }
    }
    if !turn.prints().is_empty() {
        text.push_str("\n\n;; Output:");
        for print in turn.prints() {
            text.push('\n');
            text.push_str(print);
        }
    }
    text
}

/// Which compression a run uses, as configuration writes it: `false` (the default: full
/// history), `true` (the default strategy), a strategy's name, or a strategy with options.
///
/// # Examples
///
/// ```
/// use curator::coalesce::CompressionConfig;
///
/// for json in ["false", "true", r#""single_user_coalesced""#,
///              r#"{"strategy": "single_user_coalesced", "println_limit": 10, "tool_call_limit": 15}"#] {
///     let config: CompressionConfig = serde_json::from_str(json)?;
///     let _ = config.build();
/// }
/// assert_eq!(CompressionConfig::default().build().name(), "uncompressed");
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum CompressionConfig {
    /// `false`: uncompressed; `true`: [`SingleUserCoalesced`] with its defaults.
    Enabled(bool),
    /// A strategy by name, with its defaults.
    Named(StrategyName),
    /// A strategy with options.
    Configured(ConfiguredStrategy),
}

impl Default for CompressionConfig {
    /// Compression is opt-in: `false`.
    fn default() -> Self {
        Self::Enabled(false)
    }
}

// By hand rather than untagged, so that a bad strategy name or option is reported as such
// instead of "did not match any variant".
impl<'de> Deserialize<'de> for CompressionConfig {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;

        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = CompressionConfig;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(
                    "false, true, a strategy name, or a map with `strategy` and its options",
                )
            }

            fn visit_bool<E: serde::de::Error>(self, enabled: bool) -> Result<Self::Value, E> {
                Ok(CompressionConfig::Enabled(enabled))
            }

            fn visit_str<E: serde::de::Error>(self, name: &str) -> Result<Self::Value, E> {
                StrategyName::deserialize(serde::de::value::StrDeserializer::new(name))
                    .map(CompressionConfig::Named)
            }

            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<Self::Value, A::Error> {
                ConfiguredStrategy::deserialize(serde::de::value::MapAccessDeserializer::new(map))
                    .map(CompressionConfig::Configured)
            }
        }

        deserializer.deserialize_any(Visitor)
    }
}

/// The names of the compression strategies: `single_user_coalesced` (or the spec's
/// `SingleUserCoalesced`) and `uncompressed` (or `Uncompressed`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StrategyName {
    /// [`SingleUserCoalesced`].
    #[serde(alias = "SingleUserCoalesced")]
    SingleUserCoalesced,
    /// [`Uncompressed`].
    #[serde(alias = "Uncompressed")]
    Uncompressed,
}

/// A strategy with its options: `{"strategy": "single_user_coalesced", "println_limit": 10}`.
/// An option the strategy does not have is refused, `uncompressed` taking none.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "strategy", rename_all = "snake_case", deny_unknown_fields)]
pub enum ConfiguredStrategy {
    /// [`SingleUserCoalesced`] with options.
    #[serde(alias = "SingleUserCoalesced")]
    SingleUserCoalesced(SingleUserCoalesced),
    /// [`Uncompressed`], which has no options (an empty struct variant, so that serde
    /// refuses fields under it; a unit variant would ignore them).
    #[serde(alias = "Uncompressed")]
    Uncompressed {},
}

impl CompressionConfig {
    /// The compression this configuration names.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::coalesce::CompressionConfig;
    ///
    /// assert_eq!(CompressionConfig::Enabled(true).build().name(), "single_user_coalesced");
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn build(&self) -> Box<dyn Compression> {
        match self {
            Self::Enabled(true) | Self::Named(StrategyName::SingleUserCoalesced) => {
                Box::new(SingleUserCoalesced::default())
            }
            Self::Configured(ConfiguredStrategy::SingleUserCoalesced(options)) => {
                Box::new(*options)
            }
            Self::Enabled(false)
            | Self::Named(StrategyName::Uncompressed)
            | Self::Configured(ConfiguredStrategy::Uncompressed {}) => Box::new(Uncompressed),
        }
    }
}
