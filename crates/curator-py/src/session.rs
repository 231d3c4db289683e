//! Sessions: a conversation's items recorded in a session store (SQLite or PostgreSQL) and
//! held in Rust as a curation [`History`], for the OpenAI Agents SDK and LangChain.
//!
//! # The record
//!
//! Each item (a Responses API item, or an OpenAI chat message for LangChain) is one
//! [`Entry`] of an evaluation of the session's key, its message read from the item alone, so
//! that writing the entry back gives the item back (checked when it is added). Items are
//! never rewritten or deleted by the session:
//!
//! - `pop_item` records what it removed in the session's *head*, a checkpoint named
//!   `curator.items/<format>/<key>` holding `{"generation", "evaluation", "removed"}`: the
//!   sequences of the entries popped. The popped entry stays in the record, and the head's
//!   versions say when it was popped.
//! - `clear` starts the next *generation*: a new evaluation of the key, named in the head; the
//!   earlier ones stay in the record (retention, `curator prune`, deletes them).
//!
//! Evaluation ids are derived from the key, the format and the generation (UUID v5), so that
//! two processes opening a new session append to one evaluation, and the store's
//! `(evaluation, sequence)` rule orders their appends.
//!
//! # The history in Rust
//!
//! The session holds the live items as a [`History`] of messages, a Responses `function_call`
//! joined to the assistant-side item before it as the Responses reader joins them (so a
//! reasoning item and the call after it are one unit that curation keeps or drops whole),
//! with each message's first item. `add` converts only the new items; `items` with a
//! pipeline curates the held history (token counts are memoised in it) and writes only the
//! kept messages; before each call, one checkpoint read and one indexed read of the entries
//! after the last one held bring in what another process recorded.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, OnceLock, PoisonError, Weak};

use curator::model::{Entry, EvaluationId, Message, PromptRef, Role, formats};
use curator::session::{
    ChangeStamp, ITEM_HEADS, SessionKey, SessionStore, StoreErrorKind, append_at_end, next_turn,
};
use curator::strategies::{
    CurationContext, History, HistoryManager, HistoryManagerExt, MessageRef, StrategyConfig,
};
use pyo3::prelude::*;
use pyo3::types::PyList;
use serde_json::{Value, json};

use crate::error::Failure;
use crate::template::Template;
use crate::unsendable::UnsendableScan;

/// The namespace of the evaluation ids sessions derive (UUID v5).
const NAMESPACE: uuid::Uuid = uuid::Uuid::from_u128(0x5c1f_0d2e_8a4b_4e7c_9d3a_61b2_f0e4_a7c5);

/// How many times an append is tried when other processes keep taking its sequences.
const APPEND_ATTEMPTS: u32 = 64;

/// What a session's items are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ItemFormat {
    /// Responses API items, as the OpenAI Agents SDK stores them.
    Responses,
    /// OpenAI Chat Completions messages (LangChain messages are recorded as these).
    Openai,
}

impl ItemFormat {
    /// Reads a format's name as Python gives it.
    pub(crate) fn from_name(name: &str) -> Result<Self, Failure> {
        match name {
            "responses" => Ok(Self::Responses),
            "openai" => Ok(Self::Openai),
            other => Err(Failure::Config {
                kind: "invalid_argument",
                message: format!(
                    "`format` should be \"responses\" or \"openai\", found \"{other}\""
                ),
            }),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Self::Responses => "responses",
            Self::Openai => "openai",
        }
    }

    /// The prompt the session's evaluations are recorded under.
    fn prompt(self) -> PromptRef {
        PromptRef::new("curator-py", self.name())
    }

    /// Reads one item as the message it is recorded as; `index` names it in errors.
    fn read(self, index: usize, item: &Value) -> Result<Message, Failure> {
        let mut messages = match self {
            Self::Responses => formats::responses::to_messages(std::slice::from_ref(item))
                .map_err(|error| Failure::Item { index, error })?,
            Self::Openai => vec![formats::openai::message_from_value(index, item)?],
        };
        match (messages.pop(), messages.is_empty()) {
            (Some(message), true) => Ok(message),
            _ => Err(Failure::Input {
                kind: "not_one_item",
                message: format!("item {index}: it does not read as one message"),
            }),
        }
    }

