//! Derived texts the rules also read: the text with its JSON escapes decoded, and with tokens
//! wrapped across lines joined, each mapping what is found back to the original span.

/// A text derived from an original, with the original span of each of its characters.
#[derive(Debug)]
pub(crate) struct Derived {
    text: String,
    /// For each byte of `text`: where the character holding it starts in the original, or
    /// `GAP` for a separator between two pieces that are not next to each other there.
    starts: Vec<usize>,
    /// For each byte offset of `text`: where the character before it ends in the original.
    ends: Vec<usize>,
    kind: Kind,
    /// Whether escapes were decoded on the way from the original.
    decoded: bool,
}

/// Stands for no position: a separator between two pieces of a derived text.
const GAP: usize = usize::MAX;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Unescaped,
    Joined,
}

impl Derived {
    fn new(kind: Kind, capacity: usize) -> Self {
        Self {
            text: String::with_capacity(capacity),
            starts: Vec::with_capacity(capacity + 1),
            ends: vec![GAP],
            kind,
            decoded: kind == Kind::Unescaped,
        }
    }

    /// Appends `c`, which stands for `original[start..end]`.
    fn push(&mut self, c: char, start: usize, end: usize) {
        self.text.push(c);
        for _ in 0..c.len_utf8() {
            self.starts.push(start);
            self.ends.push(GAP);
        }
        if let Some(last) = self.ends.last_mut() {
            *last = end;
        }
    }

    /// Separates two pieces: nothing found across it is kept.
    fn gap(&mut self) {
        self.push('\n', GAP, GAP);
    }

    /// The derived text.
    pub(crate) fn text(&self) -> &str {
        &self.text
    }

    /// The span of `original` that `start..end` of the derived text stands for, if it is one
    /// that can be replaced: it crosses no gap, and it changes something that the original
    /// alone could not show (a decoded escape, a joined line) or comes from a decoded text;
    /// a secret found in decoded JSON does not take a quote that ends the string with it.
    pub(crate) fn original_span(
        &self,
        original: &str,
        start: usize,
        end: usize,
    ) -> Option<(usize, usize)> {
        let from = *self.starts.get(start)?;
        let to = *self.ends.get(end)?;
        if from == GAP || to == GAP || to <= from {
            return None;
        }
        // Every character in between must come from the original, in order.
        if self.starts[start..end].contains(&GAP) {
            return None;
        }
        let span = original.get(from..to)?;
        if self.decoded && has_structural_quote(span) {
            return None;
        }
        // A joined finding matters only where it crosses a line break, written or escaped.
        if self.kind == Kind::Joined && !span.contains('\n') && !span.contains("\\n") {
            return None;
        }
        Some((from, to))
    }
}

/// The texts the rules read besides `text`: its decoded lines, its joined wraps, and within
/// the decoded lines a second level of escapes (JSON text held in a JSON string) and wraps
/// written as `\n`.
pub(crate) fn derived(text: &str) -> Vec<Derived> {
    let mut out = Vec::new();
    if let Some(decoded) = unescaped(text) {
        for inner in [unescaped(decoded.text()), joined(decoded.text())].into_iter().flatten() {
            out.push(decoded.compose(&inner));
        }
        out.push(decoded);
    }
    out.extend(joined(text));
    out
}

impl Derived {
    /// `inner`, a text derived from this one, as derived from the original.
    fn compose(&self, inner: &Self) -> Self {
        let through = |map: &[usize], at: usize| map.get(at).copied().unwrap_or(GAP);
        Self {
            text: inner.text.clone(),
            starts: inner.starts.iter().map(|&at| through(&self.starts, at)).collect(),
            ends: inner.ends.iter().map(|&at| through(&self.ends, at)).collect(),
            kind: inner.kind,
            decoded: true,
        }
    }
}

/// Whether `span` holds a `"` that is not escaped (it would end a JSON string).
fn has_structural_quote(span: &str) -> bool {
    let mut escaped = false;
    for c in span.chars() {
        match c {
            '\\' => escaped = !escaped,
            '"' if !escaped => return true,
            _ => escaped = false,
        }
    }
    false
}

/// Where a secret found to end at `end` of `text` ends, so that replacing it keeps JSON
/// text valid and takes all of the value: not after half an escape (a lone `\\` before a
/// `\"`), and not before an escaped quote inside the value (see
/// [`extend_over_escaped_quote`]).
pub(crate) fn whole_value_end(text: &str, end: usize) -> usize {
    let backslashes = text[..end].bytes().rev().take_while(|&b| b == b'\\').count();
    let end = if backslashes % 2 == 1 { end - 1 } else { end };
    extend_over_escaped_quote(text, end)
}

