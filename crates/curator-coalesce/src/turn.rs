//! The append-only record of a code-executing agent's turns.

use serde::{Deserialize, Serialize};

use crate::value::Value;

/// How a turn's program ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "outcome", content = "value", rename_all = "snake_case")]
pub enum TurnResult {
    /// The program ran to the end and produced this value.
    Returned(Value),
    /// The program failed with this error message.
    Failed(String),
}

/// One tool call a program made, with the arguments it passed and what came back.
///
/// # Examples
///
/// ```
/// use curator::coalesce::{RecordedToolCall, Value};
///
/// let call = RecordedToolCall::new("search-reviews", Value::from("Electronics"), Value::from("..."));
/// assert_eq!(call.name, "search-reviews");
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordedToolCall {
    /// The tool, without its `tool/` namespace.
    pub name: String,
    /// The arguments, as the program passed them.
    pub args: Value,
    /// What the tool returned (`nil` for pure actions).
    pub result: Value,
}

impl RecordedToolCall {
    /// A recorded call.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::coalesce::{RecordedToolCall, Value};
    ///
    /// let call = RecordedToolCall::new("make-call", Value::map([("to", Value::from("Alice"))]), Value::Nil);
    /// assert_eq!(call.result, Value::Nil);
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(name: impl Into<String>, args: Value, result: Value) -> Self {
        Self { name: name.into(), args, result }
    }
}

/// A name the program bound with `def` or `defn`, as the user namespace holds it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Definition {
    /// The bound name, without namespace.
    pub name: String,
    /// The bound value; a [`Value::Function`] for `defn`.
    pub value: Value,
}

/// What the caller knows about a turn before it joins the record; [`Turns::push`] numbers it.
///
/// # Examples
///
/// ```
/// use curator::coalesce::{Definition, TurnDraft, Value};
///
/// let mut draft = TurnDraft::returned("(def x 1) (println x)", Value::Nil);
/// draft.prints.push("1".to_owned());
/// draft.memory.push(Definition { name: "x".to_owned(), value: Value::from(1) });
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct TurnDraft {
    /// The model's whole reply, reasoning included.
    pub raw_response: String,
    /// The program extracted from the reply.
    pub program: String,
    /// How the program ended; `None` is read as returning `nil`.
    pub result: Option<TurnResult>,
    /// One entry per `println` call, however many lines it printed.
    pub prints: Vec<String>,
    /// The tool calls, in the order they were made.
    pub tool_calls: Vec<RecordedToolCall>,
    /// The user namespace after the turn, in definition order.
    pub memory: Vec<Definition>,
}

impl TurnDraft {
    /// A draft for a program that returned `value`; the raw response is the program.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::coalesce::{TurnDraft, Value};
    ///
    /// let draft = TurnDraft::returned("(+ 1 2)", Value::from(3));
    /// assert_eq!(draft.raw_response, "(+ 1 2)");
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn returned(program: impl Into<String>, value: Value) -> Self {
        let program = program.into();
        Self {
            raw_response: program.clone(),
            program,
            result: Some(TurnResult::Returned(value)),
            ..Self::default()
        }
    }

    /// A draft for a program that failed with `error`; the raw response is the program.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::coalesce::TurnDraft;
    ///
    /// let draft = TurnDraft::failed("(def x (broken-code))", "undefined symbol 'broken-code'");
    /// assert!(draft.result.is_some());
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn failed(program: impl Into<String>, error: impl Into<String>) -> Self {
        let program = program.into();
        Self {
            raw_response: program.clone(),
            program,
            result: Some(TurnResult::Failed(error.into())),
            ..Self::default()
        }
    }
}

/// One interaction cycle: the model's reply, the program it ran and what happened.
///
/// Immutable once recorded; read it through the getters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Turn {
    number: u32,
    raw_response: String,
    program: String,
    result: TurnResult,
    prints: Vec<String>,
    tool_calls: Vec<RecordedToolCall>,
    memory: Vec<Definition>,
    /// Whether the executor said the run is finished after this turn. Saved only when true,
    /// so that the turns of a run that goes on read as they always did.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    ends_run: bool,
}

impl Turn {
    /// The turn's number, from 1, given by its place in [`Turns`].
    pub fn number(&self) -> u32 {
        self.number
    }

    /// The model's whole reply, reasoning included.
    pub fn raw_response(&self) -> &str {
        &self.raw_response
    }

    /// The program extracted from the reply.
    pub fn program(&self) -> &str {
        &self.program
    }

    /// How the program ended.
    pub fn result(&self) -> &TurnResult {
        &self.result
    }

    /// Whether the program ran to the end.
    pub fn success(&self) -> bool {
        matches!(self.result, TurnResult::Returned(_))
    }

    /// The error message, for a failed turn.
    pub fn error(&self) -> Option<&str> {
        match &self.result {
            TurnResult::Failed(error) => Some(error),
            TurnResult::Returned(_) => None,
        }
    }

    /// One entry per `println` call.
    pub fn prints(&self) -> &[String] {
        &self.prints
    }

    /// The tool calls, in order.
    pub fn tool_calls(&self) -> &[RecordedToolCall] {
        &self.tool_calls
    }

    /// The user namespace after this turn, in definition order.
    pub fn memory(&self) -> &[Definition] {
        &self.memory
    }

