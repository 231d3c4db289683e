//! The budget's own cut of long tool results: the beginning and the end kept, and between
//! them a note naming what the cut middle held.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use curator_model::{Content, Message, Part, Role};

use crate::fx::FxBuild;
use crate::map::stable_hash;
use crate::shorten::floor_grapheme;
use crate::terms::ERROR_MARKS;
use crate::{History, MessageMap};

/// Of the characters kept around the note, the share of the beginning; the end gets the
/// rest. Over `../shared/corpus` two thirds keeps as much evidence as a half at 4,000 tokens
/// and more than four fifths (see `docs/benchmarks.md`).
const HEAD_SHARE: f64 = 2.0 / 3.0;

/// The most of a cut text's characters that the names of its cut middle take (less when
/// fewer names are needed). A name tells the model that something was there, not what it
/// said: over `../shared/corpus` at 8,000 tokens (the default pipeline), 0.1 keeps more of
/// the evidence verbatim than 0.55 (98.4% on average and 83.9% in the worst tenth of calls,
/// against 98.3% and 82.6%), as the kept ends are longer; counting the names, it keeps less
/// (99.4% and 93.5%, against 99.6% and 96.2%).
const NAMING_SHARE: f64 = 0.1;

/// The longest failure line quoted from a cut middle, in characters.
const MAX_LINE: usize = 120;

/// How far (in bytes) the end kept may start later, to begin with a whole line.
const LINE_SLACK: usize = 200;

/// The characters of the note's fixed words and count, reserved from the cut text's room.
const NOTE_CHARS: usize = 100;

/// Cuts every tool-result text over `max_chars` characters to about `max_chars`: its
/// beginning, a note saying how many characters were cut and naming what the cut part held
/// (its failure lines, then its distinctive terms that the kept ends do not show), and its
/// end. A lazy, memoised [`MessageMap`].
#[derive(Debug)]
pub(crate) struct EndsCut {
    max_chars: usize,
    key: u64,
    focus: Option<Arc<Focus>>,
    /// What identifies a focused cut besides the message: the characters kept and the
    /// query's terms.
    focus_key: u64,
    /// Where focused cuts are kept across calls (see [`FocusCache`]).
    focus_cache: Option<Arc<FocusCache>>,
    /// The characters the present's results keep (at least `max_chars`).
    present_max: usize,
}

/// The present's tool results (history positions) and the terms the present is about: the
/// task's and those of the present's own text and call arguments. A long result of the
/// present keeps, besides its ends, the lines of its middle that name them.
#[derive(Debug, Default)]
pub(crate) struct Focus {
    /// Rising ([`Focus::new`] sorts them).
    positions: Vec<usize>,
    terms: HashSet<String, FxBuild>,
    /// A hash of the terms, made once for the cuts that share this focus.
    terms_key: OnceLock<u64>,
}

impl Focus {
    /// The focus on the tool results at `positions` (in any order) and on `terms`.
    pub(crate) fn new(mut positions: Vec<usize>, terms: HashSet<String, FxBuild>) -> Self {
        positions.sort_unstable();
        positions.dedup();
        Focus { positions, terms, terms_key: OnceLock::new() }
    }

    /// Whether the tool result at history position `pos` is one of the present's.
    pub(crate) fn holds(&self, pos: usize) -> bool {
        self.positions.binary_search(&pos).is_ok()
    }

    /// A hash of the terms (in sorted order, so that the set's order does not matter).
    fn terms_key(&self) -> u64 {
        *self.terms_key.get_or_init(|| {
            let mut terms: Vec<&str> = self.terms.iter().map(String::as_str).collect();
            terms.sort_unstable();
            let mut parts: Vec<&[u8]> = vec![b"relevance_budget.focus_terms"];
            parts.extend(terms.iter().map(|t| t.as_bytes()));
            stable_hash(&parts)
        })
    }
}

