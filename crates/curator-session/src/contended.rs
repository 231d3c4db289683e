//! Appending at the end of a record that other writers append to at the same time.

use curator_model::Entry;

use crate::{Error, SessionKey, SessionStore, StoreErrorKind};

/// Appends the entries `make` builds at the end of `key`'s record, while other processes may
/// append to the same evaluation: when another writer took the sequence first
/// ([`Error::SequenceTaken`]) or held the store ([`StoreErrorKind::Busy`]), it waits a
/// little (longer after each attempt, by an amount that differs between processes, so that
/// writers that keep colliding drift apart) and calls `make` again, which reads what the
/// others wrote and numbers its entries after them. Returns the entries appended, or
/// `None` when `attempts` attempts all collided (nothing of the batch is recorded then).
///
/// # Examples
///
/// ```
/// use curator::model::{Entry, EvaluationId, Message, Role};
/// use curator::session::{MemoryStore, SessionKey, SessionStore, append_at_end, next_turn};
///
/// let store = MemoryStore::new();
/// let key = SessionKey::new("shared");
/// let evaluation = EvaluationId::new();
/// for text in ["first", "second"] {
///     let appended = append_at_end(&store, &key, 8, || {
///         // Read what is there now, and number the new entry after it.
///         let record = store.entries(evaluation)?;
///         let sequence = record.last().map_or(0, |e| e.sequence + 1);
///         let turn = next_turn(record.last().map_or(0, |e| e.turn), None, Role::User);
///         Ok::<_, curator::session::Error>(vec![
///             Entry::builder(evaluation, Message::user(text)).sequence(sequence).turn(turn).build()?,
///         ])
///     })?;
///     assert!(appended.is_some());
/// }
/// assert_eq!(store.entries(evaluation)?.len(), 2);
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
///
/// `make`'s errors, and the store's other errors (converted).
pub fn append_at_end<S, E>(
    store: &S,
    key: &SessionKey,
    attempts: u32,
    mut make: impl FnMut() -> Result<Vec<Entry>, E>,
) -> Result<Option<Vec<Entry>>, E>
where
    S: SessionStore + ?Sized,
    E: From<Error>,
{
    for attempt in 0..attempts {
        if attempt > 0 {
            back_off(attempt);
        }
        let entries = make()?;
        match store.append_batch(key, &entries) {
            Ok(_) => return Ok(Some(entries)),
            Err(Error::SequenceTaken { .. } | Error::Store { kind: StoreErrorKind::Busy, .. }) => {}
            Err(error) => return Err(error.into()),
        }
    }
    Ok(None)
}

/// Waits a little before trying an append again: 200 µs more after each attempt (up to
/// 2 ms), plus up to 1 ms that differs between processes and moments.
fn back_off(attempt: u32) {
    let jitter = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos() ^ std::process::id())
        % 1_000;
    let micros = u64::from(attempt.min(10)) * 200 + u64::from(jitter);
    std::thread::sleep(std::time::Duration::from_micros(micros));
}