    /// Writes messages back as items.
    fn write<M: std::borrow::Borrow<Message>>(self, messages: &[M]) -> Result<Vec<Value>, Failure> {
        Ok(match self {
            Self::Responses => formats::responses::from_messages(messages)?,
            Self::Openai => match formats::openai::from_messages(messages)? {
                Value::Array(items) => items,
                other => vec![other],
            },
        })
    }
}

/// Opens the store a session names: a PostgreSQL URL (`postgres://` or `postgresql://`), or
/// the path of a SQLite file. Stores are shared by the sessions of a process that name the
/// same one.
///
/// # Errors
///
/// [`Failure::Store`] when the store cannot be opened (an unreachable server, a file that is
/// not a curator database).
pub(crate) fn open_store(spec: &str) -> Result<Arc<dyn SessionStore>, Failure> {
    static STORES: OnceLock<Mutex<HashMap<String, Weak<dyn SessionStore>>>> = OnceLock::new();
    let postgres = is_postgres(spec);
    let name = if postgres {
        spec.to_owned()
    } else {
        std::path::absolute(spec).map_or_else(|_| spec.to_owned(), |p| p.display().to_string())
    };
    let stores = STORES.get_or_init(Mutex::default);
    // A file deleted since its store was opened is a new file: the old store writes to
    // what was deleted.
    let reusable = postgres || !in_file(spec) || std::path::Path::new(&name).exists();
    if let Some(store) = stores
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get(&name)
        .and_then(Weak::upgrade)
        .filter(|_| reusable)
    {
        return Ok(store);
    }
    let store: Arc<dyn SessionStore> = if postgres {
        Arc::new(
            curator::postgres::PgStore::connect(spec)
                .map_err(|e| Failure::store(&e, e.kind(), e.to_string()))?,
        )
    } else {
        if spec.is_empty() {
            return Err(Failure::Config {
                kind: "invalid_argument",
                message: "`store` should be a SQLite file's path or a PostgreSQL URL, found an empty string".to_owned(),
            });
        }
        Arc::new(curator::sqlite::SqliteStore::open(spec).map_err(|e| sqlite_failure(&e))?)
    };
    let mut stores = stores.lock().unwrap_or_else(PoisonError::into_inner);
    stores.retain(|_, store| store.strong_count() > 0);
    stores.insert(name, Arc::downgrade(&store));
    Ok(store)
}

/// A SQLite store's opening error for Python: a read-only file is said in terms of what
/// a session needs (its Rust message points to a Rust API Python cannot call).
fn sqlite_failure(e: &curator::sqlite::Error) -> Failure {
    let message = match e {
        curator::sqlite::Error::Sqlite { path, context, kind, .. }
            if *kind == StoreErrorKind::ReadOnly =>
        {
            format!(
                "{}: {context}: read-only: a session records what it is given, so its SQLite \
                 file and the folder holding it must be writable by this process",
                path.display()
            )
        }
        _ => e.to_string(),
    };
    Failure::store(e, e.kind(), message)
}

/// Whether a SQLite store's name is a file's path, not SQLite's in-memory database or a URI.
pub(crate) fn in_file(spec: &str) -> bool {
    spec != ":memory:" && !spec.starts_with("file:")
}

/// Whether a store's name is a PostgreSQL URL.
pub(crate) fn is_postgres(spec: &str) -> bool {
    spec.starts_with("postgres://") || spec.starts_with("postgresql://")
}

/// One live item: the entry it is recorded as, and the history message it is part of.
#[derive(Clone, Copy, Debug)]
struct Item {
    sequence: u64,
    message: usize,
}

/// The session's head, as the checkpoint holds it.
#[derive(Clone, Debug, Default)]
struct Head {
    generation: u64,
    removed: BTreeSet<u64>,
}

/// What the session holds of its record.
struct Held {
    /// The store's change stamp taken before the reads that brought the held items up to
    /// date (`None`: none taken, or the store has none): while the store's stamp stays
    /// equal, nothing was committed since, and the reads are skipped.
    stamp: Option<ChangeStamp>,
    /// The head's checkpoint version when it was read (`None`: no head recorded).
    head_version: Option<u64>,
    head: Head,
    evaluation: EvaluationId,
    /// One past the highest sequence read or written.
    next_sequence: u64,
    /// The turn of the last entry, and whether its message was the assistant's.
    turn: u32,
    last_assistant: bool,
    /// The live items, oldest first.
    items: Vec<Item>,
    /// For each history message, the index in `items` of its first item.
    starts: Vec<usize>,
    history: History<'static>,
    /// The messages no provider takes, by position.
    unsendable: UnsendableScan,
}

