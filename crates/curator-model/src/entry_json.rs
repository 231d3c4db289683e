//! A fast writer of an [`Entry`]'s JSON, byte for byte what `serde_json` writes.
//!
//! Stores write entries mostly made of message text, and `serde_json` escapes strings a byte
//! at a time. [`Entry::write_json`] escapes eight bytes at a time and writes the common shapes
//! by hand (text or no content, tool calls and results, no provider fields); anything else
//! goes through serde. It sits beside the serde shape it mirrors; a property test holds the
//! two to the same bytes.

use std::fmt::Write as _;

use chrono::SecondsFormat;

use crate::{Content, Entry, Message};

impl Entry {
    /// Appends this entry's JSON to `out`: exactly the text `serde_json::to_string` gives,
    /// written several times faster for entries of text, tool calls and tool results.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::model::{Entry, EvaluationId, Message};
    ///
    /// let entry = Entry::builder(EvaluationId::new(), Message::user("say \"hi\"\n")).build()?;
    /// let mut json = String::new();
    /// entry.write_json(&mut json)?;
    /// assert_eq!(json, serde_json::to_string(&entry)?);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// The error of `serde_json` when an entry outside the common shapes cannot be written
    /// (a provider field holding a map with non-string keys, which no reader produces).
    pub fn write_json(&self, out: &mut String) -> Result<(), serde_json::Error> {
        if !simple(&self.message) {
            out.push_str(&serde_json::to_string(self)?);
            return Ok(());
        }
        let _ = write!(
            out,
            "{{\"id\":\"{}\",\"evaluation_id\":\"{}\",\"sequence\":{},\"turn\":{}",
            self.id, self.evaluation_id, self.sequence, self.turn
        );
        if let Some(prompt) = &self.prompt {
            out.push_str(",\"prompt\":{\"ns\":");
            write_json_string(out, &prompt.ns);
            out.push_str(",\"key\":");
            write_json_string(out, &prompt.key);
            out.push('}');
        }
        out.push_str(",\"created_at\":\"");
        out.push_str(&self.created_at.to_rfc3339_opts(SecondsFormat::AutoSi, true));
        out.push_str("\",\"message\":");
        write_message(out, &self.message);
        out.push('}');
        Ok(())
    }
}

/// Whether the hand-written path covers this message: every field it writes, in serde's
/// order, and none it does not.
fn simple(m: &Message) -> bool {
    m.extra().is_none()
        && !matches!(m.content(), Some(Content::Parts(_)))
        && m.tool_calls().iter().all(|c| c.extra().is_none())
}

fn write_message(out: &mut String, m: &Message) {
    out.push_str("{\"role\":\"");
    out.push_str(m.role().as_str());
    out.push('"');
    if !m.content_omitted() {
        out.push_str(",\"content\":");
        match m.content() {
            Some(Content::Text(text)) => write_json_string(out, text),
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
            write_json_string(out, call.id());
            out.push_str(",\"name\":");
            write_json_string(out, call.name());
            out.push_str(",\"arguments\":");
            write_json_string(out, call.arguments());
            out.push('}');
        }
        out.push(']');
    }
    if let Some(id) = m.tool_call_id() {
        out.push_str(",\"tool_call_id\":");
        write_json_string(out, id);
    }
    if let Some(name) = m.name() {
        out.push_str(",\"name\":");
        write_json_string(out, name);
    }
    if let Some(flag) = m.is_error_field() {
        out.push_str(if flag { ",\"is_error\":true" } else { ",\"is_error\":false" });
    }
    if m.starts_turn() {
        out.push_str(",\"starts_turn\":true");
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

/// Appends `s` as a JSON string, escaped exactly as `serde_json` escapes it.
///
/// # Examples
///
/// ```
/// let mut out = String::new();
/// curator::model::write_json_string(&mut out, "tab\there \"quoted\"");
/// assert_eq!(out, serde_json::to_string("tab\there \"quoted\"")?);
/// # Ok::<(), serde_json::Error>(())
/// ```
pub fn write_json_string(out: &mut String, s: &str) {
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
            write_json_string(&mut ours, text);
            assert_eq!(ours, serde_json::to_string(text).unwrap(), "{text:?}");
        }
    }
}
