//! Session stores named on the command line: a SQLite session file, or a PostgreSQL database
//! by its `postgres://` URL; opening one to read, and recording replayed conversations into
//! one.

use std::collections::HashMap;
use std::path::Path;

use anyhow::{Context, Result};
use curator::model::{Entry, EvaluationId, Message, PromptRef};
use curator::postgres::{PgOptions, PgStore};
use curator::session::{SessionKey, SessionStore, next_turn};
use curator::sqlite::SqliteStore;

/// The prompt namespace `curator replay` records conversations under; the key is the
/// conversation's id.
const NAMESPACE: &str = "replay";

/// The PostgreSQL URL `location` is, if it is one.
pub(crate) fn url(location: &Path) -> Option<&str> {
    location.to_str().filter(|s| s.starts_with("postgres://") || s.starts_with("postgresql://"))
}

/// How to name `location` in messages: a file's path, or a URL, without a password (see
/// [`without_password`]).
pub(crate) fn name(location: &Path) -> String {
    without_password(&location.display().to_string())
}

/// `text` (a URL, a libpq `key=value` connection string, or a path) with its passwords shown
/// as `***`: the one after a URL's user name, a `password` parameter of its query, and a
/// `password=` pair of a connection string.
pub(crate) fn without_password(text: &str) -> String {
    let (base, query) = match text.split_once('?') {
        Some((base, query)) if base.contains("://") => (base, Some(query)),
        _ => (text, None),
    };
    let mut out = match (base.find("://"), base.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme && base[scheme + 3..at].contains(':') => {
            let user_end = scheme + 3 + base[scheme + 3..at].find(':').unwrap_or(0);
            format!("{}:***{}", &base[..user_end], &base[at..])
        }
        _ if !base.contains("://") => conninfo_without_password(base),
        _ => base.to_owned(),
    };
    if let Some(query) = query {
        let pairs: Vec<String> = query
            .split('&')
            .map(|pair| match pair.split_once('=') {
                Some((key, _)) if key.eq_ignore_ascii_case("password") => format!("{key}=***"),
                _ => pair.to_owned(),
            })
            .collect();
        out.push('?');
        out.push_str(&pairs.join("&"));
    }
    out
}

/// A libpq connection string (`host=h password=p`) with each `password=` value (quoted or
/// not) shown as `***`; any other text unchanged.
fn conninfo_without_password(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = find_password_key(rest) {
        out.push_str(&rest[..at]);
        let value = &rest[at..];
        let end = if let Some(quoted) = value.strip_prefix('\'') {
            // A quoted value ends at the next quote that is not escaped.
            let mut escaped = false;
            quoted
                .char_indices()
                .find(|&(_, c)| {
                    let close = c == '\'' && !escaped;
                    escaped = c == '\\' && !escaped;
                    close
                })
                .map_or(value.len(), |(i, _)| i + 2)
        } else {
            value.find(char::is_whitespace).unwrap_or(value.len())
        };
        out.push_str("***");
        rest = &value[end..];
    }
    out.push_str(rest);
    out
}

/// Where the value of a `password=` pair (a word of its own, any case, spaces allowed around
/// `=`) starts in `text`.
fn find_password_key(text: &str) -> Option<usize> {
    let lower = text.to_ascii_lowercase();
    let mut from = 0;
    while let Some(found) = lower[from..].find("password") {
        let start = from + found;
        let after = start + "password".len();
        let word_start = start == 0 || lower[..start].ends_with(char::is_whitespace);
        let rest = &text[after..];
        let trimmed = rest.trim_start();
        if word_start && let Some(value) = trimmed.strip_prefix('=') {
            let value_start = text.len() - value.trim_start().len();
            return Some(value_start);
        }
        from = after;
    }
    None
}