/// A session: its key, store and format, the pipeline `items` curates with, and what it
/// holds of the record. See the [module](self) documentation.
pub(crate) struct ItemLog {
    store: Arc<dyn SessionStore>,
    key: SessionKey,
    format: ItemFormat,
    head_name: String,
    pipeline: Option<Arc<dyn HistoryManager>>,
    /// The pipeline's configuration, for views that reserve room for what is sent beside
    /// the items (instructions, tools).
    config: Option<StrategyConfig>,
    held: Held,
    /// Whether the record was read yet: opening reads nothing, the first call loads it.
    loaded: bool,
    /// The SQLite file the store writes, checked before each write: SQLite goes on writing
    /// to a file deleted under it, which no later process would see.
    file: Option<std::path::PathBuf>,
}

impl std::fmt::Debug for ItemLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ItemLog")
            .field("key", &self.key)
            .field("format", &self.format)
            .field("evaluation", &self.held.evaluation)
            .field("items", &self.held.items.len())
            .finish_non_exhaustive()
    }
}

impl ItemLog {
    /// Opens the session `key` of `store`. Its items are loaded by the first call that
    /// needs them, so that opening a long session costs nothing on the caller's thread.
    ///
    /// # Errors
    ///
    /// [`Failure::Store`] for a bad key or a store error; [`Failure::Config`] for a pipeline
    /// that cannot be built.
    pub(crate) fn open(
        store: Arc<dyn SessionStore>,
        key: &str,
        format: ItemFormat,
        pipeline: Option<&StrategyConfig>,
    ) -> Result<Self, Failure> {
        let key = SessionKey::new(key);
        key.check().map_err(Failure::Session)?;
        let pipeline_config = pipeline.cloned();
        let pipeline = pipeline.map(crate::pipeline::built).transpose()?;
        let head_name = format!("{ITEM_HEADS}{}/{key}", format.name());
        let evaluation = evaluation_of(&key, format, 0);
        let log = Self {
            store,
            key,
            format,
            head_name,
            pipeline,
            config: pipeline_config,
            held: Held::empty(None, Head::default(), evaluation),
            loaded: false,
            file: None,
        };
        Ok(log)
    }

    /// Checks before each write that the SQLite file at `path` is still there.
    #[must_use]
    pub(crate) fn watching_file(mut self, path: std::path::PathBuf) -> Self {
        self.file = Some(path);
        self
    }

    /// Refuses to write when the store's file was deleted or moved since it was opened.
    fn check_file(&self) -> Result<(), Failure> {
        match &self.file {
            Some(file) if !file.exists() => Err(Failure::Store {
                kind: "unavailable",
                message: format!(
                    "session `{}`: the SQLite file {} was deleted or moved while the session was \
                     open; nothing was written (open the session again to start a new file)",
                    self.key,
                    file.display()
                ),
            }),
            _ => Ok(()),
        }
    }

    /// The held history's id and length, when the record is known unchanged since the held
    /// items were brought up to date: the store's change stamp (one read, which in SQLite's
    /// WAL mode waits for no writer) is the one taken then. `None` before the first load, on
    /// a store without stamps (PostgreSQL), or when something was committed since.
    ///
    /// # Errors
    ///
    /// A store error reading the stamp.
    pub(crate) fn unchanged(&self) -> Result<Option<(u64, usize)>, Failure> {
        if !self.loaded {
            return Ok(None);
        }
        let stamp = self.store.change_stamp().map_err(Failure::Session)?;
        let history = &self.held.history;
        Ok((stamp.is_some() && stamp == self.held.stamp).then(|| (history.id(), history.len())))
    }

    /// Number of live items held (as of the last call).
    pub(crate) fn len(&self) -> usize {
        self.held.items.len()
    }