/// Where a secret ending at `end` of `original` really ends: a secret cut short by an
/// escaped quote (`p4ss\"w0rd` in JSON) goes on to the end of the string value, unless the
/// quote closes a quoted value (`PASSWORD=\"x\" &&`).
fn extend_over_escaped_quote(original: &str, end: usize) -> usize {
    let rest = &original[end..];
    let Some(after) = rest.strip_prefix("\\\"") else { return end };
    if after.chars().next().is_none_or(|c| c.is_whitespace() || ",;)}]\\\"".contains(c)) {
        return end;
    }
    let mut at = end + 2;
    let mut escaped = false;
    for (i, c) in after.char_indices() {
        match c {
            '\\' => escaped = !escaped,
            '"' if !escaped => return end + 2 + i,
            c if c.is_whitespace() => return end + 2 + i,
            _ => escaped = false,
        }
        at = end + 2 + i + c.len_utf8();
    }
    at
}

/// Whether `text` holds an escape that can cut a secret or hide its context: `\/`, `\"`,
/// `\\` or `\u…`. Escaped line breaks and tabs alone (code in a JSON string) end a secret
/// where the original already does, and are left to the reading of the original.
fn has_cutting_escape(text: &str) -> bool {
    let bytes = text.as_bytes();
    memchr::memchr_iter(b'\\', bytes)
        .any(|i| bytes.get(i + 1).is_some_and(|next| b"/\"\\u".contains(next)))
}

/// Whether `text` holds an escaped line break (`\n`) that looks like a wrap (see [`joined`]).
fn has_escaped_wrap(text: &str) -> bool {
    let bytes = text.as_bytes();
    let mut escaped_breaks =
        memchr::memchr_iter(b'\\', bytes).filter(|&i| bytes.get(i + 1) == Some(&b'n'));
    escaped_breaks.any(|i| {
        let before = before_bytes(text, i);
        let rest = text[i + 2..].trim_start_matches([' ', '\t']);
        let after = rest.chars().take_while(|&c| is_token_char(c)).count();
        before >= MIN_BEFORE_WRAP
            && after >= MIN_AFTER_WRAP
            && looks_random(&text[i - before..i], rest)
    })
}

/// Whether a line of `text` is worth reading decoded.
fn worth_decoding(line: &str) -> bool {
    has_cutting_escape(line) || has_escaped_wrap(line)
}

/// The lines of `text` that hold JSON escapes which can cut a secret (or an escaped line
/// break that looks like a wrap), decoded (every escape, `\n` and `\u0069` included), or
/// `None` when there is none.
pub(crate) fn unescaped(text: &str) -> Option<Derived> {
    if !worth_decoding(text) {
        return None;
    }
    let mut out = Derived::new(Kind::Unescaped, text.len());
    let mut offset = 0;
    // Where the last line taken ends: a line that follows on needs no separator.
    let mut taken_to = 0;
    for line in text.split_inclusive('\n') {
        if worth_decoding(line) {
            if !out.text.is_empty() && taken_to != offset {
                out.gap();
            }
            decode_line(line, offset, &mut out);
            taken_to = offset + line.len();
        }
        offset += line.len();
    }
    Some(out)
}

/// Appends `line` (at `offset` in the original) with its JSON escapes decoded.
fn decode_line(line: &str, offset: usize, out: &mut Derived) {
    let bytes = line.as_bytes();
    let mut chars = line.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let start = offset + i;
        if c != '\\' {
            out.push(c, start, start + c.len_utf8());
            continue;
        }
        let decoded = match bytes.get(i + 1) {
            Some(b'/') => Some(('/', 2)),
            Some(b'"') => Some(('"', 2)),
            Some(b'\\') => Some(('\\', 2)),
            Some(b'b') => Some(('\u{8}', 2)),
            Some(b'f') => Some(('\u{c}', 2)),
            Some(b'n') => Some(('\n', 2)),
            Some(b'r') => Some(('\r', 2)),
            Some(b't') => Some(('\t', 2)),
            Some(b'u') => decode_unicode(&line[i..]),
            _ => None,
        };
        match decoded {
            Some((d, len)) => {
                out.push(d, start, start + len);
                // Skip the rest of the escape (all ASCII).
                for _ in 1..len {
                    chars.next();
                }
            }
            None => out.push(c, start, start + 1),
        }
    }
}

/// A `\uXXXX` escape (or a surrogate pair of two) at the start of `s`: the character and
/// the escape's length in bytes.
fn decode_unicode(s: &str) -> Option<(char, usize)> {
    let unit = |at: usize| -> Option<u32> {
        let hex = s.get(at..at + 6)?.strip_prefix("\\u")?;
        u32::from_str_radix(hex, 16).ok()
    };
    let first = unit(0)?;
    if (0xD800..0xDC00).contains(&first) {
        let second = unit(6)?;
        if !(0xDC00..0xE000).contains(&second) {
            return None;
        }
        let c = char::from_u32(0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00))?;
        return Some((c, 12));
    }
    Some((char::from_u32(first)?, 6))
}

