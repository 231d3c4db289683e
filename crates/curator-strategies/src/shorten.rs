//! Shortening messages to a token allowance: text keeps its beginning and end, parts stay in
//! place with their provider fields, tool-call arguments stay valid JSON.

#[cfg(test)]
use curator_model::ToolCall;
use curator_model::{Content, Message, Part};
use serde_json::Value;
use unicode_segmentation::GraphemeCursor;
#[cfg(test)]
use unicode_segmentation::UnicodeSegmentation;

use crate::{TokenCounter, cut_notes};

/// The note left where text was cut: `{cut}` becomes the number of tokens cut.
const CUT_NOTE: &str = "\n[… {cut} tokens cut by curator to fit the token budget …]\n";
/// The note that ends a shortened string inside tool-call arguments.
const ARGUMENT_NOTE: &str = "…[shortened]";
/// Of the text kept, the share given to its beginning; the rest keeps its end.
const HEAD_SHARE: u64 = 2;
const SHARES: u64 = 3;
/// With [`Marks::Terms`], the share of a cut text's room that names the part cut. Over
/// `../shared/corpus`, 0.3 kept more evidence than 0.15 at a 2,000-token budget and as much
/// at 4,000 and 8,000; with the budget's own cut of tool results, 0.5 keeps more than 0.3 at
/// 2,000 and 4,000 tokens and as much as 0.7 (see `docs/benchmarks.md`).
const NAMING_SHARE: f64 = 0.5;
/// Where the terms of a cut text's middle are named.
const NAMING_OPEN: &str = "[the part cut named: ";

/// How a cut text marks what it lost.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Marks {
    /// A note of how many tokens were cut.
    Count,
    /// The note, then the distinctive [`terms`](crate::terms) of the part cut, in their
    /// order, in up to [`NAMING_SHARE`] of the text's room (taken from its beginning and
    /// end): the model learns what the cut part held and can ask for it.
    Terms,
}

/// Texts at least this long are counted once per shortening (see [`Memo`]).
const MEMO_BYTES: usize = 16 * 1024;

/// A counter that remembers the counts of long texts for one shortening, which counts a
/// message whole, then each of its strings, then the message again: a long text is read by
/// the counter once, then only hashed.
#[derive(Debug)]
pub(crate) struct Memo<'c> {
    inner: &'c dyn TokenCounter,
    seen: std::sync::Mutex<Vec<(usize, u64, u64)>>,
}

impl<'c> Memo<'c> {
    pub(crate) fn new(inner: &'c dyn TokenCounter) -> Self {
        Self { inner, seen: std::sync::Mutex::new(Vec::new()) }
    }
}

impl TokenCounter for Memo<'_> {
    fn cache_key(&self) -> u64 {
        self.inner.cache_key()
    }

    fn count_text(&self, text: &str) -> u64 {
        if text.len() < MEMO_BYTES {
            return self.inner.count_text(text);
        }
        let hash = {
            use std::hash::{Hash, Hasher};
            let mut hasher = std::hash::DefaultHasher::new();
            text.hash(&mut hasher);
            hasher.finish()
        };
        let Ok(mut seen) = self.seen.lock() else {
            return self.inner.count_text(text);
        };
        if let Some(&(_, _, n)) = seen.iter().find(|(len, h, _)| *len == text.len() && *h == hash) {
            return n;
        }
        let n = self.inner.count_text(text);
        seen.push((text.len(), hash, n));
        n
    }

    fn per_message(&self) -> u64 {
        self.inner.per_message()
    }

    fn reply_priming(&self) -> u64 {
        self.inner.reply_priming()
    }

    fn content_rules(&self) -> &crate::ContentRules {
        self.inner.content_rules()
    }

    fn truncate_text<'t>(&self, text: &'t str, max_tokens: u64) -> &'t str {
        self.inner.truncate_text(text, max_tokens)
    }

    fn truncate_text_start<'t>(&self, text: &'t str, max_tokens: u64) -> &'t str {
        self.inner.truncate_text_start(text, max_tokens)
    }
}