/// The focused cuts of the latest query, kept by the strategy across calls. A focused cut
/// depends on the present, so it is not memoised per position with the history as the plain
/// cut is (that would keep one entry per call for the life of the history): the present's
/// long results are cut once per query, not on every read, and the cuts of an earlier query
/// are let go when another comes.
#[derive(Debug, Default)]
pub(crate) struct FocusCache {
    latest: Mutex<FocusCuts>,
}

/// The cuts of one query: its history and key, and each position's cut with the message
/// it was made from.
#[derive(Debug, Default)]
struct FocusCuts {
    query: (u64, u64),
    cuts: HashMap<usize, KeptCut, FxBuild>,
}

/// A kept focused cut: the message it was made from, and the cut (`None`: nothing to cut).
type KeptCut = (Arc<Message>, Option<Arc<Message>>);

impl FocusCache {
    /// The cut of `message` under `key` (the history's id, the cut's focus key, the
    /// position), made by `cut` the first time. A kept cut is served only when the message
    /// it was made from equals `message` (compared whole: no hash to collide).
    fn get_or_cut(
        &self,
        (history, focus, pos): (u64, u64, usize),
        message: &Message,
        cut: impl FnOnce() -> Option<Message>,
    ) -> Option<Message> {
        let found = {
            let latest = self.latest.lock().unwrap_or_else(PoisonError::into_inner);
            (latest.query == (history, focus))
                .then(|| latest.cuts.get(&pos).filter(|(from, _)| **from == *message))
                .flatten()
                .map(|(_, made)| made.clone())
        };
        if let Some(made) = found {
            return made.map(|message| Message::clone(&message));
        }
        let made = cut().map(Arc::new);
        let mut latest = self.latest.lock().unwrap_or_else(PoisonError::into_inner);
        if latest.query != (history, focus) {
            latest.query = (history, focus);
            latest.cuts.clear();
        }
        latest.cuts.insert(pos, (Arc::new(message.clone()), made.clone()));
        made.map(|message| Message::clone(&message))
    }
}

/// The shares of the kept characters that a focused cut gives to the beginning and to the
/// end; the rest goes to the lines of the middle that name the present's terms.
const FOCUS_HEAD_SHARE: f64 = 0.4;
const FOCUS_TAIL_SHARE: f64 = 0.2;

/// What a focused cut writes beyond a plain cut's note (its longer note, the mark closing
/// the kept lines), in characters, so that it keeps to the same length.
const FOCUS_MARKS: usize = 80;

impl EndsCut {
    pub(crate) fn new(max_chars: usize) -> Self {
        let key = stable_hash(&[b"relevance_budget.ends_cut", &max_chars.to_le_bytes()]);
        Self {
            max_chars,
            key,
            focus: None,
            focus_key: 0,
            focus_cache: None,
            present_max: max_chars,
        }
    }

    /// The same cut, with the present's results kept to `chars` characters (when more than
    /// the others keep): the model needs them next. Set it before [`with_focus`](Self::with_focus).
    pub(crate) fn with_present_max(mut self, chars: usize) -> Self {
        self.present_max = chars.max(self.max_chars);
        self
    }

    /// The same cut, focused on the present (see [`Focus`]), its cuts kept in `cache`.
    pub(crate) fn with_focus(mut self, focus: Arc<Focus>, cache: Arc<FocusCache>) -> Self {
        let mut max = self.max_chars.to_le_bytes().to_vec();
        max.extend(self.present_max.to_le_bytes());
        let terms = focus.terms_key().to_le_bytes();
        self.focus_key = stable_hash(&[b"relevance_budget.focused_cut", &max, &terms]);
        self.focus = Some(focus);
        self.focus_cache = Some(cache);
        self
    }

    /// The present's terms, when `pos` is one of its tool results and it has terms.
    fn focused(&self, pos: Option<usize>) -> Option<&HashSet<String, FxBuild>> {
        let focus = self.focus.as_ref()?;
        (!focus.terms.is_empty() && pos.is_some_and(|p| focus.holds(p))).then_some(&focus.terms)
    }

