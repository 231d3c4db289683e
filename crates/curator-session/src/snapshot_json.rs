//! The snapshot JSON format (its name and version) and a fast writer of it, byte-for-byte
//! what serde writes.
//!
//! Snapshots are mostly message text, and `serde_json` escapes strings a byte at a time. This
//! writer escapes eight bytes at a time and writes the common entry shapes by hand (text or
//! no content, tool calls and results, no provider fields); anything else goes through serde.
//! A test checks that both give the same JSON value.
//!
//! The writer puts each entry on a line of its own (JSON allows the whitespace, and an entry
//! never contains a raw newline: newlines in text are escaped), so that [`read`] can split the
//! entries and parse them on all cores. A document laid out otherwise is read by serde alone.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use chrono::SecondsFormat;
use curator_model::{Content, Entry, EvaluationId, Message};

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

/// Whether the hand-written path covers this message.
fn simple(m: &Message) -> bool {
    m.extra().is_none()
        && !matches!(m.content(), Some(Content::Parts(_)))
        && m.tool_calls().iter().all(|c| c.extra().is_none())
}

fn write_entry(out: &mut String, e: &Entry) -> Result<()> {
    if !simple(&e.message) {
        out.push_str(&serde(e)?);
        return Ok(());
    }
    let _ = write!(
        out,
        "{{\"id\":\"{}\",\"evaluation_id\":\"{}\",\"sequence\":{},\"turn\":{}",
        e.id, e.evaluation_id, e.sequence, e.turn
    );
    if let Some(prompt) = &e.prompt {
        out.push_str(",\"prompt\":{\"ns\":");
        escape(out, &prompt.ns);
        out.push_str(",\"key\":");
        escape(out, &prompt.key);
        out.push('}');
    }
    out.push_str(",\"created_at\":\"");
    out.push_str(&e.created_at.to_rfc3339_opts(SecondsFormat::AutoSi, true));
    out.push_str("\",\"message\":");
    write_message(out, &e.message);
    out.push('}');
    Ok(())
}

fn write_message(out: &mut String, m: &Message) {
    out.push_str("{\"role\":\"");
    out.push_str(m.role().as_str());
    out.push('"');
    if !m.content_omitted() {
        out.push_str(",\"content\":");
        match m.content() {
            Some(Content::Text(text)) => escape(out, text),
            _ => out.push_str("null"),
        }
    }
    if m.has_tool_calls() {
        out.push_str(",\"tool_calls\":[");
        for (i, call) in m.tool_calls().iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str("{\"id\":");
            escape(out, call.id());
            out.push_str(",\"name\":");
            escape(out, call.name());
            out.push_str(",\"arguments\":");
            escape(out, call.arguments());
            out.push('}');
        }
        out.push(']');
    }
    if let Some(id) = m.tool_call_id() {
        out.push_str(",\"tool_call_id\":");
        escape(out, id);
    }
    if let Some(name) = m.name() {
        out.push_str(",\"name\":");
        escape(out, name);
    }
    if let Some(flag) = m.is_error_field() {
        out.push_str(if flag { ",\"is_error\":true" } else { ",\"is_error\":false" });
    }
    out.push('}');
}

/// Whether any of eight bytes is a control character, `"` or `\`.
fn needs_escape(chunk: u64) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let has_zero = |v: u64| v.wrapping_sub(ONES) & !v & HIGHS != 0;
    let below_space = chunk.wrapping_sub(ONES * 0x20) & !chunk & HIGHS != 0;
    below_space
        || has_zero(chunk ^ (ONES * u64::from(b'"')))
        || has_zero(chunk ^ (ONES * u64::from(b'\\')))
}

/// Writes `s` as a JSON string, escaping exactly as `serde_json` does.
fn escape(out: &mut String, s: &str) {
    out.push('"');
    let bytes = s.as_bytes();
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        if let Some(chunk) = bytes.get(i..i + 8).and_then(|c| <[u8; 8]>::try_from(c).ok())
            && !needs_escape(u64::from_le_bytes(chunk))
        {
            i += 8;
            continue;
        }
        let b = bytes[i];
        let escaped: Option<&str> = match b {
            b'"' => Some("\\\""),
            b'\\' => Some("\\\\"),
            b'\n' => Some("\\n"),
            b'\r' => Some("\\r"),
            b'\t' => Some("\\t"),
            0x08 => Some("\\b"),
            0x0c => Some("\\f"),
            0..=0x1f => None,
            _ => {
                i += 1;
                continue;
            }
        };
        // Escaped bytes are ASCII, so `start..i` falls on character boundaries.
        out.push_str(&s[start..i]);
        match escaped {
            Some(text) => out.push_str(text),
            None => {
                let _ = write!(out, "\\u{b:04x}");
            }
        }
        i += 1;
        start = i;
    }
    out.push_str(&s[start..]);
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_matches_serde_json() {
        let all_bytes: String = (0u8..0x80).map(char::from).collect();
        for text in [
            "",
            "plain",
            "tab\there \"quoted\" back\\slash",
            "é中😀\n\r\u{7f}\u{1}\u{1f}",
            all_bytes.as_str(),
            &"x".repeat(33),
        ] {
            let mut ours = String::new();
            escape(&mut ours, text);
            assert_eq!(ours, serde_json::to_string(text).unwrap(), "{text:?}");
        }
    }
}
