//! Distinctive terms: the identifiers, paths, numbers and quoted values a conversation
//! refers back to.
//!
//! Long agent runs come back to the file path read forty steps ago, the id a tool returned
//! early, the error the agent is still fixing. [`terms`] picks such terms out of text by a
//! fixed, documented rule (no model, no vocabulary), and [`message_terms`] out of everything a
//! message shows the model. `curator replay` measures *evidence kept* with them.

use std::borrow::Cow;
use std::cell::Cell;
use std::collections::HashSet;

use curator_model::Message;
use serde_json::Value;

use crate::fx::FxBuild;

/// Terms longer than this are not distinctive (base64 blobs, minified code).
const MAX_TERM: usize = 128;

/// Very common tokens that the rule would otherwise take for distinctive.
const COMMON: &[&str] = &[
    "__init__",
    "__main__",
    "__name__",
    "__file__",
    "utf-8",
    "utf8",
    "0.0",
    "1.0",
    "100",
    "200",
    "404",
    "500",
    "1000",
    "/dev/null",
    "/tmp",
    "/usr/bin/env",
    "e.g",
    "i.e",
    "x86_64",
    "self.",
];

/// The distinctive terms of a text, each once, in order of first occurrence.
///
/// A term is one of:
/// - a URL (`http://`, `https://`, `file://` up to the next space);
/// - a file path: a word with `/` that starts with `/`, `./`, `../` or `~/`, or has at least
///   two `/`, or a `/` and a file extension; and a file name `stem.ext` (extension of one to
///   five letters or digits starting with a letter), also taken from the end of a path;
/// - a number of at least three digits (`214`), or with a decimal point or version dots
///   (`4.21`, `0.3.1`);
/// - an identifier of at least three characters (letters, digits, `_`) with an inner `_`
///   (`parse_binary`), a lower-case letter followed by a capital (`parseBinary`, `HashMap`),
///   or both letters and digits when it starts with a letter (`case17`, `E0308`) or has at
///   least seven characters (`5f1c2a9`, a hash; `21s` is not a term); a path of identifiers joined by `::`
///   (`parser::tests::case_17`) is a term as a whole and each of its parts is checked;
/// - a quoted value: 3 to 64 characters between matching `"`, `'` or backticks on one line
///   (a quote that follows a letter or digit, as in *don't*, opens nothing), holding a letter
///   or digit.
///
/// Words are split at white space and at `()[]{}<>,;="'` and backticks; dots, slashes and
/// colons then split a word into the parts checked as identifiers and numbers. Excluded:
/// terms longer than 128 characters and a short list of very common tokens (`__init__`,
/// `utf-8`, `100`, `/dev/null`, ...).
/// The rule is documented in `docs/cli.md`; the unit tests hold worked examples.
///
/// # Examples
///
/// ```
/// use curator::strategies::terms::terms;
///
/// let text = "The bug is in parse_binary at src/parser.rs:214, see \"cancel my booking\".";
/// assert_eq!(terms(text), ["cancel my booking", "parse_binary", "src/parser.rs", "parser.rs", "214"]);
/// ```
pub fn terms(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    scan(text, &mut |term| {
        out.push(term);
        true
    });
    out
}

/// Calls `each` with the distinctive terms of `text`, each once, in the order of [`terms`],
/// until it returns `false`.
pub(crate) fn scan<'a>(text: &'a str, each: &mut impl FnMut(&'a str) -> bool) {
    scan_with::<true>(text, each);
}

