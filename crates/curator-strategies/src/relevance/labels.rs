//! The call labels of the folded-history note (`name(arguments)`), and a cache of them
//! across calls: a label costs a parse of the call's arguments and a scan of its text, and
//! the calls a note lists are mostly the same from one agent-loop iteration to the next.

use std::collections::HashMap;
use std::fmt::{self, Write as _};
use std::ops::Range;
use std::sync::{Mutex, PoisonError};

use curator_model::ToolCall;
use serde_json::Value;

use crate::fx::FxBuild;
use crate::term_index::TermIndex;
use crate::terms::scan;

/// The longest arguments text a note quotes for a tool call, in characters. Over
/// `../shared/corpus`, 120 keeps more evidence at 4,000 tokens than the first argument alone
/// (60 characters) or 80 or 160 characters of arguments (see `docs/benchmarks.md`).
const MAX_ARGUMENTS: usize = 120;

/// A call's label and where in it the terms it shows are (as a scan finds them).
#[derive(Debug)]
pub(super) struct Label {
    text: String,
    terms: Vec<Range<usize>>,
    /// The ids [`shown`](Label::shown) found, with the size of the index's vocabulary when it
    /// looked: a term's id never changes, and a term the index lacked can only have come in
    /// with a larger vocabulary.
    found: Option<(usize, Vec<u32>)>,
}

impl Label {
    fn new(call: &ToolCall) -> Self {
        let text = call_label(call);
        let mut terms = Vec::new();
        let base = text.as_ptr() as usize;
        scan(&text, &mut |term| {
            // A scan finds pieces of the text it reads.
            let start = term.as_ptr() as usize - base;
            terms.push(start..start + term.len());
            true
        });
        Label { text, terms, found: None }
    }

    /// The label's text.
    pub(super) fn text(&self) -> &str {
        &self.text
    }

    /// The ids of the terms the label shows that `index` holds, into `ids` (looked up again
    /// only when the index has grown since).
    pub(super) fn shown(&mut self, index: &TermIndex, ids: &mut Vec<u32>) {
        let vocabulary = index.vocabulary();
        let found = match &mut self.found {
            Some((seen, found)) if *seen == vocabulary => found,
            slot => {
                let found = self
                    .terms
                    .iter()
                    .filter_map(|r| self.text.get(r.clone()).and_then(|t| index.id(t)))
                    .collect();
                &slot.insert((vocabulary, found)).1
            }
        };
        ids.clear();
        ids.extend_from_slice(found);
    }
}

/// The labels of the calls one note read, by history position, with the calls they were
/// made from: the next note reuses a position's labels only when its calls are the same
/// (compared whole), and lets go of those it did not read. A cache: what a note lists does
/// not depend on it.
#[derive(Debug, Default)]
pub(crate) struct LabelCache {
    latest: Mutex<Labels>,
}

/// The labels of one note's calls: its history's id, and per position the calls and their
/// labels.
#[derive(Debug, Default)]
pub(super) struct Labels {
    history: u64,
    at: HashMap<usize, (Vec<ToolCall>, Vec<Label>), FxBuild>,
}

impl LabelCache {
    /// The labels kept for `history` (taken out of the cache, to be given back with
    /// [`LabelCache::keep`]).
    pub(super) fn take(&self, history: u64) -> Labels {
        let mut latest = self.latest.lock().unwrap_or_else(PoisonError::into_inner);
        let labels = std::mem::take(&mut *latest);
        if labels.history == history { labels } else { Labels { history, at: HashMap::default() } }
    }

    /// Keeps `labels` for the next note.
    pub(super) fn keep(&self, labels: Labels) {
        *self.latest.lock().unwrap_or_else(PoisonError::into_inner) = labels;
    }
}

impl Labels {
    /// Moves the labels of `calls` at `pos` from `self` to `into` (made when `self` has
    /// none for these calls), and returns them.
    pub(super) fn move_into<'a>(
        &mut self,
        into: &'a mut Labels,
        pos: usize,
        calls: &[ToolCall],
    ) -> &'a mut [Label] {
        let entry = match self.at.remove(&pos) {
            Some(entry) if entry.0 == calls => entry,
            _ => (calls.to_vec(), calls.iter().map(Label::new).collect()),
        };
        into.history = self.history;
        &mut into.at.entry(pos).insert_entry(entry).into_mut().1
    }
}

