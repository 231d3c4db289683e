//! Versioned JSON snapshots of a whole store, and the rules a restore checks.

use std::collections::{BTreeMap, HashMap, HashSet};

use curator_model::pairing::{Link, Pairer};
use curator_model::{
    Entry, EvaluationId, ImageSource, Message, Part, PromptRef, ProviderFields, Role, ToolCall,
};
use serde_json::Value;

use crate::snapshot_json::{SNAPSHOT_FORMAT, SNAPSHOT_VERSION};
use crate::{Checkpoint, Error, Result, SessionKey, SnapshotErrorKind};

/// Everything a store holds: every entry of every evaluation, the session key of each
/// evaluation, and every checkpoint, in a versioned JSON format shared by all stores, so a
/// snapshot moves between them.
///
/// Entries are ordered by evaluation (first message first) and sequence. Version 1 documents
/// (written before session keys) read with every evaluation under
/// [`SessionKey::DEFAULT`].
///
/// # Examples
///
/// ```
/// use curator::model::{Entry, EvaluationId, Message};
/// use curator::session::{MemoryStore, SessionKey, SessionStore, Snapshot};
///
/// let store = MemoryStore::new();
/// store.append(&SessionKey::new("job-1"), &Entry::builder(EvaluationId::new(), Message::system("s")).build()?)?;
/// let json = store.snapshot()?.to_json()?;
///
/// let copy = MemoryStore::new();
/// copy.restore(&Snapshot::from_json(&json)?)?;
/// assert_eq!(copy.snapshot()?, store.snapshot()?);
/// assert!(Snapshot::from_json(r#"{"format": "curator.session.snapshot", "version": 99}"#).is_err());
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Snapshot {
    format: String,
    version: u32,
    /// The recorded entries.
    pub entries: Vec<Entry>,
    /// The session key of each evaluation; an evaluation missing here belongs to
    /// [`SessionKey::DEFAULT`].
    #[serde(default)]
    pub sessions: BTreeMap<EvaluationId, SessionKey>,
    /// The checkpoints, latest version of each.
    pub checkpoints: Vec<Checkpoint>,
}

#[derive(serde::Deserialize)]
struct Header {
    format: Option<String>,
    version: Option<u32>,
}

impl Snapshot {
    /// A snapshot of these entries (all under [`SessionKey::DEFAULT`]) and checkpoints.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::session::Snapshot;
    ///
    /// let empty = Snapshot::new(Vec::new(), Vec::new());
    /// assert!(empty.validate().is_ok());
    /// ```
    pub fn new(entries: Vec<Entry>, checkpoints: Vec<Checkpoint>) -> Self {
        Self {
            format: SNAPSHOT_FORMAT.to_owned(),
            version: SNAPSHOT_VERSION,
            entries,
            sessions: BTreeMap::new(),
            checkpoints,
        }
    }

    /// Sets the session key of each evaluation listed.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::model::EvaluationId;
    /// use curator::session::{SessionKey, Snapshot};
    ///
    /// let evaluation = EvaluationId::new();
    /// let snapshot = Snapshot::new(Vec::new(), Vec::new()).with_sessions([(evaluation, SessionKey::new("job-1"))]);
    /// assert_eq!(snapshot.key_of(evaluation).as_str(), "job-1");
    /// ```
    #[must_use]
    pub fn with_sessions(
        mut self,
        sessions: impl IntoIterator<Item = (EvaluationId, SessionKey)>,
    ) -> Self {
        self.sessions.extend(sessions);
        self
    }

    /// The session key of an evaluation ([`SessionKey::DEFAULT`] when none is listed).
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::model::EvaluationId;
    /// use curator::session::Snapshot;
    ///
    /// assert!(Snapshot::new(Vec::new(), Vec::new()).key_of(EvaluationId::new()).is_default());
    /// ```
    pub fn key_of(&self, evaluation: EvaluationId) -> SessionKey {
        self.sessions.get(&evaluation).cloned().unwrap_or_default()
    }

