//! The snapshot JSON format (its name and version) and a fast writer of it, byte-for-byte
//! what serde writes.
//!
//! Entries are written by [`Entry::write_json`], serde's bytes written several times faster.
//!
//! The writer puts each entry on a line of its own (JSON allows the whitespace, and an entry
//! never contains a raw newline: newlines in text are escaped), so that [`read`] can split the
//! entries and parse them on all cores. A document laid out otherwise is read by serde alone.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use curator_model::{Entry, EvaluationId, write_json_string as escape};

use crate::{Checkpoint, Error, Result, SessionKey, StoreErrorKind};

/// What a snapshot document holds, as [`read`] found it (its version not checked yet).
#[derive(Debug, PartialEq)]
pub(crate) struct Parts {
    /// The document's `version`.
    pub(crate) version: u32,
    pub(crate) entries: Vec<Entry>,
    pub(crate) sessions: BTreeMap<EvaluationId, SessionKey>,
    pub(crate) checkpoints: Vec<Checkpoint>,
}

/// The `format` field of every snapshot.
pub const SNAPSHOT_FORMAT: &str = "curator.session.snapshot";
/// The snapshot version this build writes; it also reads version 1 (before session keys).
pub const SNAPSHOT_VERSION: u32 = 2;

/// Writes a whole snapshot; `bytes` is a guess at its size. Large snapshots are written on
/// several threads, each writing a run of entries, then joined in order. Only session keys
/// other than the default are listed.
pub(crate) fn write<'a>(
    entries: impl Iterator<Item = &'a Entry>,
    sessions: &BTreeMap<EvaluationId, SessionKey>,
    checkpoints: &[Checkpoint],
    bytes: usize,
) -> Result<String> {
    let entries: Vec<&Entry> = entries.collect();
    let threads = std::thread::available_parallelism()
        .map_or(1, usize::from)
        .min(4)
        .min(entries.len() / 256 + 1);
    let chunk = entries.len().div_ceil(threads.max(1)).max(1);
    let write_run = |run: &[&Entry], capacity: usize| -> Result<String> {
        let mut out = String::with_capacity(capacity);
        for entry in run {
            out.push('\n');
            write_entry(&mut out, entry)?;
            out.push(',');
        }
        Ok(out)
    };
    let runs: Vec<Result<String>> = if threads <= 1 {
        vec![write_run(&entries, bytes)]
    } else {
        let per_run = bytes / threads + 1;
        std::thread::scope(|scope| {
            let handles: Vec<_> = entries
                .chunks(chunk)
                .map(|run| scope.spawn(move || write_run(run, per_run)))
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join().unwrap_or_else(|_| {
                        Err(Error::store(
                            "snapshot",
                            StoreErrorKind::Other,
                            "a snapshot writer thread failed",
                            None,
                        ))
                    })
                })
                .collect()
        })
    };
    let mut out = String::with_capacity(bytes + 256);
    out.push_str("{\"format\":");
    escape(&mut out, SNAPSHOT_FORMAT);
    let _ = write!(out, ",\"version\":{SNAPSHOT_VERSION},\"entries\":[");
    for run in runs {
        out.push_str(&run?);
    }
    // Every entry was followed by a comma; the last one must not be.
    if out.ends_with(',') {
        out.pop();
    }
    out.push_str("\n],\"sessions\":{");
    for (i, (evaluation, key)) in sessions.iter().filter(|(_, k)| !k.is_default()).enumerate() {
        if i > 0 {
            out.push(',');
        }
        let _ = write!(out, "\"{evaluation}\":");
        escape(&mut out, key.as_str());
    }
    out.push_str("},\"checkpoints\":");
    out.push_str(&serde(checkpoints)?);
    out.push('}');
    Ok(out)
}

/// The end of a snapshot document, after its entries.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Tail {
    #[serde(default)]
    sessions: BTreeMap<EvaluationId, SessionKey>,
    checkpoints: Vec<Checkpoint>,
}

/// Reads a document laid out by [`write`] (or by its version 1), parsing its entries on
/// several threads; `None` when the layout is not this writer's, or when anything in it is
/// not exactly what serde would accept (the caller then reads it with serde, which accepts or
/// refuses it and says where). So this reader never accepts a text serde refuses, and reads
/// what it accepts as serde would: every entry line but the last ends with one comma, the
/// last with none, and each line is one entry as serde reads it.
pub(crate) fn read(json: &str) -> Option<Parts> {
    let (version, body) = [SNAPSHOT_VERSION, 1].into_iter().find_map(|version| {
        let head =
            format!("{{\"format\":\"{SNAPSHOT_FORMAT}\",\"version\":{version},\"entries\":[");
        json.strip_prefix(head.as_str()).map(|body| (version, body))
    })?;
    let end = body.rfind("\n],")?;
    // Every entry starts a line: anything before the first newline is another layout.
    if end > 0 && !body.starts_with('\n') {
        return None;
    }
    let tail = body.get(end + 3..)?; // `"sessions":{…},"checkpoints":[…]}`
    let tail: Tail = serde_json::from_str(&format!("{{{tail}")).ok()?;
    let mut lines: Vec<&str> = body[..end].split('\n').skip(1).collect();
    // Commas: one after every entry but the last, none after the last.
    if let Some((last, rest)) = lines.split_last_mut() {
        for line in rest {
            *line = line.strip_suffix(',')?;
        }
        if last.ends_with(',') {
            return None;
        }
    }
    let threads = std::thread::available_parallelism()
        .map_or(1, usize::from)
        .min(4)
        .min(lines.len() / 256 + 1);
    let chunk = lines.len().div_ceil(threads.max(1)).max(1);
    let parse = |part: &[&str]| {
        part.iter().map(|l| serde_json::from_str::<Entry>(l).ok()).collect::<Option<Vec<_>>>()
    };
    let parts: Vec<Option<Vec<Entry>>> = if threads <= 1 {
        vec![parse(&lines)]
    } else {
        std::thread::scope(|scope| {
            let handles: Vec<_> =
                lines.chunks(chunk).map(|part| scope.spawn(move || parse(part))).collect();
            handles.into_iter().map(|h| h.join().ok().flatten()).collect()
        })
    };
    let mut entries = Vec::with_capacity(lines.len());
    for part in parts {
        entries.extend(part?);
    }
    Some(Parts { version, entries, sessions: tail.sessions, checkpoints: tail.checkpoints })
}

fn serde<T: serde::Serialize + ?Sized>(value: &T) -> Result<String> {
    serde_json::to_string(value).map_err(|e| {
        Error::store("snapshot", StoreErrorKind::Other, "serialising", Some(Box::new(e)))
    })
}

fn write_entry(out: &mut String, entry: &Entry) -> Result<()> {
    entry.write_json(out).map_err(|e| {
        Error::store("snapshot", StoreErrorKind::Other, "serialising", Some(Box::new(e)))
    })
}
