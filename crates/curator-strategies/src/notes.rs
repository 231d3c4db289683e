//! What curator itself wrote into a view, told apart from what the conversation holds: the
//! folded-history note, and the notes of a cut text (how much was cut, and the terms the
//! cut part held or named).
//!
//! A term such a note lists tells the model that something existed, not what it said; a
//! measure of what a view keeps for the model should not count it as kept.

use std::borrow::Cow;

use curator_model::{Content, Message, Part};

use crate::{RelevanceBudget, cut_notes};

/// Where a folded-history note lists the terms of what it left out (see `relevance/fold.rs`).
const MENTIONED: &str = " They mentioned: ";
/// Where a shortened text names the terms of the part cut (see `shorten.rs`).
const NAMING_OPEN: &str = "[the part cut named: ";

/// Whether `text` opens curator's folded-history note (what a compaction or a relevance
/// budget left out), as a provider's request carries it: the writers of a request place a
/// prompt-cache breakpoint right before it, where a compaction's opening ends.
///
/// # Examples
///
/// ```
/// use curator::strategies::notes;
///
/// assert!(notes::opens_note("[curator left out 12 earlier messages to fit the context; ask for what you need again.]"));
/// assert!(!notes::opens_note("left out"));
/// ```
pub fn opens_note(text: &str) -> bool {
    text.starts_with(crate::relevance::NOTE_START)
}

/// `message` without the lists of terms curator wrote about what it left out: a
/// folded-history note keeps its count and the tool calls it names (their arguments as the
/// calls had them) but not its "They mentioned: …" list, and a cut text loses its cut notes
/// ("… characters cut by curator; the cut part held: …") and its "[the part cut named: …]"
/// lists. Borrowed when there is nothing to take out; `None` when nothing is left.
///
/// # Examples
///
/// ```
/// use curator::model::Message;
/// use curator::strategies::notes;
///
/// let cut = Message::tool_result("c1", "head\n[… 120 characters cut by curator to fit the token budget; the cut part held: src/a.rs …]\ntail");
/// let kept = notes::verbatim(&cut).unwrap();
/// assert_eq!(kept.text(), "headtail");
/// let plain = Message::user("hello");
/// assert_eq!(notes::verbatim(&plain).unwrap().text(), "hello");
/// ```
pub fn verbatim(message: &Message) -> Option<Cow<'_, Message>> {
    if RelevanceBudget::is_note(message) {
        let text = message.text();
        let Some(at) = text.find(MENTIONED) else { return Some(Cow::Borrowed(message)) };
        let kept = format!("{}]", &text[..at]);
        return Some(Cow::Owned(message.clone_with_content(Some(Content::Text(kept)))));
    }
    let content = match message.content() {
        Some(Content::Text(text)) => match strip(text) {
            Cow::Borrowed(_) => return Some(Cow::Borrowed(message)),
            Cow::Owned(text) => Content::Text(text),
        },
        Some(Content::Parts(parts)) => {
            let mut changed = false;
            let parts = parts
                .iter()
                .map(|part| match part {
                    Part::Text { text, extra } => match strip(text) {
                        Cow::Borrowed(_) => part.clone(),
                        Cow::Owned(text) => {
                            changed = true;
                            Part::Text { text, extra: extra.clone() }
                        }
                    },
                    _ => part.clone(),
                })
                .collect();
            if !changed {
                return Some(Cow::Borrowed(message));
            }
            Content::Parts(parts)
        }
        None => return Some(Cow::Borrowed(message)),
    };
    Some(Cow::Owned(message.clone_with_content(Some(content))))
}

/// `text` without curator's cut notes and naming lists.
fn strip(text: &str) -> Cow<'_, str> {
    let mut spans = cut_notes::spans(text);
    let mut from = 0;
    while let Some(at) = text.get(from..).and_then(|rest| rest.find(NAMING_OPEN)) {
        let start = from + at;
        let Some(close) = text[start..].find(']') else { break };
        let mut end = start + close + 1;
        if text[end..].starts_with('\n') {
            end += 1;
        }
        spans.push(start..end);
        from = end;
    }
    if spans.is_empty() {
        return Cow::Borrowed(text);
    }
    spans.sort_unstable_by_key(|s| s.start);
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for span in spans {
        if span.start >= at {
            out.push_str(&text[at..span.start]);
            at = span.end;
        } else {
            at = at.max(span.end);
        }
    }
    out.push_str(&text[at.min(text.len())..]);
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn naming_lists_and_cut_notes_go_and_the_rest_stays() {
        let text = "begin\n[… 40 tokens cut by curator to fit the token budget …]\n[the part cut named: parse_binary, src/a.rs]\nend";
        assert_eq!(strip(text), "beginend");
        assert_eq!(strip("no notes [here]"), "no notes [here]");
    }
}