/// [`scan`], taking the short ways when `SHORT` (the tests hold them to the long way): a
/// word of ASCII letters alone goes straight to the camel-case check, and in a long text a
/// word met lately is not read again.
fn scan_with<'a, const SHORT: bool>(text: &'a str, each: &mut impl FnMut(&'a str) -> bool) {
    // A short text (a term, a label) has few terms: a list finds them faster than a hash.
    let short = text.len() <= 128;
    let mut few: Vec<&str> = Vec::new();
    let mut seen: HashSet<&str, FxBuild> = HashSet::default();
    let mut recent = Recent::default();
    let more = Cell::new(true);
    let mut emit = |term| {
        let new = if short {
            !few.contains(&term) && {
                few.push(term);
                true
            }
        } else {
            seen.insert(term)
        };
        if more.get() && term_ok(term) && new {
            more.set(each(term));
        }
    };
    quoted(text, &more, &mut emit);
    each_word(text, |word, kinds| {
        if !more.get() {
            return false;
        }
        // A word of ASCII letters alone (most of any text) is the same trimmed, and can only
        // be a camel-case identifier.
        if SHORT && kinds & OTHER == 0 {
            if kinds == LOWER | UPPER && word.len() >= 3 && is_camel(word.as_bytes()) {
                emit(word);
            }
        } else if short || !SHORT || !recent.seen(word) {
            // A word met again gave its terms the first time: they are all seen.
            word_terms(word, &mut emit);
        }
        true
    });
}

/// The words of a text met lately, one per slot of a small table indexed by a hash of the
/// word: a word that repeats (a path on every line of a listing) is told apart cheaply.
struct Recent<'a> {
    slots: [&'a str; 64],
}

impl Default for Recent<'_> {
    fn default() -> Self {
        Recent { slots: [""; 64] }
    }
}

impl<'a> Recent<'a> {
    /// Whether `word` was met lately; it is now.
    fn seen(&mut self, word: &'a str) -> bool {
        let bytes = word.as_bytes();
        let (first, last) =
            (bytes.first().copied().unwrap_or(0), bytes.last().copied().unwrap_or(0));
        let hash = (usize::from(first) * 31 + usize::from(last) * 7 + bytes.len() * 13) & 63;
        let slot = &mut self.slots[hash];
        if *slot == word {
            return true;
        }
        *slot = word;
        false
    }
}

/// Emits the terms of one word of a text (see [`terms`]).
fn word_terms<'a>(word: &'a str, emit: &mut impl FnMut(&'a str)) {
    let word = word.trim_end_matches(['.', ':', '!', '?', '-', '*']);
    let word = word.trim_start_matches([':', '#', '*', '-', '@', '$']);
    if word.len() < 3 {
        return;
    }
    // Plain words (most of any text) can only be camel-case identifiers.
    if word.bytes().all(|b| b.is_ascii_alphabetic()) {
        if is_camel(word.as_bytes()) {
            emit(word);
        }
        return;
    }
    if ["http://", "https://", "file://"].iter().any(|p| word.starts_with(p)) {
        emit(word);
        return;
    }
    if is_path(word) {
        // The path without a trailing `:line:column`, and its file name.
        let path = word.split(':').next().unwrap_or(word);
        emit(path);
        if let Some(name) = path.rsplit('/').next().filter(|n| is_file_name(n)) {
            emit(name);
        }
    } else if is_file_name(word) {
        emit(word);
    }
    if is_number(word) {
        emit(word);
        return;
    }
    for part in word.split(['/', '\\', '@', '#', '+', '!', '?', '*', '%', '&', '$', '~']) {
        if !part.contains(':') {
            dotted(part, emit);
            continue;
        }
        for segment in split_single_colons(part) {
            if segment.contains("::") {
                let parts: Vec<&str> = segment.split("::").collect();
                if parts.len() > 1 && parts.iter().all(|p| is_identifier_chars(p)) {
                    emit(segment);
                }
                for p in parts {
                    dotted(p, emit);
                }
            } else {
                dotted(segment, emit);
            }
        }
    }
}

/// The characters besides whitespace that end a word.
const WORD_ENDS: &str = "()[]{}<>,;=\"'`|";

/// The kinds of byte [`each_word`] tells apart: a byte that ends a word, a small or capital
/// ASCII letter, and any other.
const END: u8 = 1;
const LOWER: u8 = 2;
const UPPER: u8 = 4;
const OTHER: u8 = 8;

/// The kind of each ASCII byte: [`END`] for whitespace and [`WORD_ENDS`].
const KIND: [u8; 128] = {
    let mut table = [OTHER; 128];
    let mut b = 0;
    while b < 128 {
        if (b as u8).is_ascii_lowercase() {
            table[b] = LOWER;
        } else if (b as u8).is_ascii_uppercase() {
            table[b] = UPPER;
        } else if (b as u8 as char).is_whitespace() {
            table[b] = END;
        }
        b += 1;
    }
    let ends = WORD_ENDS.as_bytes();
    let mut i = 0;
    while i < ends.len() {
        table[ends[i] as usize] = END;
        i += 1;
    }
    table
};

