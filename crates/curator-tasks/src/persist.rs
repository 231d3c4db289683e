//! Saving a task history in a session store's checkpoints, so a task survives a restart.

use curator_session::SessionStore;

use crate::error::{Error, Result};
use crate::history::TaskHistory;

/// The checkpoint name [`save`] and [`load`] use unless told otherwise.
pub const TASK_HISTORY_CHECKPOINT: &str = "curator.task_history";

/// Saves `history` as a new version of the checkpoint `name`, returning the version.
///
/// # Examples
///
/// ```
/// use curator::session::MemoryStore;
/// use curator::tasks::{TASK_HISTORY_CHECKPOINT, TaskHistory, load, save};
///
/// let store = MemoryStore::new();
/// let history = TaskHistory::new("Ship", [(1, "Test")])?;
/// assert_eq!(save(&store, TASK_HISTORY_CHECKPOINT, &history)?, 1);
/// assert_eq!(load(&store, TASK_HISTORY_CHECKPOINT)?, Some(history));
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
///
/// [`Error::Store`] when the store fails; [`Error::Document`] when the history cannot be
/// written as JSON.
pub fn save(store: &dyn SessionStore, name: &str, history: &TaskHistory) -> Result<u64> {
    let document = serde_json::to_value(history)
        .map_err(|source| Error::Document { name: name.to_owned(), source })?;
    store
        .put_checkpoint(name, &document)
        .map_err(|source| Error::Store { name: name.to_owned(), source })
}

/// Loads the latest version of the checkpoint `name`, or `None` when there is none.
///
/// # Examples
///
/// ```
/// use curator::session::MemoryStore;
/// use curator::tasks::load;
///
/// assert_eq!(load(&MemoryStore::new(), "nothing here")?, None);
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
///
/// [`Error::Store`] when the store fails; [`Error::Document`] when the checkpoint does not
/// hold a task history; [`Error::DuplicateStep`] or [`Error::UnknownStep`] when it holds one
/// that breaks the history's rules.
pub fn load(store: &dyn SessionStore, name: &str) -> Result<Option<TaskHistory>> {
    let Some(checkpoint) =
        store.checkpoint(name).map_err(|source| Error::Store { name: name.to_owned(), source })?
    else {
        return Ok(None);
    };
    let history: TaskHistory = serde_json::from_value(checkpoint.document)
        .map_err(|source| Error::Document { name: name.to_owned(), source })?;
    // A document edited by hand or by another program gets the reducer's checks: unique
    // steps, an active step that exists.
    history.check()?;
    Ok(Some(history))
}