    /// The live items, or the newest `limit` of them, or with a pipeline and no limit the
    /// curated view as items.
    ///
    /// # Errors
    ///
    /// A store error, a curation error ([`BudgetTooSmall`](crate::error::BudgetTooSmall)),
    /// or an item that cannot be written.
    pub(crate) fn items(&mut self, limit: Option<usize>) -> Result<Vec<Value>, Failure> {
        self.refresh()?;
        let held = &self.held;
        if let Some(limit) = limit {
            let first = held.items.len().saturating_sub(limit);
            let Some(item) = held.items.get(first) else { return Ok(Vec::new()) };
            let skip = first - held.starts[item.message];
            let mut out = self.format.write(&held.history.messages()[item.message..])?;
            out.drain(..skip.min(out.len()));
            return Ok(out);
        }
        let Some(pipeline) = &self.pipeline else {
            return self.format.write(held.history.messages());
        };
        let kept = self.kept(pipeline.as_ref())?;
        let messages: Vec<&Message> = kept.iter().map(|(_, m)| &**m).collect();
        self.format.write(&messages)
    }

    /// The messages curation keeps of the held history, with their positions, and for the
    /// Responses API the reasoning items they need.
    fn kept(
        &self,
        pipeline: &dyn HistoryManager,
    ) -> Result<Vec<(Option<usize>, MessageRef<'_>)>, Failure> {
        let view = pipeline.curate_history(&self.held.history, &CurationContext::default())?;
        let entries = if self.format == ItemFormat::Responses {
            view.responses_entries()
        } else {
            view.iter().collect()
        };
        Ok(entries.into_iter().map(|entry| (entry.pos, entry.message)).collect())
    }

    /// The curated view for Python (`None` without a pipeline): each kept message that is
    /// the held one, or a copy curation made and handed out again (a redacted message,
    /// memoised), is taken from `templates` when there, else written as items to be made
    /// templates of; other messages are written as items. Only what a call keeps is
    /// written, and a message is written once while it stays kept. `reserve` tokens of the
    /// budget are held back for what is sent beside the items (instructions, tools).
    ///
    /// # Errors
    ///
    /// As [`ItemLog::items`].
    pub(crate) fn curated(
        &mut self,
        mut templates: Templates,
        reserve: u64,
    ) -> Result<Option<Curated>, Failure> {
        self.refresh()?;
        let pipeline = match (&self.pipeline, &self.config) {
            (None, _) => return Ok(None),
            (Some(pipeline), _) if reserve == 0 => Arc::clone(pipeline),
            (Some(pipeline), None) => Arc::clone(pipeline),
            (Some(_), Some(config)) => {
                crate::pipeline::built(&config.clone().with_reserve(reserve))?
            }
        };
        let history = &self.held.history;
        if templates.history != history.id() {
            templates.by_source.clear();
        }
        let kept = self.kept(pipeline.as_ref())?;
        let mut out = Vec::with_capacity(kept.len());
        for (pos, message) in &kept {
            let source = match (pos, message) {
                // Positions hold one message for the life of a history: the held message
                // at `pos` is the one its template was made of.
                (Some(pos), MessageRef::Borrowed(m))
                    if history.get(*pos).is_some_and(|held| std::ptr::eq(held, *m)) =>
                {
                    Some(Source::Held(*pos))
                }
                // A copy is the same while its allocation is: the template keeps it alive.
                (_, MessageRef::Shared(copy)) => Some(Source::Shared(Arc::clone(copy))),
                _ => None,
            };
            let Some(source) = source else {
                out.push(Kept::Made(self.format.write(std::slice::from_ref(&**message))?));
                continue;
            };
            if let Some((_, cached)) = templates.by_source.remove(&source.key()) {
                out.push(Kept::Cached(source, cached));
            } else {
                let items = self.format.write(std::slice::from_ref(&**message))?;
                out.push(Kept::New(source, items));
            }
        }
        Ok(Some(Curated { history: history.id(), len: history.len(), reserve, kept: out }))
    }

    /// Indices of the live items no provider takes, which curated views leave out: function
    /// call outputs that answer no open call, and calls a user or system message closed
    /// before their outputs came (with the reasoning item that led to them). Found again only
    /// for the messages since the last user or system message, once per change.
    pub(crate) fn unsendable(&mut self) -> Vec<usize> {
        let held = &mut self.held;
        let positions = held.unsendable.positions(held.history.messages());
        positions
            .iter()
            .flat_map(|&pos| {
                let end = held.starts.get(pos + 1).copied().unwrap_or(held.items.len());
                held.starts.get(pos).copied().unwrap_or(end)..end
            })
            .collect()
    }