    /// As [`cut`](Self::cut), but with a shorter beginning and end ([`FOCUS_HEAD_SHARE`],
    /// [`FOCUS_TAIL_SHARE`]), and between them the lines of the middle holding the most of
    /// `query`'s terms, in their order, in the rest of the kept characters. Without such a
    /// line, the plain cut.
    pub(crate) fn cut_focused(
        &self,
        text: &str,
        query: &HashSet<String, FxBuild>,
    ) -> Option<String> {
        let Split { head, middle, tail, naming_room, rest } =
            Self::split(text, self.present_max, |ends| {
                (share(FOCUS_HEAD_SHARE, ends), share(FOCUS_TAIL_SHARE, ends))
            })?;
        let focus_room = rest.saturating_sub(FOCUS_MARKS);
        let mut lines: Vec<(usize, usize, &str)> = Vec::new();
        for (n, line) in middle.lines().enumerate() {
            let mut hits = 0;
            crate::terms::scan(line, &mut |term| {
                hits += usize::from(query.contains(term));
                true
            });
            if hits > 0 {
                lines.push((hits, n, line));
            }
        }
        // The most hits first, the earlier on ties; then back in their order.
        lines.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        let mut size = 0;
        let mut chosen: Vec<(usize, &str)> = Vec::new();
        for (_, n, line) in lines {
            let cost = line.chars().count() + 1;
            if size + cost <= focus_room {
                size += cost;
                chosen.push((n, line));
            }
        }
        if chosen.is_empty() {
            return Self::cut_to(text, self.present_max);
        }
        chosen.sort_unstable_by_key(|c| c.0);
        let kept = chosen.iter().map(|c| c.1).collect::<Vec<_>>().join("\n");
        let names = name(middle, &format!("{head}\n{kept}"), tail, naming_room);
        let cut = middle.chars().count().saturating_sub(size);
        let mut out = String::with_capacity(head.len() + kept.len() + tail.len() + names.len());
        out.push_str(head);
        out.push_str("\n[… ");
        out.push_str(&cut.to_string());
        out.push_str(
            " characters cut by curator to fit the token budget, but for the lines below that \
             name terms of the task or of the call",
        );
        if !names.is_empty() {
            out.push_str("; the cut part held: ");
            out.push_str(&names);
        }
        out.push_str(" …]\n");
        out.push_str(&kept);
        out.push_str("\n[…]\n");
        out.push_str(tail);
        Some(out)
    }

    /// `message` with its long texts cut (focused on `query` when given), or `None` when
    /// it has none.
    fn cut_message(
        &self,
        message: &Message,
        query: Option<&HashSet<String, FxBuild>>,
        max: usize,
    ) -> Option<Message> {
        let cut = |text: &str| match query {
            Some(query) => self.cut_focused(text, query),
            None => Self::cut_to(text, max),
        };
        let new = match message.content()? {
            Content::Text(text) => Content::Text(cut(text)?),
            Content::Parts(parts) => {
                let mut changed = false;
                let parts = parts
                    .iter()
                    .map(|part| match part {
                        Part::Text { text, extra } => match cut(text) {
                            Some(cut) => {
                                changed = true;
                                Part::Text { text: cut, extra: extra.clone() }
                            }
                            None => part.clone(),
                        },
                        _ => part.clone(),
                    })
                    .collect();
                if !changed {
                    return None;
                }
                Content::Parts(parts)
            }
        };
        Some(message.clone_with_content(Some(new)))
    }

    /// `text` cut, or `None` when it is within `max_chars` characters.
    #[cfg(test)]
    pub(crate) fn cut(&self, text: &str) -> Option<String> {
        Self::cut_to(text, self.max_chars)
    }