    /// Whether the executor said the run is finished after this turn
    /// ([`Executed::Finished`](crate::Executed::Finished)); `false` for turns pushed on
    /// [`Turns`] directly.
    pub fn ends_run(&self) -> bool {
        self.ends_run
    }
}

/// The append-only list of a run's turns: the full history, whatever the model is shown.
///
/// # Examples
///
/// ```
/// use curator::coalesce::{TurnDraft, Turns, Value};
///
/// let mut turns = Turns::new();
/// turns.push(TurnDraft::failed("(broken)", "undefined symbol 'broken'"));
/// turns.push(TurnDraft::returned("(+ 1 2)", Value::from(3)));
/// assert_eq!(turns.len(), 2);
/// assert_eq!(turns.last().map(|turn| turn.number()), Some(2));
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
#[serde(transparent)]
pub struct Turns {
    turns: Vec<Turn>,
}

// By hand, so that turns read back keep the rule `push` keeps: a turn's number is its
// position, from 1.
impl<'de> Deserialize<'de> for Turns {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let turns = Vec::<Turn>::deserialize(deserializer)?;
        for (index, turn) in turns.iter().enumerate() {
            let position = u32::try_from(index).map_or(u32::MAX, |i| i.saturating_add(1));
            if turn.number != position {
                return Err(serde::de::Error::custom(format_args!(
                    "turn {position} is numbered {}; turns are numbered by their position, from 1",
                    turn.number
                )));
            }
        }
        Ok(Self { turns })
    }
}

impl Turns {
    /// An empty run.
    pub const fn new() -> Self {
        Self { turns: Vec::new() }
    }

    /// Record a turn; it is numbered after the turns before it.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::coalesce::{TurnDraft, Turns, Value};
    ///
    /// let mut turns = Turns::new();
    /// assert_eq!(turns.push(TurnDraft::returned("1", Value::from(1))).number(), 1);
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn push(&mut self, draft: TurnDraft) -> &Turn {
        let number =
            u32::try_from(self.turns.len()).map_or(u32::MAX, |count| count.saturating_add(1));
        let index = self.turns.len();
        self.turns.push(Turn {
            number,
            raw_response: draft.raw_response,
            program: draft.program,
            result: draft.result.unwrap_or(TurnResult::Returned(Value::Nil)),
            prints: draft.prints,
            tool_calls: draft.tool_calls,
            memory: draft.memory,
            ends_run: false,
        });
        &self.turns[index]
    }

    /// Marks the most recent turn as the one after which the run is finished.
    pub(crate) fn end_run(&mut self) {
        if let Some(last) = self.turns.last_mut() {
            last.ends_run = true;
        }
    }

    /// The latest turn after which the executor said the run is finished.
    pub(crate) fn finished(&self) -> Option<&Turn> {
        self.turns.iter().rev().find(|turn| turn.ends_run)
    }

    /// The number of turns taken.
    pub fn len(&self) -> usize {
        self.turns.len()
    }

    /// Whether no turn was taken yet.
    pub fn is_empty(&self) -> bool {
        self.turns.is_empty()
    }

    /// The most recent turn.
    pub fn last(&self) -> Option<&Turn> {
        self.turns.last()
    }

    /// The turns, oldest first.
    pub fn as_slice(&self) -> &[Turn] {
        &self.turns
    }

    /// The turns, oldest first.
    pub fn iter(&self) -> std::slice::Iter<'_, Turn> {
        self.turns.iter()
    }
}

impl<'a> IntoIterator for &'a Turns {
    type Item = &'a Turn;
    type IntoIter = std::slice::Iter<'a, Turn>;

    fn into_iter(self) -> Self::IntoIter {
        self.turns.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_come_from_position_and_survive_serde() {
        let mut turns = Turns::new();
        turns.push(TurnDraft::failed("(x)", "undefined symbol 'x'"));
        turns.push(TurnDraft {
            program: "(println 1)".to_owned(),
            prints: vec!["1".to_owned()],
            ..TurnDraft::default()
        });
        let numbers: Vec<u32> = turns.iter().map(Turn::number).collect();
        assert_eq!(numbers, [1, 2]);
        assert_eq!(turns.as_slice()[0].error(), Some("undefined symbol 'x'"));
        assert!(turns.as_slice()[1].success());
        assert_eq!(turns.as_slice()[1].result(), &TurnResult::Returned(Value::Nil));

        let json = serde_json::to_string(&turns).unwrap();
        assert_eq!(serde_json::from_str::<Turns>(&json).unwrap(), turns);
    }

    #[test]
    fn the_run_s_end_is_saved_on_its_turn_and_only_there() {
        let mut turns = Turns::new();
        turns.push(TurnDraft::returned("(+ 1 2)", Value::from(3)));
        let going_on = serde_json::to_value(&turns).unwrap();
        assert!(going_on[0].get("ends_run").is_none(), "a run going on saves what it always did");
        assert_eq!(turns.finished(), None);

        turns.end_run();
        let finished = serde_json::to_value(&turns).unwrap();
        assert_eq!(finished[0]["ends_run"], serde_json::Value::Bool(true));
        let read = serde_json::from_value::<Turns>(finished).unwrap();
        assert_eq!(read.finished().map(Turn::number), Some(1));
        assert!(read.as_slice()[0].ends_run());
        assert!(!serde_json::from_value::<Turns>(going_on).unwrap().as_slice()[0].ends_run());
    }
}