    /// Records `items` after the live ones.
    ///
    /// # Errors
    ///
    /// [`Failure::Model`] or [`Failure::Input`] naming the first item that cannot be read or
    /// would not come back as it was (nothing is recorded then); a store error.
    pub(crate) fn add(&mut self, items: &[Value]) -> Result<(), Failure> {
        let mut messages = Vec::with_capacity(items.len());
        for (index, item) in items.iter().enumerate() {
            let message = self.format.read(index, item)?;
            let back = self.format.write(std::slice::from_ref(&message))?;
            if back.len() != 1 || back[0] != *item {
                return Err(Failure::Input {
                    kind: "not_round_trip",
                    message: format!(
                        "item {index}: it would not come back as it was given (it reads as {}); \
                         curator records only what it can give back",
                        back.first().map_or_else(|| "nothing".to_owned(), Value::to_string)
                    ),
                });
            }
            messages.push(message);
        }
        if messages.is_empty() {
            return Ok(());
        }
        self.check_file()?;
        let prompt = self.format.prompt();
        let store = Arc::clone(&self.store);
        let appended = append_at_end(&*store, &self.key.clone(), APPEND_ATTEMPTS, || {
            self.refresh()?;
            let held = &self.held;
            let (mut turn, mut last_assistant) = (held.turn, held.last_assistant);
            let mut entries = Vec::with_capacity(messages.len());
            for (offset, message) in messages.iter().enumerate() {
                let sequence = held.next_sequence + offset as u64;
                let previous = last_assistant.then_some(Role::Assistant);
                turn = next_turn(turn, previous, message.role());
                last_assistant = message.role() == Role::Assistant;
                let mut builder =
                    Entry::builder(held.evaluation, message.clone()).sequence(sequence).turn(turn);
                if sequence == 0 {
                    builder = builder.prompt(prompt.clone());
                }
                entries.push(builder.build()?);
            }
            Ok::<_, Failure>(entries)
        })?;
        if let Some(entries) = appended {
            for entry in entries {
                self.push(entry);
            }
            return Ok(());
        }
        Err(Failure::Store {
            kind: "busy",
            message: format!(
                "session `{}`: other processes kept appending; {} items not recorded after {APPEND_ATTEMPTS} attempts",
                self.key,
                messages.len()
            ),
        })
    }

    /// Removes the newest live item and returns it (`None` when there is none), recording
    /// its removal in the head.
    ///
    /// # Errors
    ///
    /// A store error (nothing is removed then).
    pub(crate) fn pop(&mut self) -> Result<Option<Value>, Failure> {
        self.refresh()?;
        let Some(&last) = self.held.items.last() else { return Ok(None) };
        let history = &self.held.history;
        let mut group = self.format.write(&history.messages()[last.message..])?;
        let Some(popped) = group.pop() else { return Ok(None) };
        self.check_file()?;
        let mut head = self.held.head.clone();
        head.removed.insert(last.sequence);
        let version = self.put_head(&head)?;
        self.held.head_version = Some(version);
        self.held.head = head;
        // Rebuild the history without the item: positions are append-only, so the last
        // message is rebuilt from the items left of it. This costs a copy of the history
        // and its token counts (a pop is a rare, explicit act).
        let mut messages = self.held.history.messages()[..last.message].to_vec();
        if !group.is_empty() {
            messages.push(self.joined(&group)?);
        }
        self.held.items.pop();
        if group.is_empty() {
            self.held.starts.pop();
        }
        self.held.history = History::from(messages);
        self.held.unsendable.restart();
        Ok(Some(popped))
    }

    /// Starts the session afresh: the next generation's evaluation, named in the head. The
    /// items recorded so far stay in the record.
    ///
    /// # Errors
    ///
    /// A store error (nothing changes then).
    pub(crate) fn clear(&mut self) -> Result<(), Failure> {
        self.refresh()?;
        self.check_file()?;
        let head = Head { generation: self.held.head.generation + 1, removed: BTreeSet::new() };
        let version = self.put_head(&head)?;
        let evaluation = evaluation_of(&self.key, self.format, head.generation);
        self.held = Held::empty(Some(version), head, evaluation);
        // Another process may have appended to the new generation already.
        self.refresh()
    }

    fn put_head(&self, head: &Head) -> Result<u64, Failure> {
        let document = json!({
            "generation": head.generation,
            "evaluation": evaluation_of(&self.key, self.format, head.generation).to_string(),
            "removed": head.removed,
        });
        self.store.put_checkpoint(&self.head_name, &document).map_err(Failure::Session)
    }