/// Calls `each` with the words of `text` until it returns `false`: what lies between
/// whitespace and [`WORD_ENDS`], empty ones included, as `text.split` with that predicate
/// gives them, each with the kinds of its bytes ([`LOWER`], [`UPPER`], [`OTHER`]) or-ed
/// together.
///
/// ASCII text is read 64 bytes at a time: a table gives each byte's kind, the kinds make
/// bit masks, and the words are read off the mask of word ends, with no branch per byte
/// (a branch on each byte mispredicts at every word's end). A block that holds a character
/// beyond ASCII is read a character at a time.
fn each_word<'a>(text: &'a str, mut each: impl FnMut(&'a str, u8) -> bool) {
    let bytes = text.as_bytes();
    // The word being read starts at `start`; `kinds` holds the kinds of its bytes so far.
    let (mut start, mut kinds) = (0, 0);
    let mut at = 0;
    while at < bytes.len() {
        let block = &bytes[at..bytes.len().min(at + 64)];
        if !block.is_ascii() {
            // One character at a time to the first character boundary past the block.
            let end = at + block.len();
            while at < end {
                let (kind, width) = text[at..].chars().next().map_or((OTHER, 1), |c| {
                    let kind = if c.is_ascii() { KIND[c as usize] } else { OTHER };
                    (if c.is_whitespace() { END } else { kind }, c.len_utf8())
                });
                if kind == END {
                    if !each(&text[start..at], kinds) {
                        return;
                    }
                    (start, kinds) = (at + width, 0);
                } else {
                    kinds |= kind;
                }
                at += width;
            }
            continue;
        }
        let (mut ends, mut lower, mut upper) = (0_u64, 0_u64, 0_u64);
        for (j, &b) in block.iter().enumerate() {
            let kind = KIND[usize::from(b & 0x7f)];
            ends |= u64::from(kind == END) << j;
            lower |= u64::from(kind == LOWER) << j;
            upper |= u64::from(kind == UPPER) << j;
        }
        let other = !(ends | lower | upper);
        // The kinds of the bytes of the block from `from` up to `to`.
        let kinds_in = |from: usize, to: usize| {
            let span = bits(from, to);
            let has = |mask: u64, kind: u8| if mask & span == 0 { 0 } else { kind };
            has(lower, LOWER) | has(upper, UPPER) | has(other, OTHER)
        };
        while ends != 0 {
            let j = ends.trailing_zeros() as usize;
            kinds |= kinds_in(start.saturating_sub(at), j);
            if !each(&text[start..at + j], kinds) {
                return;
            }
            (start, kinds) = (at + j + 1, 0);
            ends &= ends - 1;
        }
        kinds |= kinds_in(start.saturating_sub(at), block.len());
        at += block.len();
    }
    each(&text[start..], kinds);
}

/// The bits `from..to` of a mask (none when `from >= to`; `to` at most 64).
fn bits(from: usize, to: usize) -> u64 {
    if from >= to { 0 } else { (u64::MAX >> (64 - (to - from))) << from }
}

fn term_ok(term: &str) -> bool {
    term.len() <= MAX_TERM && !COMMON.contains(&term)
}

/// Splits at `:` that is not part of `::`.
fn split_single_colons(part: &str) -> Vec<&str> {
    let bytes = part.as_bytes();
    let mut out = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b':' {
            if bytes.get(i + 1) == Some(&b':') {
                i += 2;
                continue;
            }
            out.push(&part[start..i]);
            start = i + 1;
        }
        i += 1;
    }
    out.push(&part[start..]);
    out
}

/// Checks the parts of a dotted word (`self.parse_binary`), keeping numbers whole.
fn dotted<'a>(part: &'a str, emit: &mut impl FnMut(&'a str)) {
    let part = part.trim_matches(['.', '-']);
    if is_number(part) {
        emit(part);
        return;
    }
    for piece in part.split('.') {
        for piece in piece.split('-') {
            if is_identifier(piece) || is_number(piece) {
                emit(piece);
            }
        }
    }
}