/// Opens the SQLite session file at `location` (to read only, or to record), naming it
/// without a password in what goes wrong (a connection string given as a file name).
pub(crate) fn open_sqlite(location: &Path, read_only: bool) -> Result<SqliteStore> {
    let opened =
        if read_only { SqliteStore::open_read_only(location) } else { SqliteStore::open(location) };
    opened.map_err(|error| {
        let raw = location.display().to_string();
        // Said in the words of the command line: no password, no library call.
        let text = crate::output::Chain(&anyhow::Error::new(error))
            .to_string()
            .replace(&raw, &name(location))
            .replace(
                "`SqliteStore::open_read_only` reads it without writing",
                "`curator inspect` and `curator trace` read it without writing",
            );
        anyhow::anyhow!("cannot open the session file: {text}")
    })
}

/// Opens a PostgreSQL store (creating its tables when the schema has none).
pub(crate) fn open_postgres(url: &str, location: &Path) -> Result<PgStore> {
    let options = PgOptions::from_url(url)
        .with_context(|| format!("cannot use the database URL {}", name(location)))?
        .with_pool_size(1);
    PgStore::open(options).with_context(|| format!("cannot open the database {}", name(location)))
}

/// Opens a session store to read, never creating or migrating a schema: a SQLite file
/// read-only (nothing written, nothing left beside it), or a PostgreSQL database by its URL
/// in read-only transactions (a database without curator's schema is refused as it is).
pub(crate) fn open_read_only(location: &Path) -> Result<Box<dyn SessionStore>> {
    if let Some(url) = url(location) {
        let options = PgOptions::from_url(url)
            .with_context(|| format!("cannot use the database URL {}", name(location)))?
            .with_pool_size(1);
        let store = PgStore::open_read_only(options)
            .with_context(|| format!("cannot open the database {}", name(location)))?;
        return Ok(Box::new(store));
    }
    let store = open_sqlite(location, true)?;
    Ok(Box::new(store))
}

/// The key a conversation without an `id` is recorded under: its name (its file's) and a
/// hash of its messages, so that the same conversation replayed again is recognised and
/// another one of the same name is not taken for it.
///
/// # Errors
///
/// When a message cannot be written as JSON (two different conversations must never share
/// a key because their messages could not be read).
pub(crate) fn content_key(name: &str, messages: &[Message]) -> Result<String> {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for message in messages {
        let bytes = serde_json::to_vec(message)
            .with_context(|| format!("{name}: a message cannot be written as JSON to key it"))?;
        for byte in bytes.iter().chain(&[0xff]) {
            hash ^= u64::from(*byte);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
    }
    Ok(format!("{name} {:08x}", hash >> 32))
}

/// What became of one conversation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Recorded {
    /// Recorded as a new evaluation, under this conversation id; `renamed_from` is the id the
    /// conversation gave, when another conversation's messages are recorded under it.
    New { evaluation: EvaluationId, id: String, messages: usize, renamed_from: Option<String> },
    /// Already in the file under `key`: not recorded again.
    Skipped { key: String, evaluation: EvaluationId },
}

/// Records conversations into a session store (a SQLite file or a PostgreSQL database), one
/// evaluation each, recognising the conversations it already holds by their id.
pub(crate) struct Recorder {
    store: Box<dyn SessionStore>,
    /// Conversation ids already recorded, with their evaluation.
    known: HashMap<String, EvaluationId>,
    /// Record a conversation already there again, under a new id (`ID (2)`), instead of
    /// skipping it.
    again: bool,
}

impl std::fmt::Debug for Recorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorder").field("known", &self.known.len()).finish_non_exhaustive()
    }
}

impl Recorder {
    /// Opens (or creates) the store and reads which conversations it holds.
    pub(crate) fn open(path: &Path, again: bool) -> Result<Self> {
        let store: Box<dyn SessionStore> = match url(path) {
            Some(url) => Box::new(open_postgres(url, path)?),
            None => Box::new(open_sqlite(path, false)?),
        };
        let known = store
            .evaluations()?
            .into_iter()
            .filter_map(|e| {
                let prompt = e.prompt?;
                (prompt.ns == NAMESPACE).then_some((prompt.key, e.evaluation_id))
            })
            .collect();
        Ok(Self { store, known, again })
    }