/// The largest byte index at or before `index` that is a grapheme cluster boundary of
/// `text`, so that a cut never leaves half a character, an accent without its letter or a
/// dangling zero-width joiner.
pub(crate) fn floor_grapheme(text: &str, index: usize) -> usize {
    if index >= text.len() {
        return text.len();
    }
    let mut index = index;
    while !text.is_char_boundary(index) {
        index -= 1;
    }
    // The whole text is the one chunk, so the cursor never asks for more context; it looks
    // only around `index`.
    let mut cursor = GraphemeCursor::new(index, text.len(), true);
    match cursor.is_boundary(text, 0) {
        Ok(true) => index,
        _ => cursor.prev_boundary(text, 0).ok().flatten().unwrap_or(0),
    }
}

/// The smallest byte index at or after `index` that is a grapheme cluster boundary.
fn ceil_grapheme(text: &str, index: usize) -> usize {
    if index == 0 || index >= text.len() {
        return index.min(text.len());
    }
    let mut index = index;
    while !text.is_char_boundary(index) {
        index += 1;
    }
    let mut cursor = GraphemeCursor::new(index, text.len(), true);
    match cursor.is_boundary(text, 0) {
        Ok(true) => index,
        _ => cursor.next_boundary(text, 0).ok().flatten().unwrap_or(text.len()),
    }
}

/// The longest prefix of `text` costing at most `max_tokens`, cut on a grapheme boundary.
pub(crate) fn prefix<'t>(text: &'t str, max_tokens: u64, counter: &dyn TokenCounter) -> &'t str {
    let cut = counter.truncate_text(text, max_tokens);
    &text[..floor_grapheme(text, cut.len())]
}

/// The longest suffix of `text` costing at most `max_tokens`, cut on a grapheme boundary.
fn suffix<'t>(text: &'t str, max_tokens: u64, counter: &dyn TokenCounter) -> &'t str {
    let cut = counter.truncate_text_start(text, max_tokens);
    &text[ceil_grapheme(text, text.len() - cut.len())..]
}

/// `text` (costing `full` tokens) cut to about `max_tokens`: its beginning and its end, with
/// a note between saying how much was cut (just the note when not even it fits), and with
/// [`Marks::Terms`] the terms the cut part held. Reads `text` a few times whatever its length:
/// the ends are searched within what they can reach.
pub(crate) fn cut_text(
    text: &str,
    full: u64,
    max_tokens: u64,
    counter: &dyn TokenCounter,
    marks: Marks,
) -> String {
    if full <= max_tokens {
        return text.to_owned();
    }
    // An earlier cut's note is kept whole or cut whole, and what it took is carried over.
    let spans = cut_notes::spans(text);
    let most = cut_notes::earlier(cut_notes::taken(text, &spans, 0..text.len()));
    let note = |cut: u64, earlier: &str| {
        CUT_NOTE.replace("{cut}", &cut.to_string()).replace(" …]", &format!("{earlier} …]"))
    };
    let room = max_tokens.saturating_sub(counter.count_text(&note(full, &most)));
    let ends = |room: u64| {
        let head = prefix(text, room * HEAD_SHARE / SHARES, counter);
        let head = &text[..cut_notes::before(head.len(), &spans)];
        let rest = &text[head.len()..];
        let tail = suffix(rest, room.saturating_sub(counter.count_text(head)), counter);
        let tail = &text[cut_notes::after(text.len() - tail.len(), &spans)..];
        (head, tail, &rest[..rest.len() - tail.len()])
    };
    let (mut head, mut tail, middle) = ends(room);
    let mut naming = String::new();
    if marks == Marks::Terms {
        // The terms of what the plain cut drops, then the ends again in the room left.
        let read = cut_notes::without_counts(middle, head.len(), &spans);
        naming = named(&read, crate::tokens::share(NAMING_SHARE, room), counter);
        if !naming.is_empty() {
            (head, tail, _) = ends(room.saturating_sub(counter.count_text(&naming)));
        }
    }
    let cut = full.saturating_sub(counter.count_text(head) + counter.count_text(tail));
    let earlier =
        cut_notes::earlier(cut_notes::taken(text, &spans, head.len()..text.len() - tail.len()));
    format!("{head}{}{naming}{tail}", note(cut, &earlier))
}