/// `name(arguments)`: the call's name and its arguments as compact JSON (their first line
/// when they are not JSON; nothing when there are none), cut to [`MAX_ARGUMENTS`]
/// characters with `…`. The arguments' keys and values are what the model needs to make the
/// call again.
fn call_label(call: &ToolCall) -> String {
    let mut short = Prefix { text: String::new(), room: MAX_ARGUMENTS, more: false };
    match call.arguments_json() {
        Ok(Value::Object(map)) if map.is_empty() => {}
        // Written only as far as the label shows (arguments can be whole files).
        Ok(value) => {
            let _ = write!(short, "{value}");
        }
        Err(_) => {
            let _ = short.write_str(call.arguments().lines().next().unwrap_or_default().trim());
        }
    }
    let more = if short.more { "…" } else { "" };
    format!("{}({}{more})", call.name(), short.text)
}

/// The first `room` characters written to it, and whether more came (the write then fails,
/// which stops the writer).
struct Prefix {
    text: String,
    room: usize,
    more: bool,
}

impl fmt::Write for Prefix {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        for (n, (at, _)) in s.char_indices().enumerate() {
            if n == self.room {
                self.text.push_str(&s[..at]);
                self.room = 0;
                self.more = true;
                return Err(fmt::Error);
            }
        }
        self.room -= s.chars().count();
        self.text.push_str(s);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use curator_model::ToolCall;

    use super::{Label, MAX_ARGUMENTS, call_label};
    use crate::term_index::TermIndex;

    #[test]
    fn a_label_finds_the_terms_an_index_took_in_after_it_first_looked() {
        let call = ToolCall::new("c1", "open", r#"{"path": "src/parse_binary.rs"}"#);
        let mut label = Label::new(&call);
        let mut index = TermIndex::default();
        index.push(&curator_model::Message::assistant("nothing distinctive"));
        let mut ids = Vec::new();
        label.shown(&index, &mut ids);
        assert!(ids.is_empty());
        // Asked again with the same index: the ids kept.
        label.shown(&index, &mut ids);
        assert!(ids.is_empty());
        index.push(&curator_model::Message::assistant("read src/parse_binary.rs"));
        label.shown(&index, &mut ids);
        let texts: Vec<&str> = ids.iter().map(|&id| index.text(id)).collect();
        assert_eq!(texts, ["src/parse_binary.rs", "parse_binary.rs", "parse_binary"]);
    }

    #[test]
    fn a_call_is_named_with_all_its_arguments_as_compact_json() {
        let call = ToolCall::new(
            "c1",
            "search",
            "{\n  \"services\": \"netflix,hbo\",\n  \"country\": \"US\",\n  \"show_type\": \"all\"\n}",
        );
        let label = call_label(&call);
        assert!(label.starts_with("search({") && label.ends_with("})"), "{label}");
        for part in [r#""services":"netflix,hbo""#, r#""country":"US""#, r#""show_type":"all""#] {
            assert!(label.contains(part), "{part} not in {label}");
        }
        assert_eq!(call_label(&ToolCall::new("c2", "ls", "")), "ls()");
        assert_eq!(call_label(&ToolCall::new("c3", "ls", "{}")), "ls()");
        assert_eq!(call_label(&ToolCall::new("c4", "sh", "not json\nsecond line")), "sh(not json)");
    }

    proptest::proptest! {
        /// The label written only as far as it shows is the whole arguments' text cut.
        #[test]
        fn a_label_is_the_cut_of_the_whole_arguments(
            value in r#"[a-zé😀 "\\]{0,130}"#,
            raw in r"(\PC|\n){0,200}",
        ) {
            let whole = |call: &ToolCall| {
                let text = match call.arguments_json() {
                    Ok(serde_json::Value::Object(map)) if map.is_empty() => String::new(),
                    Ok(value) => value.to_string(),
                    Err(_) => call.arguments().lines().next().unwrap_or_default().trim().to_owned(),
                };
                let short: String = text.chars().take(MAX_ARGUMENTS).collect();
                let more = if short.len() < text.len() { "…" } else { "" };
                format!("{}({short}{more})", call.name())
            };
            let json = serde_json::json!({ "k": value }).to_string();
            for arguments in [json, raw] {
                let call = ToolCall::new("c", "f", arguments);
                proptest::prop_assert_eq!(call_label(&call), whole(&call));
            }
        }
    }

    #[test]
    fn long_arguments_are_cut_with_an_ellipsis() {
        let content = "x".repeat(500);
        let call =
            ToolCall::new("c1", "write", format!(r#"{{"path":"a.py","content":"{content}"}}"#));
        let label = call_label(&call);
        assert!(label.ends_with("…)"), "{label}");
        assert_eq!(label.chars().count(), "write(".len() + MAX_ARGUMENTS + "…)".chars().count());
        assert!(
            label.contains(r#""path":"a.py""#) || label.contains(r#""content":"xxx"#),
            "{label}"
        );
    }
}