    /// The snapshot as JSON text (always the current version).
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::session::Snapshot;
    ///
    /// let json = Snapshot::new(Vec::new(), Vec::new()).to_json()?;
    /// assert!(json.starts_with(r#"{"format":"curator.session.snapshot","version":2"#));
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::Store`] if serialisation fails (it does not for snapshots built by stores).
    pub fn to_json(&self) -> Result<String> {
        let estimate = self.entries.iter().map(|e| 256 + e.message.text().len() * 9 / 8).sum();
        crate::snapshot_json::write(
            self.entries.iter(),
            &self.sessions,
            &self.checkpoints,
            estimate,
        )
    }

    /// Reads a snapshot, checking its format, version and content (see
    /// [`validate`](Snapshot::validate)).
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::session::{Error, Snapshot, SnapshotErrorKind};
    ///
    /// // Not JSON: a trailing comma.
    /// let text = r#"{"format": "curator.session.snapshot", "version": 2, "entries": [], "checkpoints": [],}"#;
    /// assert!(matches!(Snapshot::from_json(text), Err(Error::SnapshotRestore { kind: SnapshotErrorKind::Malformed, .. })));
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::SnapshotRestore`] saying why, with its [`SnapshotErrorKind`]: not JSON, not a
    /// curator snapshot, a version this build does not know, or content that breaks a rule.
    pub fn from_json(json: &str) -> Result<Self> {
        let snapshot = Self::from_json_unchecked(json)?;
        snapshot.validate()?;
        Ok(snapshot)
    }

    /// Reads a snapshot, checking its format and version but not its content, for a store
    /// that checks the content while loading. Version 1 documents are brought to the
    /// current version (their evaluations under the default key).
    pub(crate) fn from_json_unchecked(json: &str) -> Result<Self> {
        let fast = crate::snapshot_json::read(json).map(|parts| Snapshot {
            format: SNAPSHOT_FORMAT.to_owned(),
            version: parts.version,
            entries: parts.entries,
            sessions: parts.sessions,
            checkpoints: parts.checkpoints,
        });
        let mut snapshot: Snapshot = match fast.map_or_else(|| serde_json::from_str(json), Ok) {
            Ok(snapshot) => snapshot,
            Err(e) => {
                // Say the most useful thing: a foreign document or an unknown version before
                // a shape error deep inside.
                let header = serde_json::from_str::<Header>(json).ok();
                return Err(match header {
                    Some(Header { format: Some(f), .. }) if f != SNAPSHOT_FORMAT => {
                        malformed(format!("format is `{f}`, not `{SNAPSHOT_FORMAT}`"))
                    }
                    Some(Header { version: Some(v), .. }) if v > SNAPSHOT_VERSION || v == 0 => {
                        unknown_version(v)
                    }
                    // Name the part that does not read and what is wrong there (a field
                    // this build does not know, say), rather than a line and column.
                    _ => Error::SnapshotRestore {
                        kind: SnapshotErrorKind::Malformed,
                        reason: locate(json).unwrap_or_else(|| "not a valid snapshot".into()),
                        source: Some(Box::new(e)),
                    },
                });
            }
        };
        if snapshot.format != SNAPSHOT_FORMAT {
            return Err(malformed(format!(
                "format is `{}`, not `{SNAPSHOT_FORMAT}`",
                snapshot.format
            )));
        }
        match snapshot.version {
            1 if snapshot.sessions.is_empty() => snapshot.version = SNAPSHOT_VERSION,
            1 => return Err(malformed("a version 1 snapshot has no session keys".into())),
            SNAPSHOT_VERSION => {}
            v => return Err(unknown_version(v)),
        }
        Ok(snapshot)
    }

    /// The format version.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::session::{SNAPSHOT_VERSION, Snapshot};
    ///
    /// assert_eq!(Snapshot::new(Vec::new(), Vec::new()).version(), SNAPSHOT_VERSION);
    /// ```
    pub fn version(&self) -> u32 {
        self.version
    }

    /// Checks that the snapshot holds a record the driver could have written, so that every
    /// store restores exactly the same snapshots:
    ///
    /// - no two entries share a message id or an `(evaluation, sequence)`, no two
    ///   checkpoints a name, and every listed session key names an evaluation that has entries;
    /// - each evaluation's sequences run from 0 without a gap, and sequence 0 is a system
    ///   message at turn 0, the only system message;
    /// - turns: each assistant reply starts the next turn, every other message keeps the
    ///   current one;
    /// - every tool result answers a call under [`curator_model::pairing`], and no reply
    ///   makes two calls with one id;
    /// - one prompt per evaluation;
    /// - every time fits the range persistent stores hold (the years 1677 to 2262).
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::model::{Entry, EvaluationId, Message};
    /// use curator::session::{Error, Snapshot, SnapshotErrorKind};
    ///
    /// // An assistant reply at sequence 0, where the system message belongs.
    /// let entry = Entry::builder(EvaluationId::new(), Message::assistant("hi")).turn(1).build()?;
    /// let error = Snapshot::new(vec![entry], Vec::new()).validate().unwrap_err();
    /// assert!(matches!(error, Error::SnapshotRestore { kind: SnapshotErrorKind::InvariantBroken, .. }));
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::SnapshotRestore`] naming the first broken rule: kind
    /// [`NewerVersion`](SnapshotErrorKind::NewerVersion) for a version this build does not
    /// know, else [`InvariantBroken`](SnapshotErrorKind::InvariantBroken).
    pub fn validate(&self) -> Result<()> {
        if self.version != SNAPSHOT_VERSION && self.version != 1 {
            return Err(unknown_version(self.version));
        }
        if self.version == 1 && !self.sessions.is_empty() {
            return Err(malformed("a version 1 snapshot has no session keys".into()));
        }
        let mut ids = HashSet::with_capacity(self.entries.len());
        let mut evaluations: HashMap<EvaluationId, Vec<usize>> = HashMap::new();
        for (i, entry) in self.entries.iter().enumerate() {
            if !ids.insert(entry.id) {
                return Err(broken(format!("entry {i}: message id {} appears twice", entry.id)));
            }
            if entry.created_at.timestamp_nanos_opt().is_none() {
                return Err(broken(format!(
                    "entry {i}: time {} is outside the years 1677 to 2262",
                    entry.created_at
                )));
            }
            evaluations.entry(entry.evaluation_id).or_default().push(i);
        }
        for evaluation in self.sessions.keys() {
            if !evaluations.contains_key(evaluation) {
                return Err(broken(format!(
                    "a session key is given for evaluation {evaluation}, which has no entries"
                )));
            }
        }
        for indices in evaluations.values_mut() {
            indices.sort_by_key(|&i| self.entries[i].sequence);
            check_evaluation(&self.entries, indices)?;
        }
        let mut names = HashSet::new();
        for checkpoint in &self.checkpoints {
            if !names.insert(checkpoint.name.as_str()) {
                return Err(broken(format!("checkpoint `{}` appears twice", checkpoint.name)));
            }
            if checkpoint.saved_at.timestamp_nanos_opt().is_none() {
                return Err(broken(format!(
                    "checkpoint `{}`: time {} is outside the years 1677 to 2262",
                    checkpoint.name, checkpoint.saved_at
                )));
            }
        }
        Ok(())
    }
}

/// Checks one evaluation's entries, given as indices ordered by sequence.
fn check_evaluation(entries: &[Entry], order: &[usize]) -> Result<()> {
    let mut pairer = Pairer::new();
    let mut turn = 0u32;
    for (position, &i) in order.iter().enumerate() {
        let entry = &entries[i];
        let at = |what: &str| {
            broken(format!(
                "entry {i}: evaluation {} at sequence {}: {what}",
                entry.evaluation_id, entry.sequence
            ))
        };
        if entry.sequence != position as u64 {
            return Err(if entry.sequence < position as u64 {
                at("two entries at this sequence")
            } else {
                at(&format!("sequence {position} is missing"))
            });
        }
        let role = entry.message.role();
        if position == 0 {
            if role != Role::System || entry.turn != 0 {
                return Err(at("the first entry must be the system message, at turn 0"));
            }
        } else {
            if role == Role::System {
                return Err(at("a system message after the first entry"));
            }
            let expected = if role == Role::Assistant { turn.saturating_add(1) } else { turn };
            if entry.turn != expected {
                return Err(at(&format!("turn {} where {expected} follows", entry.turn)));
            }
            if entries[order[0]].prompt != entry.prompt {
                return Err(at("a prompt other than the evaluation's"));
            }
        }
        turn = entry.turn;
        let step =
            pairer.step(position, &entry.message, |p| -> &Message { &entries[order[p]].message });
        match step.link {
            Link::Orphan => return Err(at("a tool result that answers no call")),
            Link::Opens { duplicate: Some(_), .. } => {
                return Err(at("a reply that makes two calls with one id"));
            }
            _ => {}
        }
    }
    Ok(())
}

/// Why `value` does not read as a `T`, if it does not.
fn refusal<T: serde::de::DeserializeOwned>(value: &Value) -> Option<serde_json::Error> {
    T::deserialize(value).err()
}

/// The value under `key` of `value`, unless it is missing or `null` (which optional fields
/// read as absent).
fn field<'v>(value: &'v Value, key: &str) -> Option<&'v Value> {
    value.get(key).filter(|v| !v.is_null())
}

/// The elements of the array under `key` of `value` (none when it is not an array).
fn elements<'v>(value: &'v Value, key: &str) -> &'v [Value] {
    value.get(key).and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

/// Where a snapshot document that is JSON but not a snapshot goes wrong: the deepest part
/// of the first entry or checkpoint that does not read (`entries[3].message.tool_calls[0]`),
/// with serde's words for what is wrong there (``unknown field `nmae`, expected one of
/// ...``), or the document itself. `None` when the text is not JSON.
fn locate(json: &str) -> Option<String> {
    let document: Value = serde_json::from_str(json).ok()?;
    for (i, entry) in elements(&document, "entries").iter().enumerate() {
        if let Some(error) = refusal::<Entry>(entry) {
            return Some(in_entry(entry, &format!("entries[{i}]"), &error));
        }
    }
    if let Some(sessions) = field(&document, "sessions")
        && let Some(error) = refusal::<BTreeMap<EvaluationId, SessionKey>>(sessions)
    {
        return Some(format!("sessions: {error}"));
    }
    for (i, checkpoint) in elements(&document, "checkpoints").iter().enumerate() {
        if let Some(error) = refusal::<Checkpoint>(checkpoint) {
            return Some(format!("checkpoints[{i}]: {error}"));
        }
    }
    refusal::<Snapshot>(&document).map(|error| format!("the document: {error}"))
}

/// The deepest part of `entry` (at `path`, refused with `error`) that does not read.
fn in_entry(entry: &Value, path: &str, error: &serde_json::Error) -> String {
    if let Some(prompt) = field(entry, "prompt")
        && let Some(error) = refusal::<PromptRef>(prompt)
    {
        return format!("{path}.prompt: {error}");
    }
    if let Some(message) = field(entry, "message")
        && let Some(error) = refusal::<Message>(message)
    {
        let path = format!("{path}.message");
        for (i, call) in elements(message, "tool_calls").iter().enumerate() {
            if let Some(error) = refusal::<ToolCall>(call) {
                return within(call, &format!("{path}.tool_calls[{i}]"), &error);
            }
        }
        for (i, part) in elements(message, "content").iter().enumerate() {
            if let Some(error) = refusal::<Part>(part) {
                return within(part, &format!("{path}.content[{i}]"), &error);
            }
        }
        return within(message, &path, &error);
    }
    format!("{path}: {error}")
}

/// `path: error`, or the provider fields (`extra`) or image source (`source`) inside the
/// value at `path` when they are what does not read.
fn within(value: &Value, path: &str, error: &serde_json::Error) -> String {
    if let Some(extra) = field(value, "extra")
        && let Some(error) = refusal::<ProviderFields>(extra)
    {
        return format!("{path}.extra: {error}");
    }
    if let Some(source) = field(value, "source")
        && let Some(error) = refusal::<ImageSource>(source)
    {
        return format!("{path}.source: {error}");
    }
    format!("{path}: {error}")
}

fn malformed(reason: String) -> Error {
    Error::SnapshotRestore { kind: SnapshotErrorKind::Malformed, reason, source: None }
}

pub(crate) fn broken(reason: String) -> Error {
    Error::SnapshotRestore { kind: SnapshotErrorKind::InvariantBroken, reason, source: None }
}

fn unknown_version(version: u32) -> Error {
    Error::SnapshotRestore {
        kind: SnapshotErrorKind::NewerVersion,
        reason: format!(
            "snapshot version {version} is not supported (this build reads versions 1 to {SNAPSHOT_VERSION})"
        ),
        source: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot_json::read;
    use curator_model::{PromptRef, ToolCall};
    use proptest::prelude::*;

    /// A snapshot text as stores write it: two keys, tool calls, a checkpoint.
    fn sample() -> String {
        let mut entries = Vec::new();
        let mut sessions = BTreeMap::new();
        for key in ["alice", "default"] {
            let evaluation = EvaluationId::new();
            if key != SessionKey::DEFAULT {
                sessions.insert(evaluation, SessionKey::new(key));
            }
            let messages = [
                (Message::system("s"), 0),
                (Message::user("do it, \"quoted\"\n"), 0),
                (
                    Message::assistant_with_calls(
                        None,
                        vec![ToolCall::new("c1", "f", "{\"a\": [1, 2]}")],
                    ),
                    1,
                ),
                (Message::tool_result("c1", "r").with_name("f"), 1),
            ];
            for (i, (message, turn)) in messages.into_iter().enumerate() {
                entries.push(
                    Entry::builder(evaluation, message)
                        .sequence(i as u64)
                        .turn(turn)
                        .prompt(PromptRef::new("p", "q"))
                        .build()
                        .unwrap(),
                );
            }
        }
        let checkpoint = Checkpoint::new(
            "loop".into(),
            serde_json::json!({"i": [1, {"j": null}]}),
            chrono::Utc::now(),
        );
        let snapshot = Snapshot::new(entries, vec![checkpoint]).with_sessions(sessions);
        snapshot.validate().unwrap();
        snapshot.to_json().unwrap()
    }

    /// The fast reader accepts a text only when serde accepts it, and then reads the same.
    #[track_caller]
    fn agrees_with_serde(text: &str) -> std::result::Result<(), TestCaseError> {
        if let Some(parts) = read(text) {
            let fast = Snapshot {
                format: SNAPSHOT_FORMAT.to_owned(),
                version: parts.version,
                entries: parts.entries,
                sessions: parts.sessions,
                checkpoints: parts.checkpoints,
            };
            let serde: std::result::Result<Snapshot, _> = serde_json::from_str(text);
            prop_assert!(serde.is_ok(), "the fast reader accepted what serde refuses: {text}");
            prop_assert_eq!(Some(fast), serde.ok());
        }
        Ok(())
    }

    #[test]
    fn the_fast_reader_reads_what_the_writer_writes() {
        let text = sample();
        assert!(read(&text).is_some());
        agrees_with_serde(&text).unwrap();
    }

    /// A message written apart from the one before it (Anthropic's two same-role messages)
    /// keeps its mark through a snapshot; the writer once dropped it.
    #[test]
    fn a_message_that_starts_a_turn_keeps_its_mark() {
        let evaluation = EvaluationId::new();
        let entries = [Message::system("s"), Message::user("task"), Message::user("again")]
            .into_iter()
            .enumerate()
            .map(|(i, message)| {
                Entry::builder(evaluation, message.with_starts_turn(i == 2))
                    .sequence(i as u64)
                    .build()
                    .unwrap()
            })
            .collect::<Vec<_>>();
        let text = Snapshot::new(entries.clone(), Vec::new()).to_json().unwrap();
        assert_eq!(Snapshot::from_json(&text).unwrap().entries, entries);
    }

    #[test]
    fn commas_out_of_place_are_refused_as_serde_refuses_them() {
        let text = sample();
        for broken in [
            text.replacen("},\n{", "}\n{", 1), // a missing comma between entries
            text.replacen("\n],", ",\n],", 1), // a trailing comma after the last entry
            text.replacen("},\n{", "},,\n{", 1), // two commas
            text.replacen("},\n{", "},\n,{", 1), // a comma starting a line
            text.replacen("\n],", "\n,],", 1), // an empty element
        ] {
            assert!(read(&broken).is_none(), "{broken}");
            assert!(serde_json::from_str::<Snapshot>(&broken).is_err(), "{broken}");
            assert!(matches!(
                Snapshot::from_json(&broken),
                Err(Error::SnapshotRestore { kind: SnapshotErrorKind::Malformed, .. })
            ));
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2_000))]

        /// Mutated snapshot texts (a character removed, inserted or replaced, a slice
        /// repeated), biased towards the places the fast reader splits on: it never
        /// accepts one that serde refuses.
        #[test]
        fn mutated_texts_are_accepted_only_when_serde_accepts_them(
            op in 0u8..4,
            at in any::<prop::sample::Index>(),
            len in 0usize..40,
            near_structure in any::<bool>(),
            c in prop::sample::select(vec![',', '\n', ']', '[', '}', '{', '"', ':', ' ', '0', 'x', '\\']),
        ) {
            let text = sample();
            let boundaries: Vec<usize> =
                text.char_indices().filter(|(_, c)| matches!(c, ',' | '\n' | ']' | '}')).map(|(i, _)| i).collect();
            let chars: Vec<usize> = text.char_indices().map(|(i, _)| i).collect();
            let i = if near_structure { boundaries[at.index(boundaries.len())] } else { chars[at.index(chars.len())] };
            let next = text[i..].chars().next().map_or(i, |ch| i + ch.len_utf8());
            let mutated = match op {
                0 => format!("{}{}", &text[..i], &text[next..]),
                1 => format!("{}{c}{}", &text[..i], &text[i..]),
                2 => format!("{}{c}{}", &text[..i], &text[next..]),
                _ => {
                    let end = chars.iter().copied().find(|&j| j >= i + len).unwrap_or(text.len());
                    format!("{}{}", &text[..end], &text[i..])
                }
            };
            agrees_with_serde(&mutated)?;
        }
    }
}
