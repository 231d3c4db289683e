//! Debugging views of a run: the turns as they happened, or the messages the model is sent.

use std::fmt::Write as _;

use curator_strategies::TokenCounter;

use crate::compression::{Compression, SingleUserCoalesced, Uncompressed};
use crate::format::{Limits, to_clojure};
use crate::namespace::Run;
use crate::turn::{TurnResult, Turns};

/// What a trace shows: the full turns (the default) or the messages a compression renders.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub enum TraceView<'a> {
    /// Each turn's program, tool calls, output and result; nothing is limited or collapsed.
    Turns,
    /// The messages the model is sent under this compression.
    Compressed(&'a dyn Compression),
}

/// A printable trace of a run, like `print_trace` in the spec.
///
/// # Examples
///
/// ```
/// use curator::coalesce::{Run, SingleUserCoalesced, Trace, TurnDraft, Turns, Value};
/// use curator::strategies::CharEstimate;
///
/// let mut turns = Turns::new();
/// turns.push(TurnDraft::returned("(+ 1 2)", Value::from(3)));
/// let run = Run::new("You write PTC-Lisp.", "Add");
///
/// let full = Trace::turns().render(&run, &turns);
/// assert!(full.contains("(+ 1 2)"));
///
/// let counter = CharEstimate::default();
/// let coalesced = SingleUserCoalesced::default();
/// let seen = Trace::compressed(&coalesced).with_usage(&counter).render(&run, &turns);
/// assert!(seen.starts_with("[system]"));
/// assert!(seen.contains("tokens"));
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Trace<'a> {
    view: TraceView<'a>,
    raw: bool,
    usage: Option<&'a dyn TokenCounter>,
}

impl<'a> Trace<'a> {
    /// The turns view: programs, tool calls, output and results.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::coalesce::{Run, Trace, Turns};
    ///
    /// assert_eq!(Trace::turns().render(&Run::new("s", "m"), &Turns::new()), "(no turns)");
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub const fn turns() -> Self {
        Self { view: TraceView::Turns, raw: false, usage: None }
    }

    /// The compressed view: the messages the model is sent.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::coalesce::{Run, SingleUserCoalesced, Trace, Turns};
    ///
    /// let coalesced = SingleUserCoalesced::default();
    /// let text = Trace::compressed(&coalesced).render(&Run::new("s", "Mission"), &Turns::new());
    /// assert!(text.contains("[user]\nMission"));
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub const fn compressed(compression: &'a dyn Compression) -> Self {
        Self { view: TraceView::Compressed(compression), raw: false, usage: None }
    }

    /// Also show each turn's raw response (the model's reasoning around the program).
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::coalesce::{Run, Trace, TurnDraft, Turns, Value};
    ///
    /// let mut turns = Turns::new();
    /// let mut draft = TurnDraft::returned("(+ 1 2)", Value::from(3));
    /// draft.raw_response = "I will add.\n(+ 1 2)".to_owned();
    /// turns.push(draft);
    /// assert!(Trace::turns().with_raw().render(&Run::new("s", "m"), &turns).contains("I will add."));
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub const fn with_raw(mut self) -> Self {
        self.raw = true;
        self
    }

    /// Add token counts under `counter`: per message in the compressed view, per turn in the
    /// turns view, and the totals of the compressed and uncompressed prompts.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::coalesce::{Run, Trace, Turns};
    /// use curator::strategies::CharEstimate;
    ///
    /// let counter = CharEstimate::default();
    /// let text = Trace::turns().with_usage(&counter).render(&Run::new("s", "m"), &Turns::new());
    /// assert!(text.contains("single_user_coalesced prompt:"));
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub const fn with_usage(mut self, counter: &'a dyn TokenCounter) -> Self {
        self.usage = Some(counter);
        self
    }

    /// The trace as text.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::coalesce::{Run, Trace, TurnDraft, Turns};
    ///
    /// let mut turns = Turns::new();
    /// turns.push(TurnDraft::failed("(boom)", "undefined symbol 'boom'"));
    /// let text = Trace::turns().render(&Run::new("s", "m"), &turns);
    /// assert!(text.contains("Error: undefined symbol 'boom'"));
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn render(&self, run: &Run, turns: &Turns) -> String {
        let mut out = String::new();
        // The compressed view's messages, rendered once: shown, and counted for the totals.
        let mut compressed = None;
        match self.view {
            TraceView::Turns => self.render_turns(&mut out, turns),
            TraceView::Compressed(compression) => {
                let messages = compression.to_messages(run, turns);
                for message in &messages {
                    let _ = write!(out, "[{}]", message.role().as_str());
                    if let Some(counter) = self.usage {
                        let _ = write!(out, " ({} tokens)", counter.count_message(message));
                    }
                    let _ = write!(out, "\n{}\n\n", message.text());
                }
                compressed = Some((compression.name(), messages));
            }
        }
        if let Some(counter) = self.usage {
            let total = |messages: &[curator_model::Message]| {
                messages.iter().map(|message| counter.count_message(message)).sum::<u64>()
                    + counter.reply_priming()
            };
            let (name, messages) = compressed.unwrap_or_else(|| {
                let default = SingleUserCoalesced::default();
                (default.name().into_owned().into(), default.to_messages(run, turns))
            });
            let _ = writeln!(
                out,
                "tokens: {name} prompt: {}, uncompressed prompt: {}",
                total(&messages),
                total(&Uncompressed.to_messages(run, turns))
            );
        }
        let trimmed = out.trim_end().len();
        out.truncate(trimmed);
        if out.is_empty() {
            out.push_str("(no turns)");
        }
        out
    }

    fn render_turns(&self, out: &mut String, turns: &Turns) {
        for turn in turns {
            let status = if turn.success() { "ok" } else { "failed" };
            let _ = writeln!(out, "=== Turn {} ({status}) ===", turn.number());
            if self.raw {
                let _ = writeln!(out, "Raw response:\n{}", turn.raw_response().trim_end());
            }
            let _ = writeln!(out, "Program:\n```clojure\n{}\n```", turn.program().trim_end());
            if let Some(counter) = self.usage {
                let _ = writeln!(
                    out,
                    "Tokens: program {}, raw response {}",
                    counter.count_text(turn.program()),
                    counter.count_text(turn.raw_response())
                );
            }
            if !turn.tool_calls().is_empty() {
                out.push_str("Tool calls:\n");
                for call in turn.tool_calls() {
                    let _ = writeln!(
                        out,
                        "  {}({}) -> {}",
                        call.name,
                        to_clojure(&call.args, Limits::UNLIMITED),
                        to_clojure(&call.result, Limits::UNLIMITED)
                    );
                }
            }
            if !turn.prints().is_empty() {
                out.push_str("Output:\n");
                for print in turn.prints() {
                    let _ = writeln!(out, "{print}");
                }
            }
            match turn.result() {
                TurnResult::Returned(value) => {
                    let _ = writeln!(out, "Result: {}", to_clojure(value, Limits::UNLIMITED));
                }
                TurnResult::Failed(error) => {
                    let _ = writeln!(out, "Error: {error}");
                }
            }
            out.push('\n');
        }
    }
}