    /// Brings the held items up to date with the record: reloads when the head changed (a
    /// pop or clear by another process), else reads the entries after the last one held.
    ///
    /// On a store with change stamps (SQLite), an unchanged stamp says that nothing was
    /// committed since the last refresh, by this process or another: no read is needed.
    fn refresh(&mut self) -> Result<(), Failure> {
        // Taken before the reads: a commit after it changes the stamp, so the next call
        // reads again even if these reads already saw it.
        let stamp = self.store.change_stamp().map_err(Failure::Session)?;
        if !self.loaded {
            self.reload()?;
            self.held.stamp = stamp;
            return Ok(());
        }
        if stamp.is_some() && stamp == self.held.stamp {
            return Ok(());
        }
        let version =
            self.store.checkpoint(&self.head_name).map_err(Failure::Session)?.map(|c| c.version);
        if version == self.held.head_version {
            let entries = self
                .store
                .entries_from(self.held.evaluation, self.held.next_sequence)
                .map_err(Failure::Session)?;
            for entry in entries {
                self.push(entry);
            }
        } else {
            self.reload()?;
        }
        self.held.stamp = stamp;
        Ok(())
    }

    /// Loads the session from its head and its evaluation's entries.
    fn reload(&mut self) -> Result<(), Failure> {
        let checkpoint = self.store.checkpoint(&self.head_name).map_err(Failure::Session)?;
        let (version, head) = match checkpoint {
            None => (None, Head::default()),
            Some(checkpoint) => {
                (Some(checkpoint.version), read_head(&self.head_name, &checkpoint.document)?)
            }
        };
        let evaluation = evaluation_of(&self.key, self.format, head.generation);
        self.held = Held::empty(version, head, evaluation);
        let entries = self.store.entries(evaluation).map_err(Failure::Session)?;
        // Built as a list first: pushing into a history one by one would work out pairing
        // state per message twice.
        let mut messages: Vec<Message> = Vec::with_capacity(entries.len());
        for entry in entries {
            self.note(&entry);
            if self.held.head.removed.contains(&entry.sequence) {
                continue;
            }
            let index = self.held.items.len();
            if let Some(last) =
                messages.last_mut().filter(|last| joins(self.format, Some(last), &entry.message))
            {
                let mut group = self.format.write(std::slice::from_ref(last))?;
                group.extend(self.format.write(std::slice::from_ref(&entry.message))?);
                *last = self.joined(&group)?;
                self.held
                    .items
                    .push(Item { sequence: entry.sequence, message: messages.len() - 1 });
            } else {
                self.held.items.push(Item { sequence: entry.sequence, message: messages.len() });
                self.held.starts.push(index);
                messages.push(entry.message);
            }
        }
        self.held.history = History::from(messages);
        self.loaded = true;
        Ok(())
    }

    /// Adds one entry read or written after the held ones.
    fn push(&mut self, entry: Entry) {
        self.note(&entry);
        if self.held.head.removed.contains(&entry.sequence) {
            return;
        }
        let index = self.held.items.len();
        let len = self.held.history.len();
        // A call after an assistant-side item that an earlier call recorded: the last
        // message grows, which an append-only history cannot do in place, so it is rebuilt
        // (a copy of the history, rare: the Agents SDK adds a model reply's items together).
        // Should the items not join, the call stays a message of its own, as recorded.
        if joins(self.format, self.held.history.messages().last(), &entry.message)
            && self.regroup(len - 1, &entry.message).is_ok()
        {
            self.held.items.push(Item { sequence: entry.sequence, message: len - 1 });
            return;
        }
        self.held.items.push(Item { sequence: entry.sequence, message: len });
        self.held.starts.push(index);
        self.held.history.push(entry.message);
    }

    /// Rebuilds the history with `message` joined to the message at `pos`, the last one.
    fn regroup(&mut self, pos: usize, message: &Message) -> Result<(), Failure> {
        let messages = self.held.history.messages();
        let mut group = self.format.write(&messages[pos..=pos])?;
        group.extend(self.format.write(std::slice::from_ref(message))?);
        let joined = self.joined(&group)?;
        let mut messages = messages[..pos].to_vec();
        messages.push(joined);
        self.held.history = History::from(messages);
        self.held.unsendable.restart();
        Ok(())
    }