/// `text` cut to cost at most about `max_tokens` under `counter`, as the never-lost rule cuts
/// the newest unit: its beginning and its end, with a note between saying how many tokens
/// were cut (`[… N tokens cut by curator to fit the token budget …]`); `text` itself when it
/// fits. For views only: the record keeps the whole text.
///
/// # Examples
///
/// ```
/// use curator::strategies::{CharEstimate, TokenCounter, cut_to_fit};
///
/// let counter = CharEstimate::default();
/// let log = format!("started\n{}\nexit code 1: assertion failed", "line of output\n".repeat(500));
/// let cut = cut_to_fit(&log, 200, &counter);
/// assert!(counter.count_text(&cut) <= 220);
/// assert!(cut.starts_with("started") && cut.ends_with("assertion failed"));
/// assert!(cut.contains("tokens cut by curator"));
/// assert_eq!(cut_to_fit("short", 200, &counter), "short");
/// ```
pub fn cut_to_fit(text: &str, max_tokens: u64, counter: &dyn TokenCounter) -> String {
    cut_text(text, counter.count_text(text), max_tokens, counter, Marks::Count)
}

/// `[the part cut named: a, b, c]` and a line break: the distinctive terms of `middle`, in
/// their order (but those inside a term already named), as many as fit `room` tokens;
/// empty when none does.
fn named(middle: &str, room: u64, counter: &dyn TokenCounter) -> String {
    let overhead = counter.count_text(NAMING_OPEN) + 2;
    let mut used = overhead;
    let mut terms: Vec<&str> = Vec::new();
    crate::terms::scan(middle, &mut |term| {
        // A term inside one already named (`parser.rs` in `src/parser.rs`) reads back from it.
        if terms.iter().any(|listed| listed.contains(term)) {
            return true;
        }
        let cost = counter.count_text(term) + 1;
        if used + cost > room {
            return false;
        }
        used += cost;
        terms.push(term);
        true
    });
    if terms.is_empty() {
        return String::new();
    }
    format!("{NAMING_OPEN}{}]\n", terms.join(", "))
}

/// A string value of tool-call arguments cut to `max_tokens`, ending with a note.
fn cut_argument(text: &str, max_tokens: u64, counter: &dyn TokenCounter) -> String {
    let room = max_tokens.saturating_sub(counter.count_text(ARGUMENT_NOTE));
    format!("{}{ARGUMENT_NOTE}", prefix(text, room, counter))
}

/// The strings of a message that shortening may cut, in a fixed order: the text (or each
/// text part), then each tool call's arguments (their string values when they are JSON).
struct Strings {
    /// Token count of each string, whole.
    tokens: Vec<u64>,
    /// Token count of each string cut as far as it goes (its note alone), or whole when
    /// that is smaller.
    minimum: Vec<u64>,
}

impl Strings {
    /// Allowances that cut every string as far as it goes.
    fn shortest(&self) -> Vec<Option<u64>> {
        self.tokens.iter().zip(&self.minimum).map(|(t, m)| (m < t).then_some(*m)).collect()
    }
}

fn collect(message: &Message, counter: &dyn TokenCounter) -> Strings {
    let mut tokens = Vec::new();
    let mut minimum = Vec::new();
    let mut text = |t: &str| {
        let whole = counter.count_text(t);
        tokens.push(whole);
        minimum.push(whole.min(counter.count_text(&CUT_NOTE.replace("{cut}", &whole.to_string()))));
    };
    match message.content() {
        Some(Content::Text(t)) => text(t),
        Some(Content::Parts(parts)) => parts.iter().filter_map(Part::as_text).for_each(&mut text),
        None => {}
    }
    let note = counter.count_text(ARGUMENT_NOTE);
    let mut argument = |t: &str| {
        let whole = counter.count_text(t);
        tokens.push(whole);
        minimum.push(whole.min(note));
    };
    for call in message.tool_calls() {
        match string_values(call.arguments()) {
            Some(values) => values.iter().for_each(|v| argument(&v.text)),
            None => argument(call.arguments()),
        }
    }
    Strings { tokens, minimum }
}

/// A string value (not a key) of JSON text: where its literal stands, and its text.
struct StringValue {
    start: usize,
    end: usize,
    text: String,
}