    /// `text` cut, or `None` when it is within `max` characters.
    fn cut_to(text: &str, max: usize) -> Option<String> {
        let Split { head, middle, tail, naming_room, .. } = Self::split(text, max, |ends| {
            let head_chars = share(HEAD_SHARE, ends);
            (head_chars, ends - head_chars)
        })?;
        let names = name(middle, head, tail, naming_room);
        let cut = middle.chars().count();
        let mut out = String::with_capacity(head.len() + tail.len() + names.len() + NOTE_CHARS);
        out.push_str(head);
        out.push_str("\n[… ");
        out.push_str(&cut.to_string());
        out.push_str(" characters cut by curator to fit the token budget");
        if !names.is_empty() {
            out.push_str("; the cut part held: ");
            out.push_str(&names);
        }
        out.push_str(" …]\n");
        out.push_str(tail);
        Some(out)
    }
}

impl EndsCut {
    /// `text` split for a cut, or `None` when it is within `max` characters: the room for
    /// naming the middle is set aside, with the cut's note; `chars` gives, from the
    /// characters left for the ends, the beginning's and the end's.
    fn split(
        text: &str,
        max: usize,
        chars: impl FnOnce(usize) -> (usize, usize),
    ) -> Option<Split<'_>> {
        let total = text.chars().count();
        if total <= max {
            return None;
        }
        let naming_room = share(NAMING_SHARE, max);
        let ends = max.saturating_sub(naming_room + NOTE_CHARS);
        let (head_chars, tail_chars) = chars(ends);
        let head_end = floor_grapheme(text, byte_at(text, head_chars));
        let tail_start = line_start(text, byte_at(text, total - tail_chars), head_end);
        Some(Split {
            head: &text[..head_end],
            middle: &text[head_end..tail_start],
            tail: &text[tail_start..],
            naming_room,
            rest: ends.saturating_sub(head_chars + tail_chars),
        })
    }
}

/// A text split for a cut (see [`EndsCut::split`]).
struct Split<'t> {
    head: &'t str,
    middle: &'t str,
    tail: &'t str,
    /// The characters for naming what the middle held.
    naming_room: usize,
    /// The characters for the ends that neither end took.
    rest: usize,
}

/// `share` of `of`, rounded down.
fn share(share: f64, of: usize) -> usize {
    #[expect(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss,
        reason = "a share of a text's length: small, and rounding down is meant"
    )]
    let n = (share * of as f64) as usize;
    n.min(of)
}

/// The byte index of the `chars`-th character of `text` (its length past the end).
fn byte_at(text: &str, chars: usize) -> usize {
    text.char_indices().nth(chars).map_or(text.len(), |(i, _)| i)
}

/// Where the end kept starts: `at` on a grapheme boundary (not before `floor`), moved on to
/// the start of the next line when that is within [`LINE_SLACK`] bytes, so that the end
/// begins with a whole line (and keeps no more than its share).
fn line_start(text: &str, at: usize, floor: usize) -> usize {
    let at = floor_grapheme(text, at).max(floor);
    if at == 0 || text.as_bytes().get(at - 1) == Some(&b'\n') {
        return at;
    }
    match text[at..].find('\n') {
        Some(nl) if nl < LINE_SLACK && at + nl + 1 < text.len() => at + nl + 1,
        _ => at,
    }
}