fn is_identifier_chars(word: &str) -> bool {
    !word.is_empty() && word.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn is_identifier(word: &str) -> bool {
    if word.len() < 3 || !is_identifier_chars(word) {
        return false;
    }
    let bytes = word.as_bytes();
    let inner_underscore = word.trim_matches('_').contains('_');
    let camel = is_camel(bytes);
    let letters = bytes.iter().any(u8::is_ascii_alphabetic);
    let digits = bytes.iter().any(u8::is_ascii_digit);
    // Letters and digits: a name (`case17`, `E0308`), or a hash (`5f1c2a9`); not a
    // quantity with its unit (`21s`, `12ms`).
    let mixed = letters && digits && (bytes[0].is_ascii_alphabetic() || word.len() >= 7);
    inner_underscore || camel || mixed
}

/// A lower-case letter followed by a capital (`parseBinary`, `HashMap`).
fn is_camel(bytes: &[u8]) -> bool {
    bytes.windows(2).any(|w| w[0].is_ascii_lowercase() && w[1].is_ascii_uppercase())
}

fn is_number(word: &str) -> bool {
    let digits = word.strip_prefix(['-', '+']).unwrap_or(word);
    if digits.is_empty() || !digits.chars().all(|c| c.is_ascii_digit() || c == '.') {
        return false;
    }
    let groups: Vec<&str> = digits.split('.').collect();
    if groups.iter().any(|g| g.is_empty()) {
        return false;
    }
    groups.len() > 1 || digits.len() >= 3
}

fn is_file_name(word: &str) -> bool {
    let Some((stem, ext)) = word.rsplit_once('.') else { return false };
    !stem.is_empty()
        && stem.chars().all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c))
        && stem.chars().any(|c| c.is_ascii_alphanumeric())
        && (1..=5).contains(&ext.len())
        && ext.starts_with(|c: char| c.is_ascii_alphabetic())
        && ext.chars().all(|c| c.is_ascii_alphanumeric())
        && !stem.ends_with('.')
}

fn is_path(word: &str) -> bool {
    if !word.contains('/') || !word.chars().any(|c| c.is_ascii_alphanumeric()) {
        return false;
    }
    let rooted = ["/", "./", "../", "~/"].iter().any(|p| word.starts_with(p))
        && word.len() > 2
        && word[1..].contains(|c: char| c.is_ascii_alphanumeric());
    let path = word.split(':').next().unwrap_or(word);
    let slashes = path.matches('/').count();
    let segments_alnum = path.split('/').filter(|s| s.chars().any(|c| c.is_ascii_alphanumeric()));
    rooted
        || (segments_alnum.count() >= 2
            && (slashes >= 2 || path.rsplit('/').next().is_some_and(is_file_name)))
}

/// `term` as a list of terms writes it, so that [`terms`] reads it back as the same term:
/// bare when it is a term by itself (`parse_binary`, `src/parser.rs`), between quotes when
/// it is a term only as a quoted value (`"PHL"`, `"2024-05-10"`, `"bytes(value)"`, which
/// bare are no term, or not this one) or when it holds white space or list punctuation
/// (`"cat -n"`). The mark is the first of `"`, `` ` `` and `'` that the term does not hold.
pub(crate) fn written(term: &str) -> Cow<'_, str> {
    let mut found = Vec::new();
    scan(term, &mut |part| {
        found.push(part);
        part != term
    });
    if reads_back(term, &found) { Cow::Borrowed(term) } else { quote(term) }
}

/// Whether `term`, written bare in a list of terms, reads back as itself (see [`written`]),
/// given the terms a scan of it `found`.
pub(crate) fn reads_back(term: &str, found: &[&str]) -> bool {
    !term.contains(|c: char| c.is_whitespace() || c == ',' || c == ';') && found.contains(&term)
}

