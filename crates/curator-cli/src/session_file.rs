//! Session files: opening one to read, and recording conversations into one.

use std::path::Path;

use anyhow::{Context, Result};
use curator::model::{Entry, EvaluationId, Message, PromptRef, Role};
use curator::session::{SessionKey, SessionStore};
use curator::sqlite::SqliteStore;

use crate::input::Conversation;

/// Opens a session file without writing to it.
pub(crate) fn open_read_only(path: &Path) -> Result<SqliteStore> {
    SqliteStore::open_read_only(path)
        .with_context(|| format!("cannot open session file {}", path.display()))
}

/// Records conversations into a SQLite session file, one evaluation each, under the session
/// key of the conversation's id.
pub(crate) fn record(path: &Path, conversations: &[Conversation]) -> Result<usize> {
    let store = SqliteStore::open(path)?;
    let mut recorded = 0;
    for conversation in conversations {
        let evaluation = EvaluationId::new();
        let prompt = PromptRef::new("replay", conversation.id.clone());
        let mut turn = 0;
        let entries = conversation
            .messages
            .iter()
            .enumerate()
            .map(|(i, m): (usize, &Message)| {
                if m.role() == Role::Assistant {
                    turn += 1;
                }
                let turn = if m.role() == Role::Tool { turn.max(1) } else { turn };
                Entry::builder(evaluation, m.clone())
                    .sequence(i as u64)
                    .turn(turn)
                    .prompt(prompt.clone())
                    .build()
            })
            .collect::<Result<Vec<_>, _>>()?;
        store.append_batch(&SessionKey::new(conversation.id.clone()), &entries)?;
        recorded += entries.len();
    }
    Ok(recorded)
}
