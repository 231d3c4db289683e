//! Recorded entries: a message with its place in an evaluation.

use chrono::{DateTime, Utc};

use crate::{Error, EvaluationId, Message, MessageId, Result, Role};

/// The identity of the prompt an evaluation runs: a namespace and a key.
///
/// Resuming a conversation checks it, so a record is never continued by a different prompt.
///
/// # Examples
///
/// ```
/// use curator::model::PromptRef;
///
/// let prompt = PromptRef::new("support", "triage");
/// assert_eq!(prompt.to_string(), "support/triage");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PromptRef {
    /// The namespace, e.g. an application or team.
    pub ns: String,
    /// The prompt's key inside the namespace.
    pub key: String,
}

impl PromptRef {
    /// A prompt identity.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::model::PromptRef;
    /// let prompt = PromptRef::new("support", "triage");
    /// assert_eq!((prompt.ns.as_str(), prompt.key.as_str()), ("support", "triage"));
    /// ```
    pub fn new(ns: impl Into<String>, key: impl Into<String>) -> Self {
        Self { ns: ns.into(), key: key.into() }
    }
}

impl std::fmt::Display for PromptRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.ns, self.key)
    }
}

/// One recorded message: what was said, in which evaluation, at which position and turn.
///
/// `sequence` starts at 0 (the system message) and is strictly increasing within an
/// evaluation; `turn` is the provider round-trip the message belongs to: 0 for what comes
/// before the first assistant reply, then +1 at each assistant reply (its tool results share
/// its turn). Build entries with [`Entry::builder`].
///
/// # Examples
///
/// ```
/// use curator::model::{Entry, EvaluationId, Message, PromptRef};
///
/// let evaluation = EvaluationId::new();
/// let entry = Entry::builder(evaluation, Message::system("You are terse."))
///     .prompt(PromptRef::new("demo", "terse"))
///     .build()?;
/// assert_eq!(entry.sequence, 0);
/// assert_eq!(entry.turn, 0);
///
/// let json = serde_json::to_string(&entry)?;
/// assert_eq!(serde_json::from_str::<Entry>(&json)?, entry);
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    /// This entry's own identity.
    pub id: MessageId,
    /// The evaluation the entry belongs to.
    pub evaluation_id: EvaluationId,
    /// Position within the evaluation, from 0.
    pub sequence: u64,
    /// Provider round-trip number, from 0.
    pub turn: u32,
    /// The prompt that produced the evaluation, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<PromptRef>,
    /// When the message was recorded.
    #[serde(deserialize_with = "rfc3339::deserialize")]
    pub created_at: DateTime<Utc>,
    /// The message itself.
    pub message: Message,
}

impl Entry {
    /// Starts building an entry for `message` in `evaluation_id`; by default it gets a fresh
    /// id, sequence 0, turn 0, no prompt and the current time.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::model::{Entry, EvaluationId, Message};
    /// let entry = Entry::builder(EvaluationId::new(), Message::user("hi")).sequence(1).build()?;
    /// assert_eq!(entry.sequence, 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn builder(evaluation_id: EvaluationId, message: Message) -> EntryBuilder {
        EntryBuilder {
            id: None,
            evaluation_id,
            sequence: 0,
            turn: 0,
            prompt: None,
            created_at: None,
            message,
        }
    }
}

/// Builds an [`Entry`]; see [`Entry::builder`].
///
/// # Examples
///
/// ```
/// use curator::model::{Entry, EvaluationId, Message, MessageId};
///
/// let id = MessageId::new();
/// let entry = Entry::builder(EvaluationId::new(), Message::tool_result("c1", "ok")).id(id).sequence(2).turn(1).build()?;
/// assert_eq!((entry.id, entry.sequence, entry.turn), (id, 2, 1));
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
#[must_use]
pub struct EntryBuilder {
    id: Option<MessageId>,
    evaluation_id: EvaluationId,
    sequence: u64,
    turn: u32,
    prompt: Option<PromptRef>,
    created_at: Option<DateTime<Utc>>,
    message: Message,
}

impl EntryBuilder {
    /// Uses a given id instead of a fresh one (to record the same message idempotently).
    pub fn id(mut self, id: MessageId) -> Self {
        self.id = Some(id);
        self
    }

    /// Sets the position within the evaluation.
    pub fn sequence(mut self, sequence: u64) -> Self {
        self.sequence = sequence;
        self
    }

    /// Sets the provider round-trip number.
    pub fn turn(mut self, turn: u32) -> Self {
        self.turn = turn;
        self
    }