/// `term` between quotes (see [`written`]).
pub(crate) fn quote(term: &str) -> Cow<'_, str> {
    match ['"', '`', '\''].into_iter().find(|&mark| !term.contains(mark)) {
        Some(mark) => {
            let mut out = String::with_capacity(term.len() + 2);
            out.push(mark);
            out.push_str(term);
            out.push(mark);
            Cow::Owned(out)
        }
        None => Cow::Borrowed(term),
    }
}

/// Emits the quoted values of a text while `more` holds.
fn quoted<'a>(text: &'a str, more: &Cell<bool>, emit: &mut impl FnMut(&'a str)) {
    let bytes = text.as_bytes();
    let mut i = 0;
    while more.get() {
        let Some(k) = memchr::memchr3(b'"', b'\'', b'`', &bytes[i..]) else {
            return;
        };
        let at = i + k;
        let quote = char::from(bytes[at]);
        i = at + 1;
        if text[..at].chars().next_back().is_some_and(char::is_alphanumeric) {
            continue;
        }
        // The closing quote within 66 characters, on the same line.
        let close = text[at + 1..]
            .char_indices()
            .take(66)
            .find(|&(_, d)| d == quote || d == '\n')
            .filter(|&(_, d)| d == quote);
        let Some((offset, _)) = close else { continue };
        let end = at + 1 + offset;
        let after_ok = text[end + 1..].chars().next().is_none_or(|d| !d.is_alphanumeric());
        if !after_ok {
            continue;
        }
        let value = text[at + 1..end].trim();
        if (3..=64).contains(&value.chars().count()) && value.chars().any(char::is_alphanumeric) {
            emit(value);
        }
        i = end + 1;
    }
}

/// Calls `each` with the terms of what a message shows the model: its text, and each tool
/// call's name and arguments (string values of JSON arguments are read as text; each short
/// one is also a quoted value). A term may come more than once.
///
/// # Examples
///
/// ```
/// use curator::model::{Message, ToolCall};
/// use curator::strategies::terms::message_terms;
///
/// let call = ToolCall::new("c1", "read_file", r#"{"path": "src/lib.rs"}"#);
/// let mut found = Vec::new();
/// message_terms(&Message::assistant_with_calls(None, vec![call]), &mut |t| found.push(t.to_owned()));
/// assert_eq!(found, ["read_file", "src/lib.rs", "src/lib.rs", "lib.rs"]);
/// ```
pub fn message_terms(message: &Message, each: &mut impl FnMut(&str)) {
    terms(&message.text()).into_iter().for_each(&mut *each);
    for call in message.tool_calls() {
        terms(call.name()).into_iter().for_each(&mut *each);
        match call.arguments_json() {
            Ok(value) => strings(&value, &mut |s| {
                let value = s.trim();
                if (3..=64).contains(&value.chars().count())
                    && !value.contains('\n')
                    && term_ok(value)
                {
                    each(value);
                }
                terms(s).into_iter().for_each(&mut *each);
            }),
            Err(_) => terms(call.arguments()).into_iter().for_each(&mut *each),
        }
    }
}

fn strings(value: &Value, each: &mut impl FnMut(&str)) {
    match value {
        Value::String(s) => each(s),
        Value::Array(items) => items.iter().for_each(|v| strings(v, each)),
        Value::Object(map) => map.values().for_each(|v| strings(v, each)),
        _ => {}
    }
}

/// Words that mark a line as reporting a failure.
pub(crate) const ERROR_MARKS: &[&str] =
    &["error", "Error", "ERROR", "FAILED", "failed", "panicked", "Traceback", "Exception", "fatal"];

/// The longest line [`essentials`] quotes, in characters.
const MAX_LINE: usize = 120;