/// The string values of JSON text in the order they are written, or `None` when the text is
/// not JSON. Shortening replaces these literals in the text and nothing else, so numbers
/// (`1e2`, `-12345678901234567890123`, `1E400`) and layout stay as they were written: a
/// round trip through `Value` would rewrite them.
fn string_values(json: &str) -> Option<Vec<StringValue>> {
    serde_json::from_str::<serde::de::IgnoredAny>(json).ok()?;
    let bytes = json.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'"' {
            i += 1;
            continue;
        }
        let start = i;
        i += 1;
        while i < bytes.len() && bytes[i] != b'"' {
            i += if bytes[i] == b'\\' { 2 } else { 1 };
        }
        let end = (i + 1).min(bytes.len());
        i = end;
        let is_key = bytes[end..].iter().find(|b| !b.is_ascii_whitespace()) == Some(&b':');
        if !is_key {
            let text = serde_json::from_str::<String>(json.get(start..end)?).ok()?;
            out.push(StringValue { start, end, text });
        }
    }
    Some(out)
}

/// `message` with each of its strings cut to its allowance (`None`: kept whole), in the
/// order of [`collect`], which counted them whole (`strings`).
fn rebuild(
    message: &Message,
    strings: &Strings,
    allow: &[Option<u64>],
    counter: &dyn TokenCounter,
    marks: Marks,
) -> Message {
    let mut next = allow.iter().zip(&strings.tokens).map(|(max, &full)| max.map(|m| (m, full)));
    let mut take = || next.next().flatten();
    let content = match message.content() {
        Some(Content::Text(text)) => match take() {
            Some((max, full)) => Some(Content::Text(cut_text(text, full, max, counter, marks))),
            None => Some(Content::Text(text.clone())),
        },
        Some(Content::Parts(parts)) => {
            let mut out = Vec::with_capacity(parts.len());
            for part in parts {
                match (part, part.as_text()) {
                    (Part::Text { extra, .. }, Some(text)) => match take() {
                        Some((max, full)) => out.push(Part::Text {
                            text: cut_text(text, full, max, counter, marks),
                            extra: extra.clone(),
                        }),
                        None => out.push(part.clone()),
                    },
                    _ => out.push(part.clone()),
                }
            }
            Some(Content::Parts(out))
        }
        None => None,
    };
    message.clone_with_content(content).map_tool_call_arguments(|call| {
        let json = call.arguments();
        match string_values(json) {
            Some(values) => {
                let mut out = String::with_capacity(json.len());
                let mut from = 0;
                for value in values {
                    if let Some((max, _)) = take() {
                        out.push_str(&json[from..value.start]);
                        let cut = cut_argument(&value.text, max, counter);
                        out.push_str(&Value::String(cut).to_string());
                        from = value.end;
                    }
                }
                (from > 0).then(|| {
                    out.push_str(&json[from..]);
                    out
                })
            }
            None => take().map(|(max, _)| cut_argument(json, max, counter)),
        }
    })
}

/// Shares `room` tokens among strings of the given sizes, fairly: strings smaller than their
/// share keep all of it and leave the rest to the others (water filling). Returns each
/// string's allowance, `None` for one kept whole.
fn allot(sizes: &[u64], room: u64) -> Vec<Option<u64>> {
    let mut order: Vec<usize> = (0..sizes.len()).collect();
    order.sort_by_key(|&i| (sizes[i], i));
    let mut out = vec![None; sizes.len()];
    let mut left = room;
    for (k, &i) in order.iter().enumerate() {
        let share = left / (order.len() - k) as u64;
        if sizes[i] <= share {
            left -= sizes[i];
        } else {
            out[i] = Some(share);
            left -= share;
        }
    }
    out
}