/// What `middle` held, in at most `room` characters: its failure lines (up to three, each
/// cut to [`MAX_LINE`]), then its distinctive terms, in order, that `head`, `tail`, those
/// lines and a term already named do not show, each written so that it reads back as itself
/// ([`written`](crate::terms::written): a quoted value between its quotes).
fn name(middle: &str, head: &str, tail: &str, room: usize) -> String {
    let (out, mut size) = failure_lines(middle, room);
    // The terms named, as written (a quoted value between its quotes): first the others in
    // order, until one does not fit; then the numbers (mostly line numbers) in order, until
    // one does not fit, as in the folded-history note. One scan: the numbers met while the
    // others are still taken wait for them.
    let mut terms: Vec<Cow<'_, str>> = Vec::new();
    let numeric = |term: &str| term.bytes().all(|b| b.is_ascii_digit() || b == b'.' || b == b':');
    // Adds `term` unless it is shown already; `false` when it does not fit.
    let shown = |term: &str, terms: &[Cow<'_, str>]| {
        head.contains(term)
            || tail.contains(term)
            || out.contains(term)
            || terms.iter().any(|t| t.contains(term))
    };
    let mut add = |term, terms: &mut Vec<_>| add_term(term, terms, &mut size, room, &shown);
    let (mut others, mut waiting): (bool, Vec<&str>) = (true, Vec::new());
    let mut numbers_fit = true;
    crate::terms::scan(middle, &mut |term| {
        if numeric(term) {
            if others {
                waiting.push(term);
                return true;
            }
            numbers_fit = add(term, &mut terms);
            return numbers_fit;
        }
        if !others || add(term, &mut terms) {
            return true;
        }
        // The first other term that does not fit: no more of them; the numbers so far.
        others = false;
        numbers_fit = waiting.drain(..).all(|n| add(n, &mut terms));
        numbers_fit
    });
    if numbers_fit {
        for n in waiting {
            if !add(n, &mut terms) {
                break;
            }
        }
    }
    with_terms(out, &terms)
}