/// What a long text (a tool result) must not lose when it is cleared or summarized, in at
/// most about `max_chars` characters: its first line, the lines that report a failure (up to
/// three), its last line, then the distinctive [`terms`] those lines do not already show.
/// Lines are joined with ` | ` and cut to 120 characters; empty for a blank text.
///
/// # Examples
///
/// ```
/// use curator::strategies::terms::essentials;
///
/// let output = "running 14 tests\ntest parse_binary ... FAILED\nthread panicked at src/parser.rs:214\nok\ntest result: FAILED. 13 passed; 1 failed";
/// assert_eq!(
///     essentials(output, 300),
///     "running 14 tests | test parse_binary ... FAILED | thread panicked at src/parser.rs:214 | test result: FAILED. 13 passed; 1 failed"
/// );
/// ```
pub fn essentials(text: &str, max_chars: usize) -> String {
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
    let Some(first) = lines.next() else { return String::new() };
    let last = lines.next_back();
    let mut picked: Vec<&str> = vec![first];
    picked.extend(lines.filter(|l| ERROR_MARKS.iter().any(|m| l.contains(m))).take(3));
    picked.extend(last);
    let mut out = String::new();
    let mut size = 0;
    for line in picked {
        let cut = cut_chars(line, MAX_LINE);
        let sep = if out.is_empty() { 0 } else { 3 };
        let chars = cut.chars().count();
        if size + sep + chars > max_chars {
            break;
        }
        if !out.is_empty() {
            out.push_str(" | ");
        }
        out.push_str(&cut);
        size += sep + chars;
    }
    let prefix = if out.is_empty() { "terms: " } else { " | terms: " };
    let mut more = Vec::new();
    let mut size = size + prefix.len();
    scan(text, &mut |term| {
        if out.contains(term) {
            return true;
        }
        let cost = term.chars().count() + 2;
        if size + cost > max_chars {
            return false;
        }
        size += cost;
        more.push(term);
        true
    });
    if !more.is_empty() {
        out.push_str(prefix);
        out.push_str(&more.join(", "));
    }
    out
}