/// `message` shortened to cost at most `budget` tokens under `counter`: its text (and each
/// text part, in place, with its provider fields) keeps its beginning and end with a note of
/// what was cut, other parts are kept, and the string values of its tool-call arguments are
/// cut so that the arguments stay the JSON they were. `None` when not even what cannot be cut
/// (framing, images, names, the notes) fits.
pub(crate) fn shorten_message(
    message: &Message,
    budget: u64,
    counter: &dyn TokenCounter,
    marks: Marks,
) -> Option<Message> {
    let full = counter.count_message(message);
    if full <= budget {
        return Some(message.clone());
    }
    let strings = collect(message, counter);
    if strings.tokens.is_empty() {
        return None;
    }
    let skeleton = counter.count_message(&rebuild(
        message,
        &strings,
        &strings.shortest(),
        counter,
        Marks::Count,
    ));
    let mut room = budget.checked_sub(skeleton)?;
    let excess: Vec<u64> =
        strings.tokens.iter().zip(&strings.minimum).map(|(t, m)| t - m).collect();
    // Token counts of pieces need not add up exactly under a BPE counter; shrink the room
    // until the message fits (a few rounds at most in practice).
    for _ in 0..16 {
        let allow: Vec<Option<u64>> = allot(&excess, room)
            .into_iter()
            .zip(&strings.minimum)
            .map(|(extra, min)| extra.map(|extra| min + extra))
            .collect();
        let shortened = rebuild(message, &strings, &allow, counter, marks);
        let tokens = counter.count_message(&shortened);
        if tokens <= budget {
            return Some(shortened);
        }
        room = room.checked_sub((tokens - budget).max(1))?;
    }
    None
}

/// The fewest tokens a unit's messages can be shortened to.
pub(crate) fn unit_minimum(messages: &[&Message], counter: &dyn TokenCounter) -> u64 {
    messages
        .iter()
        .map(|m| {
            let full = counter.count_message(m);
            let strings = collect(m, counter);
            let shortest = strings.shortest();
            counter.count_message(&rebuild(m, &strings, &shortest, counter, Marks::Count)).min(full)
        })
        .sum()
}