    /// The one message a group of items that join reads as.
    fn joined(&self, group: &[Value]) -> Result<Message, Failure> {
        let mut messages = self.read_group(group)?;
        match (messages.pop(), messages.is_empty()) {
            (Some(message), true) => Ok(message),
            _ => Err(Failure::Input {
                kind: "not_one_item",
                message: "items that join did not read as one message".to_owned(),
            }),
        }
    }

    fn read_group(&self, group: &[Value]) -> Result<Vec<Message>, Failure> {
        Ok(match self.format {
            ItemFormat::Responses => formats::responses::to_messages(group)?,
            ItemFormat::Openai => formats::openai::to_messages(&Value::Array(group.to_vec()))?,
        })
    }

    /// Notes an entry's sequence and turn, live or removed.
    fn note(&mut self, entry: &Entry) {
        let held = &mut self.held;
        held.next_sequence = held.next_sequence.max(entry.sequence + 1);
        held.turn = held.turn.max(entry.turn);
        held.last_assistant = entry.message.role() == Role::Assistant;
    }
}

impl Held {
    fn empty(head_version: Option<u64>, head: Head, evaluation: EvaluationId) -> Self {
        // New entries never take a removed sequence, even when retention deleted the
        // evaluation's entries and left the head.
        let next_sequence = head.removed.last().map_or(0, |last| last + 1);
        Self {
            stamp: None,
            head_version,
            head,
            evaluation,
            next_sequence,
            turn: 0,
            last_assistant: false,
            items: Vec::new(),
            starts: Vec::new(),
            history: History::new(),
            unsendable: UnsendableScan::default(),
        }
    }
}

/// The Python items made of the messages curated views kept, by the message they were made
/// of, for one history (its [`History::id`]): a later view that keeps a message again hands
/// out fresh copies of them ([`Template::fresh`]) instead of writing the message again.
#[derive(Debug, Default)]
pub(crate) struct Templates {
    history: u64,
    by_source: HashMap<SourceKey, (Source, Vec<Template>), BuildKeyHasher>,
    /// The last view handed out, in order, to hand out again while nothing changed.
    last: Option<LastView>,
}

/// A curated view handed out: what it was made of, and its items in order.
#[derive(Debug)]
pub(crate) struct LastView {
    /// The held history's id and length, and the tokens reserved, when it was made.
    state: (u64, usize, u64),
    order: Vec<Slot>,
    /// The items it left out because no provider takes them.
    unsendable: Vec<usize>,
}

/// One kept message of the last view: the templates of a message curation kept (in
/// [`Templates::by_source`]), or of one it made afresh.
#[derive(Debug)]
enum Slot {
    Source(SourceKey),
    Made(Vec<Template>),
}

impl Templates {
    /// Fresh copies of the last view's items, when it was made of the history `state`
    /// (its id and length) with `reserve` tokens held back, and the items it left out;
    /// `None` for another view.
    ///
    /// # Errors
    ///
    /// What Python reports when it cannot allocate an object.
    pub(crate) fn again<'py>(
        &self,
        py: Python<'py>,
        state: (u64, usize),
        reserve: u64,
    ) -> PyResult<Option<(Bound<'py, PyList>, &[usize])>> {
        let Some(view) = self.last.as_ref().filter(|v| v.state == (state.0, state.1, reserve))
        else {
            return Ok(None);
        };
        let list = PyList::empty(py);
        for slot in &view.order {
            let made = match slot {
                Slot::Source(key) => match self.by_source.get(key) {
                    Some((_, made)) => made,
                    None => return Ok(None),
                },
                Slot::Made(made) => made,
            };
            for template in made {
                list.append(template.fresh(py)?)?;
            }
        }
        Ok(Some((list, &view.unsendable)))
    }
}

/// Hashes a [`SourceKey`] (a position or an address) with one multiply: the standard
/// library's hasher cost more than the rest of a template's lookup, and the keys are not
/// chosen by an adversary.
type BuildKeyHasher = std::hash::BuildHasherDefault<KeyHasher>;

#[derive(Default)]
struct KeyHasher(u64);

impl std::hash::Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.write_u64(u64::from(byte));
        }
    }

    fn write_u64(&mut self, n: u64) {
        // FxHash's step (rustc's hasher).
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }

    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }
}