/// `line` cut to `max` characters, with an ellipsis when cut.
fn cut_chars(line: &str, max: usize) -> String {
    if line.chars().count() <= max {
        return line.to_owned();
    }
    let mut cut: String = line.chars().take(max.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(text: &str, expected: &[&str]) {
        assert_eq!(terms(text), expected, "terms of {text:?}");
    }

    #[test]
    fn the_rule_picks_identifiers_paths_numbers_and_quoted_values() {
        check(
            "The bug is in parse_binary at src/parser.rs:214 (see https://example.org/a).",
            &["parse_binary", "src/parser.rs", "parser.rs", "214", "https://example.org/a"],
        );
        check("call parseBinary or HashMap::new", &["parseBinary", "HashMap::new", "HashMap"]);
        check("error E0308 in case17", &["E0308", "case17"]);
        check("took 4.21s, version 0.3.1", &["0.3.1"]);
        check("took 4.21 s", &["4.21"]);
        check("the user said \"cancel my booking\" and don't 'go'", &["cancel my booking"]);
        check("parser::tests::case_17 failed", &["parser::tests::case_17", "case_17"]);
        check("self.parse_binary(prec + 1)", &["parse_binary"]);
        check("Look at /workspace/exprs and ./run.sh", &["/workspace/exprs", "./run.sh", "run.sh"]);
    }

    #[test]
    fn essentials_keep_first_last_and_error_lines_then_terms_within_the_size() {
        assert_eq!(essentials("  \n ", 100), "");
        assert_eq!(essentials("only line", 100), "only line");
        let text = "compiling\nwarning: unused\nerror[E0308]: mismatched types in parse_binary\ndone in 4.21s";
        assert_eq!(
            essentials(text, 200),
            "compiling | error[E0308]: mismatched types in parse_binary | done in 4.21s"
        );
        // Terms the kept lines do not show fill what is left.
        let text = "header\nsee src/lexer.rs and tokenize_all\nfooter";
        assert_eq!(
            essentials(text, 200),
            "header | footer | terms: src/lexer.rs, lexer.rs, tokenize_all"
        );
        // Never much over the size.
        let long = format!("{}\n{}", "a".repeat(500), "b".repeat(500));
        assert!(essentials(&long, 130).chars().count() <= 130);
    }

    /// The kinds of the bytes of `word`, or-ed together, byte by byte.
    fn kinds_of(word: &str) -> u8 {
        word.bytes().fold(0, |acc, b| {
            acc | match b {
                b'a'..=b'z' => LOWER,
                b'A'..=b'Z' => UPPER,
                _ => OTHER,
            }
        })
    }

    /// The words [`each_word`] reads from `text` are those `str::split` gives, each with
    /// the kinds of its bytes.
    fn words_hold(text: &str) -> Result<(), proptest::test_runner::TestCaseError> {
        let split: Vec<&str> =
            text.split(|c: char| c.is_whitespace() || WORD_ENDS.contains(c)).collect();
        let mut found: Vec<(&str, u8)> = Vec::new();
        each_word(text, |word, kinds| {
            found.push((word, kinds));
            true
        });
        proptest::prop_assert_eq!(found.iter().map(|w| w.0).collect::<Vec<_>>(), split);
        for (word, kinds) in found {
            proptest::prop_assert_eq!(kinds, kinds_of(word), "{:?}", word);
        }
        Ok(())
    }

    proptest::proptest! {
        #[test]
        fn words_are_those_split_gives(text in "(?s)[a-zA-Z0-9_( )\\[\\]{}<>,;=\"'`|\t\n\r\u{85}\u{a0}\u{2003}\u{3000}é日\u{1f600}.:/-]{0,300}") {
            words_hold(&text)?;
        }

        #[test]
        fn words_of_mostly_ascii_text_read_in_blocks_are_those_split_gives(
            text in "(?s)([a-zA-Z0-9_ ,.()\n-]{0,70}é?){0,6}",
        ) {
            words_hold(&text)?;
        }

        #[test]
        fn words_met_again_in_a_long_text_take_the_short_way_to_the_same_terms(
            // Few first and last bytes and lengths, so that words share a slot of the
            // table of words met lately.
            vocabulary in proptest::collection::vec(
                "[a-zA-Z0-9_./:#@$*!?-]{1,14}|[ab1./:_-]{3,6}", 1..40),
            picks in proptest::collection::vec((0..40_usize, 0..4_usize), 20..300),
        ) {
            let mut text = String::new();
            for (word, gap) in picks {
                text.push_str(&vocabulary[word % vocabulary.len()]);
                text.push_str([" ", "\n", "(", ", "][gap]);
            }
            let (mut short, mut long) = (Vec::new(), Vec::new());
            scan_with::<true>(&text, &mut |t| { short.push(t); true });
            scan_with::<false>(&text, &mut |t| { long.push(t); true });
            proptest::prop_assert_eq!(short, long);
        }

        #[test]
        fn words_of_letters_alone_take_the_short_way_to_the_same_terms(
            text in "(?s)[a-zA-Z_.:/\"'` \n-]{0,80}",
        ) {
            let (mut short, mut long) = (Vec::new(), Vec::new());
            scan_with::<true>(&text, &mut |t| { short.push(t); true });
            scan_with::<false>(&text, &mut |t| { long.push(t); true });
            proptest::prop_assert_eq!(short, long);
        }

        #[test]
        fn essentials_never_pass_their_size(text in "(\\PC{0,40}\n?){0,12}", max in 0usize..300) {
            proptest::prop_assert!(essentials(&text, max).chars().count() <= max);
        }
    }

    #[test]
    fn plain_words_and_common_tokens_are_not_terms() {
        check("The quick brown fox jumps over the lazy dog, and/or the cat.", &[]);
        check("HTTP 200 and 404 at 100% with utf-8 in __init__ 42", &[]);
        check("FAILED ok test result", &[]);
    }

    #[test]
    fn a_written_term_reads_back_as_itself() {
        // Terms by themselves stay bare; quoted values keep their quotes.
        assert_eq!(written("parse_binary"), "parse_binary");
        assert_eq!(written("src/parser.rs"), "src/parser.rs");
        assert_eq!(written("PHL"), "\"PHL\"");
        assert_eq!(written("2024-05-10"), "\"2024-05-10\"");
        assert_eq!(written("bytes(value)"), "\"bytes(value)\"");
        assert_eq!(written("cat -n"), "\"cat -n\"");
        assert_eq!(written(r#"say "hi""#), r#"`say "hi"`"#);
        for term in ["PHL", "2024-05-10", "bytes(value)", "cat -n", "parse_binary", "src/parser.rs"]
        {
            let list = format!("They mentioned: {} and more.", written(term));
            assert!(terms(&list).contains(&term), "{term} not read back from {list}");
        }
    }
}
