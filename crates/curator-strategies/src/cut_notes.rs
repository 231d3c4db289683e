//! Curator's own cut notes inside a text (`[… 3612 characters cut by curator …]`): a text cut
//! once and then cut again keeps its earlier note whole or leaves it out whole, says how much
//! the earlier cut took, and never names the earlier note's count as a term of the input.

use std::ops::Range;

/// How every cut note of curator's opens and closes, and what it says.
const OPEN: &str = "[… ";
const CLOSE: &str = " …]";
const MARK: &str = " cut by curator";
/// Where a tool-result cut's note lists what the cut part held.
const HELD: &str = "the cut part held: ";

/// The byte ranges of curator's cut notes in `text`, from `[… ` to ` …]` with the line
/// breaks that set them apart (a note is written on a line of its own), in order.
pub(crate) fn spans(text: &str) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    if !text.contains(MARK) {
        return out;
    }
    let mut from = 0;
    while let Some(open) = text.get(from..).and_then(|rest| rest.find(OPEN)) {
        let start = from + open;
        let Some(close) = text.get(start..).and_then(|rest| rest.find(CLOSE)) else { break };
        let end = start + close + CLOSE.len();
        if text.get(start..end).is_some_and(|note| note.contains(MARK)) {
            let first = if text[..start].ends_with('\n') { start - 1 } else { start };
            let last = if text[end..].starts_with('\n') { end + 1 } else { end };
            out.push(first..last);
        }
        from = end;
    }
    out
}

/// `at` moved back to the start of the note it falls inside (a beginning that ends there).
pub(crate) fn before(at: usize, spans: &[Range<usize>]) -> usize {
    spans.iter().find(|s| s.start < at && at < s.end).map_or(at, |s| s.start)
}

/// `at` moved on to the end of the note it falls inside (an end that starts there).
pub(crate) fn after(at: usize, spans: &[Range<usize>]) -> usize {
    spans.iter().find(|s| s.start < at && at < s.end).map_or(at, |s| s.end)
}

/// What the notes among `spans` that lie within `range` say was cut: characters, tokens.
pub(crate) fn taken(text: &str, spans: &[Range<usize>], range: Range<usize>) -> (u64, u64) {
    let mut sum = (0, 0);
    for span in spans.iter().filter(|s| range.start <= s.start && s.end <= range.end) {
        let Some(note) = text.get(span.clone()).and_then(|n| n.split_once(OPEN)).map(|(_, n)| n)
        else {
            continue;
        };
        let digits = note.bytes().take_while(u8::is_ascii_digit).count();
        let Ok(count) = note[..digits].parse::<u64>() else { continue };
        if note[digits..].starts_with(" characters") {
            sum.0 += count;
        } else if note[digits..].starts_with(" tokens") {
            sum.1 += count;
        }
    }
    sum
}

/// `middle` as a list of terms reads it: each of curator's notes in it (`spans`, offsets into
/// the whole text, `middle` starting at `offset`) replaced by what it says the cut part held,
/// so that a note's count is not taken for a term of the input.
pub(crate) fn without_counts<'m>(
    middle: &'m str,
    offset: usize,
    spans: &[Range<usize>],
) -> std::borrow::Cow<'m, str> {
    let end = offset + middle.len();
    let inside: Vec<&Range<usize>> =
        spans.iter().filter(|s| offset <= s.start && s.end <= end).collect();
    if inside.is_empty() {
        return std::borrow::Cow::Borrowed(middle);
    }
    let mut out = String::with_capacity(middle.len());
    let mut from = 0;
    for span in inside {
        let (start, stop) = (span.start - offset, span.end - offset);
        out.push_str(&middle[from..start]);
        let note = &middle[start..stop];
        let note = note.rfind(CLOSE).map_or(note, |close| &note[..close]);
        if let Some(at) = note.find(HELD) {
            out.push(' ');
            out.push_str(&note[at + HELD.len()..]);
            out.push(' ');
        }
        from = stop;
    }
    out.push_str(&middle[from..]);
    std::borrow::Cow::Owned(out)
}

/// What the cut note adds when the part it cut held earlier cuts (`, 3618 characters
/// before`): empty when none. Short, since it costs tokens at the tightest budgets.
pub(crate) fn earlier((characters, tokens): (u64, u64)) -> String {
    match (characters, tokens) {
        (0, 0) => String::new(),
        (c, 0) => format!(", {c} characters before"),
        (0, t) => format!(", {t} tokens before"),
        (c, t) => format!(", {c} characters and {t} tokens before"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notes_are_found_kept_whole_and_read_for_what_they_took() {
        let text = "head\n[… 3612 characters cut by curator to fit the token budget; the cut part \
                    held: src/a.rs 840 …]\ntail [… 7 tokens cut by curator to fit the token \
                    budget …] [… not ours …]";
        let spans = spans(text);
        assert_eq!(spans.len(), 2);
        assert!(text[spans[0].clone()].starts_with("\n[… 3612"));
        assert!(text[spans[0].clone()].ends_with(" …]\n"));
        let inside = spans[0].start + 10;
        assert_eq!(before(inside, &spans), spans[0].start);
        assert_eq!(after(inside, &spans), spans[0].end);
        assert_eq!(before(2, &spans), 2);
        assert_eq!(taken(text, &spans, 0..text.len()), (3612, 7));
        assert_eq!(taken(text, &spans, 0..spans[0].end), (3612, 0));
        let middle = &text[4..spans[0].end + 3];
        let read = without_counts(middle, 4, &spans);
        assert!(!read.contains("3612"), "{read}");
        assert!(read.contains("src/a.rs 840"), "{read}");
        assert_eq!(earlier((3612, 0)), ", 3612 characters before");
        assert_eq!(earlier((0, 0)), "");
    }
}