/// Shortens a unit's messages to cost at most `budget` tokens together, sharing the room
/// fairly among them; `None` when not even their skeletons fit. Returns each message
/// shortened, or `None` for one kept whole.
pub(crate) fn shorten_unit(
    messages: &[&Message],
    budget: u64,
    counter: &dyn TokenCounter,
    marks: Marks,
) -> Option<Vec<Option<Message>>> {
    let full: Vec<u64> = messages.iter().map(|m| counter.count_message(m)).collect();
    let minimum: Vec<u64> = messages
        .iter()
        .zip(&full)
        .map(|(m, &f)| {
            let strings = collect(m, counter);
            let shortest = strings.shortest();
            counter.count_message(&rebuild(m, &strings, &shortest, counter, Marks::Count)).min(f)
        })
        .collect();
    let room = budget.checked_sub(minimum.iter().sum())?;
    let excess: Vec<u64> = full.iter().zip(&minimum).map(|(f, m)| f - m).collect();
    let allot = allot(&excess, room);
    messages
        .iter()
        .zip(allot)
        .zip(&minimum)
        .map(|((m, extra), &min)| match extra {
            None => Some(None),
            Some(extra) => shorten_message(m, min + extra, counter, marks).map(Some),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::CharEstimate;

    #[test]
    fn allot_shares_fairly_and_keeps_small_strings_whole() {
        assert_eq!(allot(&[10, 100, 100], 110), [None, Some(50), Some(50)]);
        assert_eq!(allot(&[10, 20], 100), [None, None]);
        assert_eq!(allot(&[90, 30], 60), [Some(30), None]);
    }

    #[test]
    fn a_cut_never_splits_a_grapheme_cluster() {
        let family = "👨\u{200d}👩\u{200d}👧";
        let text = format!("ab{family}cd");
        for index in 0..text.len() {
            let at = floor_grapheme(&text, index);
            assert!(text.is_char_boundary(at));
            assert!(at <= 2 || at == 2 + family.len() || at >= 2 + family.len(), "{at}");
            assert!(!text[..at].ends_with('\u{200d}'));
        }
        let counter = CharEstimate::new(1, 0);
        for max in 0..8 {
            let kept = prefix(&text, max, &counter);
            assert!(!kept.ends_with('\u{200d}'), "{kept:?}");
            assert!(kept.graphemes(true).all(|g| text.contains(g)));
        }
    }

    #[test]
    fn a_named_cut_lists_the_terms_of_the_part_cut_within_the_allowance() {
        let counter = CharEstimate::default();
        let text = format!(
            "BEGIN {} the fix is in src/parser_core.rs near parse_binary {} END",
            "filler ".repeat(200),
            "padding ".repeat(200)
        );
        for max in [20, 40, 60, 120, 300] {
            let named = cut_text(&text, counter.count_text(&text), max, &counter, Marks::Terms);
            assert!(counter.count_text(&named) <= max, "{max}: {named}");
        }
        for max in [120, 300] {
            let named = cut_text(&text, counter.count_text(&text), max, &counter, Marks::Terms);
            assert!(named.starts_with("BEGIN") && named.ends_with("END"), "{named}");
            assert!(
                named.contains("[the part cut named: src/parser_core.rs, parse_binary]"),
                "{max}: {named}"
            );
            let plain = cut_text(&text, counter.count_text(&text), max, &counter, Marks::Count);
            assert!(!plain.contains("parse_binary") && !plain.contains(NAMING_OPEN), "{plain}");
        }
        // Too little room to name anything: the plain cut.
        assert_eq!(
            cut_text(&text, counter.count_text(&text), 25, &counter, Marks::Terms),
            cut_text(&text, counter.count_text(&text), 25, &counter, Marks::Count)
        );
    }

    #[test]
    fn text_keeps_its_beginning_and_end() {
        let counter = CharEstimate::default();
        let text = format!("BEGIN {} END", "middle ".repeat(400));
        let cut = cut_text(&text, counter.count_text(&text), 60, &counter, Marks::Count);
        assert!(cut.starts_with("BEGIN"), "{cut}");
        assert!(cut.ends_with("END"), "{cut}");
        assert!(cut.contains("tokens cut by curator"));
        assert!(counter.count_text(&cut) <= 60);
    }

    #[test]
    fn arguments_stay_valid_json_and_parts_stay_in_place() {
        let counter = CharEstimate::default();
        let call = ToolCall::new(
            "c1",
            "write_file",
            serde_json::json!({"path": "src/lib.rs", "content": "x".repeat(4_000)}).to_string(),
        );
        let message = Message::assistant_with_calls(Some("Writing it.".into()), vec![call]);
        let short = shorten_message(&message, 200, &counter, Marks::Count).unwrap();
        assert!(counter.count_message(&short) <= 200);
        let args: Value = serde_json::from_str(short.tool_calls()[0].arguments()).unwrap();
        assert_eq!(args["path"], "src/lib.rs");
        assert!(args["content"].as_str().unwrap().ends_with(ARGUMENT_NOTE));

        let image = Part::image(curator_model::ImageSource::from_url("https://x/a.png"));
        let parts = Content::Parts(vec![Part::text("y".repeat(3_000)), image.clone()]);
        let result = Message::tool_result("c1", parts);
        let short = shorten_message(&result, 1_700, &counter, Marks::Count).unwrap();
        let Some(Content::Parts(parts)) = short.content() else { panic!("parts") };
        assert_eq!(parts.len(), 2);
        assert!(parts[0].as_text().is_some_and(|t| t.contains("tokens cut")));
        assert_eq!(parts[1], image);
    }

    #[test]
    fn shortened_arguments_keep_their_number_text_and_layout() {
        // Issue 29: the arguments were re-serialized through `Value`, so `1e2` became
        // `100.0` and big integers floats, and `1E400` left them unshortened.
        let counter = CharEstimate::default();
        let text = format!(
            r#"{{"n": 1e2, "big": -12345678901234567890123, "huge": 1E400, "content": "{}", "f": 1.50}}"#,
            "x".repeat(4_000)
        );
        let call = ToolCall::new("c1", "write_file", text);
        let message = Message::assistant_with_calls(None, vec![call]);
        let short = shorten_message(&message, 200, &counter, Marks::Count).unwrap();
        let arguments = short.tool_calls()[0].arguments();
        assert!(counter.count_message(&short) <= 200, "{arguments}");
        assert!(
            arguments.starts_with(
                r#"{"n": 1e2, "big": -12345678901234567890123, "huge": 1E400, "content": "xx"#
            ),
            "{arguments}"
        );
        assert!(arguments.ends_with(&format!(r#"{ARGUMENT_NOTE}", "f": 1.50}}"#)), "{arguments}");
    }

    #[test]
    fn nothing_is_returned_when_the_skeleton_does_not_fit() {
        let counter = CharEstimate::default();
        let message = Message::user("z".repeat(1_000));
        assert!(shorten_message(&message, 5, &counter, Marks::Count).is_none());
    }
}