/// The message a template was made of.
#[derive(Debug)]
pub(crate) enum Source {
    /// The held message at a position.
    Held(usize),
    /// A copy curation made (kept alive here, so that its address names it).
    Shared(Arc<Message>),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum SourceKey {
    Held(usize),
    Shared(usize),
}

impl Source {
    fn key(&self) -> SourceKey {
        match self {
            Self::Held(pos) => SourceKey::Held(*pos),
            Self::Shared(copy) => SourceKey::Shared(Arc::as_ptr(copy).addr()),
        }
    }
}

/// One kept message of a curated view, before it becomes Python objects.
#[derive(Debug)]
pub(crate) enum Kept {
    /// Its items' templates, from the last view.
    Cached(Source, Vec<Template>),
    /// Its items, written for this view, to be made templates of.
    New(Source, Vec<Value>),
    /// Its items, written for this view only (a message curation made afresh).
    Made(Vec<Value>),
}

/// A curated view, for [`ItemSession::get_items`] to build as Python objects.
#[derive(Debug)]
pub(crate) struct Curated {
    history: u64,
    /// The history's length when it was curated, and the tokens held back.
    len: usize,
    reserve: u64,
    kept: Vec<Kept>,
}

impl Curated {
    /// The view's items as fresh Python objects, and the templates to keep for the next
    /// view: those of the messages this one kept, and the view in order with the items it
    /// left out (`unsendable`), to hand out again while nothing changes.
    fn into_python<'py>(
        self,
        py: Python<'py>,
        unsendable: &[usize],
    ) -> PyResult<(Bound<'py, PyList>, Templates)> {
        let list = PyList::empty(py);
        let mut templates = Templates {
            history: self.history,
            by_source: HashMap::with_capacity_and_hasher(
                self.kept.len(),
                BuildKeyHasher::default(),
            ),
            last: None,
        };
        let mut order = Vec::with_capacity(self.kept.len());
        let templates_of = |items: &[Value]| {
            items.iter().map(|item| Template::new(py, item)).collect::<PyResult<Vec<_>>>()
        };
        for kept in self.kept {
            let (source, made) = match kept {
                Kept::Cached(source, made) => (source, made),
                Kept::New(source, items) => (source, templates_of(&items)?),
                Kept::Made(items) => {
                    let made = templates_of(&items)?;
                    for template in &made {
                        list.append(template.fresh(py)?)?;
                    }
                    order.push(Slot::Made(made));
                    continue;
                }
            };
            for template in &made {
                list.append(template.fresh(py)?)?;
            }
            order.push(Slot::Source(source.key()));
            templates.by_source.insert(source.key(), (source, made));
        }
        templates.last = Some(LastView {
            state: (self.history, self.len, self.reserve),
            order,
            unsendable: unsendable.to_vec(),
        });
        Ok((list, templates))
    }
}

/// Whether an item's message joins the message before it (`last`): a Responses
/// `function_call` after an item on the assistant's side, as the Responses reader joins them.
fn joins(format: ItemFormat, last: Option<&Message>, message: &Message) -> bool {
    format == ItemFormat::Responses
        && is_bare_call(message)
        && last.is_some_and(|m| m.role() == Role::Assistant)
}

/// The message of a `function_call` item read alone: an assistant message with no content
/// and one call.
fn is_bare_call(message: &Message) -> bool {
    message.role() == Role::Assistant
        && message.content().is_none()
        && message.tool_calls().len() == 1
}

/// The evaluation of a key's generation in a format.
fn evaluation_of(key: &SessionKey, format: ItemFormat, generation: u64) -> EvaluationId {
    let name = format!("curator-py/{}/{generation}/{key}", format.name());
    EvaluationId::from_uuid(uuid::Uuid::new_v5(&NAMESPACE, name.as_bytes()))
}

fn read_head(name: &str, document: &Value) -> Result<Head, Failure> {
    let bad = |what: &str| Failure::Store {
        kind: "corrupt",
        message: format!("checkpoint `{name}`: {what}"),
    };
    let generation = document
        .get("generation")
        .and_then(Value::as_u64)
        .ok_or_else(|| bad("`generation` should be a non-negative integer"))?;
    let removed = match document.get("removed") {
        None => BTreeSet::new(),
        Some(Value::Array(removed)) => removed
            .iter()
            .map(|s| s.as_u64().ok_or_else(|| bad("`removed` should hold sequences")))
            .collect::<Result<_, _>>()?,
        Some(_) => return Err(bad("`removed` should be a list")),
    };
    Ok(Head { generation, removed })
}

mod item_session;
#[cfg(test)]
mod tests;

pub(crate) use item_session::ItemSession;