    /// Sets the prompt identity.
    pub fn prompt(mut self, prompt: PromptRef) -> Self {
        self.prompt = Some(prompt);
        self
    }

    /// Sets the time of recording instead of now.
    pub fn created_at(mut self, created_at: DateTime<Utc>) -> Self {
        self.created_at = Some(created_at);
        self
    }

    /// Builds the entry.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidEntry`] when an assistant or tool message is given turn 0 (every
    /// assistant reply starts a turn of at least 1, and tool results share it).
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::model::{Entry, EvaluationId, Message};
    ///
    /// let bad = Entry::builder(EvaluationId::new(), Message::assistant("hi")).sequence(1).build();
    /// assert!(bad.is_err());
    /// let good = Entry::builder(EvaluationId::new(), Message::assistant("hi")).sequence(1).turn(1).build()?;
    /// assert_eq!(good.turn, 1);
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn build(self) -> Result<Entry> {
        let role = self.message.role();
        if matches!(role, Role::Assistant | Role::Tool) && self.turn == 0 {
            return Err(Error::InvalidEntry {
                reason: format!(
                    "a {role} message at sequence {} must have turn >= 1",
                    self.sequence
                ),
            });
        }
        Ok(Entry {
            id: self.id.unwrap_or_default(),
            evaluation_id: self.evaluation_id,
            sequence: self.sequence,
            turn: self.turn,
            prompt: self.prompt,
            created_at: self.created_at.unwrap_or_else(Utc::now),
            message: self.message,
        })
    }
}

/// Reading the RFC 3339 times entries are written with, quickly: restoring a large snapshot
/// reads one per message, and chrono's general parser was a visible share of that time.
mod rfc3339 {
    use chrono::{DateTime, NaiveDate, Utc};
    use serde::{Deserialize, Deserializer};

    /// `YYYY-MM-DDTHH:MM:SS[.fraction]Z`, the form chrono writes for UTC times; `None` for
    /// anything else, which the general parser then reads.
    pub(super) fn parse_utc(s: &str) -> Option<DateTime<Utc>> {
        let b = s.as_bytes();
        if b.len() < 20
            || b[4] != b'-'
            || b[7] != b'-'
            || b[10] != b'T'
            || b[13] != b':'
            || b[16] != b':'
        {
            return None;
        }
        let num = |range: std::ops::Range<usize>| -> Option<u32> {
            let digits = b.get(range)?;
            digits
                .iter()
                .try_fold(0u32, |n, d| d.is_ascii_digit().then(|| n * 10 + u32::from(d - b'0')))
        };
        let (rest, nanos) = match b.get(19)? {
            b'Z' if b.len() == 20 => (20, 0),
            b'.' => {
                let end = b.len().checked_sub(1)?;
                if b[end] != b'Z' || end - 20 > 9 || end == 20 {
                    return None;
                }
                let fraction = num(20..end)?;
                (b.len(), fraction * 10u32.pow(u32::try_from(9 - (end - 20)).ok()?))
            }
            _ => return None,
        };
        debug_assert_eq!(rest, b.len());
        let date =
            NaiveDate::from_ymd_opt(i32::try_from(num(0..4)?).ok()?, num(5..7)?, num(8..10)?)?;
        let time = date.and_hms_nano_opt(num(11..13)?, num(14..16)?, num(17..19)?, nanos)?;
        Some(time.and_utc())
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<DateTime<Utc>, D::Error> {
        let text = std::borrow::Cow::<str>::deserialize(deserializer)?;
        match parse_utc(&text) {
            Some(time) => Ok(time),
            None => text.parse::<DateTime<Utc>>().map_err(serde::de::Error::custom),
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn agrees_with_chrono() {
            for text in [
                "2026-11-22T00:00:00Z",
                "2026-11-22T01:02:03.5Z",
                "2026-11-22T01:02:03.123456789Z",
                "1999-12-31T23:59:59.000001Z",
            ] {
                assert_eq!(parse_utc(text), Some(text.parse::<DateTime<Utc>>().unwrap()), "{text}");
            }
            for other in [
                "2026-11-22T00:00:00+02:00",
                "2026-11-22 00:00:00Z",
                "2026-13-01T00:00:00Z",
                "x",
                "2026-11-22T00:00:00.Z",
            ] {
                assert_eq!(parse_utc(other), None, "{other}");
            }
            let now = Utc::now();
            let written = serde_json::to_string(&now).unwrap();
            assert_eq!(parse_utc(written.trim_matches('"')), Some(now));
        }
    }
}