/// A character a wrapped token is made of (base64, hex, URL-safe tokens, `key=value`).
fn is_token_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || "_-+/=.%".contains(c)
}

/// The length in bytes of the run of token characters that ends at `end` of `text`.
fn before_bytes(text: &str, end: usize) -> usize {
    text[..end].chars().rev().take_while(|&c| is_token_char(c)).map(char::len_utf8).sum()
}

/// Whether the token ending a line (`before`) and the one starting the next (the start of
/// `after`) look like the two halves of a secret rather than words or identifiers: together
/// they hold a digit and a letter. A random 20-character secret lacks a digit about 3 times
/// in 100; code and prose wrapped at a word mostly do.
fn looks_random(before: &str, after: &str) -> bool {
    let after = after.split(|c: char| !is_token_char(c)).next().unwrap_or_default();
    let both = || before.chars().chain(after.chars());
    both().any(|c| c.is_ascii_digit()) && both().any(|c| c.is_ascii_alphabetic())
}

/// Whether a line (from its token on, `rest` running to the end of the text) can be the rest
/// of a token wrapped onto it: the token ends at the end of the line or at a closing quote,
/// bracket, comma, semicolon or line continuation (not at a `:` as a header's name does), or
/// at a space when it holds a digit and a letter itself, and it is no `name=value` assignment (an `=`
/// inside it, not base64's padding at its end). An environment file's next `KEY=value`
/// line, or a header's next `Name: value`, is a line of its own.
fn continues(rest: &str) -> bool {
    let line = rest.split(['\r', '\n']).next().unwrap_or_default();
    let token: &str = line.split(|c: char| !is_token_char(c)).next().unwrap_or_default();
    if token.trim_end_matches('=').contains('=') {
        return false;
    }
    let after = &line[token.len()..];
    if after.is_empty() || after.starts_with(|c: char| "\"'`,;)]}\\".contains(c)) {
        return true;
    }
    // Words after it: only a token that looks random alone (a digit and a letter) is read
    // as a wrap's rest, not a word that opens a sentence.
    after.starts_with(char::is_whitespace)
        && token.chars().any(|c| c.is_ascii_digit())
        && token.chars().any(|c| c.is_ascii_alphabetic())
}

/// Shortest run of token characters before a line break for the break to count as a wrap:
/// a shorter one is a word ending a line, not a token cut by a terminal or a formatter.
const MIN_BEFORE_WRAP: usize = 8;
/// Shortest run of token characters after the break (and its indentation).
const MIN_AFTER_WRAP: usize = 4;