/// `out` (the failure lines) followed by `terms: ` and the terms named, when there are any.
fn with_terms(mut out: String, terms: &[Cow<'_, str>]) -> String {
    if !terms.is_empty() {
        if !out.is_empty() {
            out.push_str(" | ");
        }
        out.push_str("terms: ");
        out.push_str(&terms.join(", "));
    }
    out
}

/// The failure lines of `middle` (up to three, each cut to [`MAX_LINE`]) that fit in
/// `room`, joined by ` | `, and the room they take.
fn failure_lines(middle: &str, room: usize) -> (String, usize) {
    let mut out = String::new();
    let mut size = 0;
    let failures =
        middle.lines().map(str::trim).filter(|l| ERROR_MARKS.iter().any(|m| l.contains(m))).take(3);
    for line in failures {
        let line = match line.char_indices().nth(MAX_LINE - 1) {
            Some((at, _)) => format!("{}…", &line[..at]),
            None => line.to_owned(),
        };
        let cost = line.chars().count() + 3;
        if size + cost > room {
            break;
        }
        if !out.is_empty() {
            out.push_str(" | ");
        }
        out.push_str(&line);
        size += cost;
    }
    (out, size)
}

/// Adds `term` to `terms` as written unless `shown` says a term there or the text shows it;
/// `false` when it does not fit in `room` with `size` taken.
fn add_term<'m>(
    term: &'m str,
    terms: &mut Vec<Cow<'m, str>>,
    size: &mut usize,
    room: usize,
    shown: &dyn Fn(&str, &[Cow<'m, str>]) -> bool,
) -> bool {
    if shown(term, terms) {
        return true;
    }
    let written = crate::terms::written(term);
    let cost = written.chars().count() + 2;
    if *size + cost > room {
        return false;
    }
    *size += cost;
    terms.push(written);
    true
}

impl MessageMap for EndsCut {
    fn map(&self, message: &Message, pos: Option<usize>, history: &History<'_>) -> Option<Message> {
        if message.role() != Role::Tool {
            return None;
        }
        let present = self.focus.as_ref().is_some_and(|f| pos.is_some_and(|p| f.holds(p)));
        match (self.focused(pos), &self.focus_cache, pos) {
            (Some(query), Some(cache), Some(pos)) => {
                // What reaches the cut at a position may differ between pipelines (an
                // upstream map or replacement): a kept cut is served only for the message
                // it was made from.
                let key = (history.id(), self.focus_key, pos);
                cache.get_or_cut(key, message, || {
                    self.cut_message(message, Some(query), self.present_max)
                })
            }
            (query, _, _) => {
                let max = if present { self.present_max } else { self.max_chars };
                self.cut_message(message, query, max)
            }
        }
    }

    fn memo_key(&self, pos: usize) -> Option<u64> {
        // A focused cut, or a present's result left whole, depends on the present, which
        // changes from call to call.
        if self.focus.as_ref().is_some_and(|focus| focus.holds(pos)) {
            return None;
        }
        Some(self.key)
    }

    /// Messages other than tool results, and tool results whose texts have no more bytes
    /// than the characters the cut keeps (a text has at least as many bytes as characters).
    fn leaves_unchanged(&self, message: &Message) -> bool {
        message.role() != Role::Tool
            || match message.content() {
                Some(Content::Text(text)) => text.len() <= self.max_chars,
                Some(Content::Parts(parts)) => {
                    parts.iter().filter_map(Part::as_text).all(|t| t.len() <= self.max_chars)
                }
                None => true,
            }
    }

    /// The answers above depend on the characters kept alone.
    fn unchanged_key(&self) -> Option<u64> {
        Some(stable_hash(&[
            b"relevance_budget.ends_cut.leaves_unchanged",
            &self.max_chars.to_le_bytes(),
        ]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_output_keeps_its_beginning_and_its_end_and_names_its_middle() {
        use std::fmt::Write as _;

        let mut text = String::from("$ cargo test\n");
        for i in 0..400 {
            let _ = writeln!(text, "line {i} of the output, nothing to see");
            if i == 200 {
                text.push_str("thread 'parse_binary' panicked at src/grammar/parser_core.rs:214\n");
            }
        }
        text.push_str("flag{the_answer_at_the_end}\n");
        let cut = EndsCut::new(2_000).cut(&text).unwrap();
        assert!(cut.chars().count() <= 2_000, "{} characters", cut.chars().count());
        assert!(cut.starts_with("$ cargo test\nline 0 of"));
        assert!(cut.ends_with("flag{the_answer_at_the_end}\n"));
        assert!(cut.contains("panicked at src/grammar/parser_core.rs:214"), "{cut}");
        assert!(cut.contains("characters cut by curator"));
        // The end begins with a whole line.
        let tail = cut.rsplit(" …]\n").next().unwrap();
        assert!(tail.starts_with("line "), "{tail}");
    }

    /// `name` as it was written first: two scans of the middle, the others then the
    /// numbers, after the failure lines; the one-scan `name` must name the same terms.
    fn name_in_two_scans(middle: &str, head: &str, tail: &str, room: usize) -> String {
        let (out, mut size) = failure_lines(middle, room);
        let mut terms: Vec<Cow<'_, str>> = Vec::new();
        let numeric =
            |term: &str| term.bytes().all(|b| b.is_ascii_digit() || b == b'.' || b == b':');
        for numbers in [false, true] {
            crate::terms::scan(middle, &mut |term| {
                let shown = head.contains(term) || tail.contains(term) || out.contains(term);
                if numeric(term) != numbers || shown || terms.iter().any(|t| t.contains(term)) {
                    return true;
                }
                let term = crate::terms::written(term);
                let cost = term.chars().count() + 2;
                if size + cost > room {
                    return false;
                }
                size += cost;
                terms.push(term);
                true
            });
        }
        with_terms(out, &terms)
    }

    proptest::proptest! {
        #[test]
        fn one_scan_names_what_two_scans_named(
            words in proptest::collection::vec(
                proptest::prop_oneof![
                    "[0-9]{1,5}",
                    "[0-9]{1,3}[.:][0-9]{1,3}",
                    "[a-z]{2,6}[A-Z][a-z]{1,6}",
                    "src/[a-z]{1,8}\\.rs(:[0-9]{1,3})?",
                    "\"[a-z_ ]{3,12}\"",
                    "ERROR: [a-z ]{0,20}",
                    "[a-z]{1,7}",
                    "\n",
                ],
                0..60,
            ),
            head_words in 0..5_usize,
            room in 0..200_usize,
        ) {
            let middle = words.join(" ");
            let head = words.iter().take(head_words).cloned().collect::<Vec<_>>().join(" ");
            let tail = words.last().cloned().unwrap_or_default();
            proptest::prop_assert_eq!(
                name(&middle, &head, &tail, room),
                name_in_two_scans(&middle, &head, &tail, room)
            );
        }

        /// A message the cut says it leaves unchanged is left unchanged.
        #[test]
        fn what_it_says_it_leaves_is_left(text in "(\\PC|\n){0,700}", max in 0usize..600) {
            let cut = EndsCut::new(max);
            let history = History::from(Vec::<Message>::new());
            for message in [Message::tool_result("c", text.clone()), Message::user(text.clone())] {
                if cut.leaves_unchanged(&message) {
                    proptest::prop_assert_eq!(cut.map(&message, None, &history), None);
                }
            }
        }
    }

    #[test]
    fn a_focused_cut_keeps_the_middle_lines_that_name_the_query() {
        use std::fmt::Write as _;

        let mut text = String::new();
        for i in 0..400 {
            let _ = writeln!(text, "line {i} of the output, nothing to see");
            if i == 200 {
                text.push_str("    def parse_binary_header(self):\n");
            }
        }
        let query: HashSet<String, FxBuild> =
            std::iter::once("parse_binary_header".to_owned()).collect();
        let cut = EndsCut::new(2_000).cut_focused(&text, &query).unwrap();
        assert!(cut.chars().count() <= 2_000, "{} characters", cut.chars().count());
        assert!(cut.starts_with("line 0 of"), "{cut}");
        assert!(cut.ends_with("line 399 of the output, nothing to see\n"), "{cut}");
        assert!(cut.contains("\n    def parse_binary_header(self):\n[…]\n"), "{cut}");
        // Without a line naming the query, the plain cut.
        let other = std::iter::once("elsewhere_only".to_owned()).collect();
        assert_eq!(EndsCut::new(2_000).cut_focused(&text, &other), EndsCut::new(2_000).cut(&text));
    }

    #[test]
    fn a_kept_focused_cut_is_not_served_for_another_message_at_its_position() {
        use curator_model::ToolCall;

        use std::fmt::Write as _;

        let long = |word: &str| {
            let mut text = String::new();
            for i in 0..300 {
                let _ = writeln!(text, "line {i} {word}");
            }
            text.push_str("    def parse_binary_header(self):\n");
            text
        };
        let history = History::from(vec![
            Message::user("fix parse_binary_header"),
            Message::assistant_with_calls(None, vec![ToolCall::new("1", "read", "{}")]),
            Message::tool_result("1", long("alpha")),
        ]);
        let focus = || {
            let terms = std::iter::once("parse_binary_header".to_owned()).collect();
            Arc::new(Focus::new(vec![2], terms))
        };
        let cache = Arc::new(FocusCache::default());
        let cut = EndsCut::new(1_000).with_focus(focus(), Arc::clone(&cache));
        let first = cut.map(&history.messages()[2], Some(2), &history).unwrap();
        assert!(first.text().contains("alpha"), "{}", first.text());
        // The same position, the same query, another message (as an upstream map makes).
        let other = Message::tool_result("1", long("omega"));
        let second = cut.map(&other, Some(2), &history).unwrap();
        assert!(second.text().contains("omega") && !second.text().contains("alpha"));
        // And the first again, from the cache or not, as it was.
        assert_eq!(cut.map(&history.messages()[2], Some(2), &history), Some(first));
    }

    #[test]
    fn a_short_output_is_left_alone() {
        assert_eq!(EndsCut::new(100).cut("short"), None);
        assert_eq!(EndsCut::new(5).cut("short"), None);
    }

    #[test]
    fn a_cut_falls_on_grapheme_boundaries() {
        let family = "👨\u{200d}👩\u{200d}👧";
        let text = family.repeat(2_000);
        let cut = EndsCut::new(500).cut(&text).unwrap();
        let (head, rest) = cut.split_once("\n[… ").unwrap();
        let tail = rest.rsplit(" …]\n").next().unwrap();
        assert!(head.is_empty() || head.ends_with('👧'), "{head:?}");
        assert!(tail.is_empty() || tail.starts_with('👨'), "{tail:?}");
    }
}