    /// Records one conversation, or skips it when its key is already recorded (unless asked
    /// to record it again under a new key). The key is its `id` when it has one of its own
    /// (`own_id`), else its name and a hash of its messages (see [`content_key`]).
    pub(crate) fn record(
        &mut self,
        id: &str,
        own_id: bool,
        messages: &[Message],
    ) -> Result<Recorded> {
        let key = if own_id { id.to_owned() } else { content_key(id, messages)? };
        // The conversation's id, or the first of `ID (2)`, `ID (3)`, … that is free; a
        // conversation already recorded under one of them (the same messages) is skipped,
        // unless recorded again on purpose.
        let mut n = 1;
        let id = loop {
            let candidate = if n == 1 { key.clone() } else { format!("{key} ({n})") };
            match self.known.get(&candidate) {
                None => break candidate,
                Some(&evaluation) if !self.again && self.holds(evaluation, messages)? => {
                    return Ok(Recorded::Skipped { key: candidate, evaluation });
                }
                Some(_) => n += 1,
            }
        };
        let renamed_from = (n > 1 && !self.again).then(|| key.clone());
        let evaluation = EvaluationId::new();
        let prompt = PromptRef::new(NAMESPACE, id.clone());
        let mut turn = 0;
        let entries = messages
            .iter()
            .enumerate()
            .map(|(i, m)| {
                let previous = i.checked_sub(1).and_then(|p| messages.get(p)).map(Message::role);
                turn = next_turn(turn, previous, m.role());
                Entry::builder(evaluation, m.clone())
                    .sequence(i as u64)
                    .turn(turn)
                    .prompt(prompt.clone())
                    .build()
            })
            .collect::<Result<Vec<_>, _>>()?;
        self.store.append_batch(&SessionKey::new(id.clone()), &entries)?;
        self.known.insert(id.clone(), evaluation);
        Ok(Recorded::New { evaluation, id, messages: entries.len(), renamed_from })
    }

    /// Whether `evaluation` holds exactly `messages`.
    fn holds(&self, evaluation: EvaluationId, messages: &[Message]) -> Result<bool> {
        let mut recorded = Vec::with_capacity(messages.len());
        let mut longer = false;
        self.store.entries_in_pages(evaluation, 2_000, &mut |page| {
            recorded.extend(page.into_iter().map(|e| e.message));
            if recorded.len() > messages.len() {
                longer = true;
                return std::ops::ControlFlow::Break(());
            }
            std::ops::ControlFlow::Continue(())
        })?;
        Ok(!longer && recorded == messages)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(location: &str, expected: &str) {
        assert_eq!(name(Path::new(location)), expected);
    }

    #[test]
    fn passwords_are_left_out_of_names() {
        check("s.db", "s.db");
        check("postgres://u@h/db", "postgres://u@h/db");
        check("postgres://u:hunter2@h/db", "postgres://u:***@h/db");
        check("postgres://u:p@ss@h/db?sslmode=require", "postgres://u:***@h/db?sslmode=require");
        check(
            "postgres://u@h/db?sslmode=require&password=hunter2",
            "postgres://u@h/db?sslmode=require&password=***",
        );
        check("postgresql://u:a@h/db?password=b&x=1", "postgresql://u:***@h/db?password=***&x=1");
        // A `@` or `:` in the query is not the user's password.
        check("postgres://u@h/db?passfile=/a:b@c", "postgres://u@h/db?passfile=/a:b@c");
        // A libpq connection string, quoted or not, spaces around `=` or not.
        check(
            "host=db1 user=app password=S3cretPw dbname=x",
            "host=db1 user=app password=*** dbname=x",
        );
        check("password = 'a b\\'c' host=h", "password = *** host=h");
        check("PASSWORD=x", "PASSWORD=***");
        check("passwords.txt", "passwords.txt");
        // Any scheme: a model server's URL in the chat banner.
        assert_eq!(
            without_password("http://bob:S3cret@host:8080/v1"),
            "http://bob:***@host:8080/v1"
        );
    }
}