/// The chains of lines that a long token seems to run across, each joined into one line
/// (the break and the next line's indentation dropped), or `None` when no line break looks
/// like a wrap.
pub(crate) fn joined(text: &str) -> Option<Derived> {
    let bytes = text.as_bytes();
    // (where the break starts, where the next line's token starts) of each wrap.
    let mut wraps: Vec<(usize, usize)> = Vec::new();
    for (i, _) in text.match_indices('\n') {
        let mut cut = if i > 0 && bytes[i - 1] == b'\r' { i - 1 } else { i };
        // A shell's line continuation (`…\` then the break) is part of the break.
        if cut > 0 && bytes[cut - 1] == b'\\' {
            cut -= 1;
        }
        let before = text[..cut].chars().rev().take_while(|&c| is_token_char(c)).count();
        if before < MIN_BEFORE_WRAP {
            continue;
        }
        let indent = text[i + 1..].bytes().take_while(|&b| b == b' ' || b == b'\t').count();
        let next = i + 1 + indent;
        let after = text[next..].chars().take_while(|&c| is_token_char(c)).count();
        if before >= MIN_BEFORE_WRAP
            && after >= MIN_AFTER_WRAP
            && continues(&text[next..])
            && looks_random(&text[cut - before_bytes(text, cut)..cut], &text[next..])
        {
            wraps.push((cut, next));
        }
    }
    if wraps.is_empty() {
        return None;
    }
    let mut out = Derived::new(Kind::Joined, text.len().min(4096));
    let mut k = 0;
    while k < wraps.len() {
        // A chain: from the start of the line before the first wrap to the end of the line
        // after the last wrap that follows on.
        let from = text[..wraps[k].0].rfind('\n').map_or(0, |n| n + 1);
        let mut pieces = vec![(from, wraps[k].0)];
        let mut next = wraps[k].1;
        while k + 1 < wraps.len() && !text[next..wraps[k + 1].0].contains('\n') {
            k += 1;
            pieces.push((next, wraps[k].0));
            next = wraps[k].1;
        }
        let to = text[next..].find(['\r', '\n']).map_or(text.len(), |n| next + n);
        pieces.push((next, to));
        if !out.text.is_empty() {
            out.gap();
        }
        for (start, end) in pieces {
            for (i, c) in text[start..end].char_indices() {
                out.push(c, start + i, start + i + c.len_utf8());
            }
        }
        k += 1;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check_unescaped(text: &str, expected: &str) {
        let view = unescaped(text).unwrap();
        assert_eq!(view.text(), expected);
    }

    #[test]
    fn escapes_are_decoded_and_mapped_back() {
        check_unescaped(r#"{"k": "a\/b\"c\u0069\ud83d\ude00"}"#, "{\"k\": \"a/b\"ci\u{1F600}\"}");
        assert!(unescaped("no escapes here").is_none());
        let text = r#"{"k": "sk_l\u0069ve_x"}"#;
        let view = unescaped(text).unwrap();
        let at = view.text().find("sk_live_x").unwrap();
        let span = view.original_span(text, at, at + "sk_live_x".len()).unwrap();
        assert_eq!(&text[span.0..span.1], r"sk_l\u0069ve_x");
        // A finding that would take the closing quote of a string is not kept.
        let quote = view.text().find("\"}").unwrap();
        assert!(view.original_span(text, at, quote + 1).is_none());
    }

    #[test]
    fn a_secret_cut_by_an_escaped_quote_goes_on_to_the_end_of_the_value() {
        let text = r#"{"password": "Xk9#mQ2\"vL7pR4tW", "n": 1}"#;
        let end = text.find(r#"\""#).unwrap();
        let to = extend_over_escaped_quote(text, end);
        assert_eq!(&text[end..to], r#"\"vL7pR4tW"#);
        let closing = r#"PASSWORD=\"s3cr3t\" && run"#;
        let end = closing.find(r#"\" "#).unwrap();
        assert_eq!(extend_over_escaped_quote(closing, end), end);
    }

    #[test]
    fn json_in_a_json_string_and_wraps_written_as_escapes_are_read_too() {
        // JSON text held in a JSON string: two levels of escapes.
        let text = r#"{"output": "{\"key\": \"a\\/b\"}"}"#;
        let views = derived(text);
        let nested = views.iter().find(|v| v.text().contains(r#"{"key": "a/b"}"#)).unwrap();
        let at = nested.text().find("a/b").unwrap();
        let (from, to) = nested.original_span(text, at, at + 3).unwrap();
        assert_eq!(&text[from..to], r"a\\/b");
        // A token wrapped with an escaped line break.
        let text = r#"{"output": "T=ghp_R4nd0mT0k3nV4lu3\n    ThatIsThirtySix12345"}"#;
        let views = derived(text);
        let joined = views.iter().find(|v| v.text().contains("V4lu3That")).unwrap();
        let at = joined.text().find("ghp_").unwrap();
        let (from, to) = joined.original_span(text, at, at + 40).unwrap();
        assert_eq!(&text[from..to], r"ghp_R4nd0mT0k3nV4lu3\n    ThatIsThirtySix12345");
    }

    #[test]
    fn wrapped_tokens_are_joined() {
        let text = "a line\nexport T=ghp_R4nd0mT0k3nV4lu3\n    ThatIsThirtySix12345\nend";
        let view = joined(text).unwrap();
        assert_eq!(view.text(), "export T=ghp_R4nd0mT0k3nV4lu3ThatIsThirtySix12345");
        let at = view.text().find("ghp_").unwrap();
        let (from, to) = view.original_span(text, at, view.text().len()).unwrap();
        assert_eq!(&text[from..to], "ghp_R4nd0mT0k3nV4lu3\n    ThatIsThirtySix12345");
        // Found within one line: left to the reading of the original.
        assert!(view.original_span(text, at, at + 8).is_none());
        assert!(joined("short\nlines\nonly").is_none());
        // A token closed by a quote and a comma on its last line is wrapped too.
        let quoted = "{\"key\": \"ghp_R4nd0mT0k3nV4lu3\n  ThatIsThirtySix12345\",\n}";
        assert!(joined(quoted).is_some());
    }

    #[test]
    fn lines_of_their_own_are_not_wraps() {
        // `KEY=value` lines of an environment file, a header after a header, a word after.
        for text in [
            "DB_PASSWORD=s3cretpass99\nDB_HOST=db1.internal\nDB_PORT=5432\nDB_USER=app2user",
            "HOME=/root\nOPENAI_API_KEY=sk-proj-abcdefgh12345678\nPATH=/usr/bin\nnext",
            "Authorization: Bearer abcdef0123456789abcdef\nContent-Type: application/json",
            "value=abc123def456ghi\nthen some words follow",
        ] {
            assert!(joined(text).is_none(), "{text:?}");
        }
    }
}
