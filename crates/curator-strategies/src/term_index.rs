//! Term statistics of a history, kept up to date as messages are appended.
//!
//! Each history message is read for its distinctive [`terms`](crate::terms) once, the first
//! time a strategy asks after it was appended; the index then holds, per term, the positions
//! it occurs at (with how often), and per position the terms it holds. Scoring a query
//! against the history costs the postings of the query's terms, not a re-read of the
//! messages.

use std::borrow::Cow;
use std::collections::HashMap;

use curator_model::Message;

use crate::terms::{message_terms, quote, reads_back, scan};

/// The term index of the first [`indexed`](TermIndex::indexed) messages of a history.
#[derive(Debug, Default)]
pub(crate) struct TermIndex {
    /// Term texts come from what tools returned, so they are hashed with the standard
    /// (keyed) hasher, not the fast one.
    ids: HashMap<Box<str>, u32>,
    /// Each term's text, by id.
    texts: Vec<Box<str>>,
    /// For each term id, the positions it occurs at (rising) with its count there.
    postings: Vec<Vec<(u32, u32)>>,
    /// For each position, the ids of its distinct terms in order of first occurrence, as
    /// `starts[pos]..starts[pos + 1]` into `terms`.
    terms: Vec<u32>,
    starts: Vec<u32>,
    /// For each position, its number of term occurrences.
    lens: Vec<u32>,
    total_len: u64,
    /// For each position, the term occurrences of the messages before it (and the total
    /// last), so that statistics of any first messages cost O(1).
    before_len: Vec<u64>,
    /// For each term id, the ids of the terms its text shows (see [`TermIndex::parts`]), as
    /// `start, len` into `parts`. A term's parts are interned with it (as ids without
    /// postings when no message holds them yet), so that they are exact at any time.
    part_spans: Vec<(u32, u32)>,
    parts: Vec<u32>,
    /// For each term id, whether its text written bare reads back as itself
    /// ([`reads_back`]).
    bare: Vec<bool>,
}

impl TermIndex {
    /// Number of positions indexed.
    pub(crate) fn indexed(&self) -> usize {
        self.lens.len()
    }

    /// Indexes `message` as the next position.
    pub(crate) fn push(&mut self, message: &Message) {
        let pos = self.lens.len() as u32;
        if self.starts.is_empty() {
            self.starts.push(0);
        }
        let mut len = 0u32;
        let first = self.terms.len();
        message_terms(message, &mut |term| {
            len += 1;
            let id = self.intern(term);
            let postings = &mut self.postings[id as usize];
            match postings.last_mut() {
                Some((p, count)) if *p == pos => *count += 1,
                _ => {
                    postings.push((pos, 1));
                    self.terms.push(id);
                }
            }
        });
        debug_assert!(self.terms.len() >= first);
        self.starts.push(self.terms.len() as u32);
        self.lens.push(len);
        if self.before_len.is_empty() {
            self.before_len.push(0);
        }
        self.total_len += u64::from(len);
        self.before_len.push(self.total_len);
    }

    /// The id of `term`, a new one (with its parts) when it has none yet.
    fn intern(&mut self, term: &str) -> u32 {
        if let Some(&id) = self.ids.get(term) {
            return id;
        }
        let id = self.texts.len() as u32;
        self.ids.insert(term.into(), id);
        self.texts.push(term.into());
        self.postings.push(Vec::new());
        self.part_spans.push((0, 0));
        // One scan tells both whether the term reads back bare and what it shows.
        let mut found: Vec<&str> = Vec::new();
        scan(term, &mut |part| {
            found.push(part);
            true
        });
        self.bare.push(reads_back(term, &found));
        // A word of letters, digits and `_` shows no term but itself.
        if !term.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
            // Parts are pieces of the term, shorter but for the term itself: interning them
            // ends.
            let ids: Vec<u32> = found
                .into_iter()
                .map(|part| if part == term { id } else { self.intern(part) })
                .collect();
            let start = self.parts.len() as u32;
            self.parts.extend_from_slice(&ids);
            if let Some(span) = self.part_spans.get_mut(id as usize) {
                *span = (start, ids.len() as u32);
            }
        }
        id
    }

    /// The ids of the terms that term `id`'s text shows: itself and the terms a scan of its
    /// text finds (a path's file name, a dotted name's parts), in the order of the scan;
    /// none for a word of letters, digits and `_`, which shows only itself.
    pub(crate) fn parts(&self, id: u32) -> &[u32] {
        let Some(&(start, len)) = self.part_spans.get(id as usize) else { return &[] };
        self.parts.get(start as usize..(start + len) as usize).unwrap_or_default()
    }

    /// Term `id` as a list of terms writes it, so that it reads back as itself
    /// ([`written`](crate::terms::written), decided once per term).
    pub(crate) fn written(&self, id: u32) -> Cow<'_, str> {
        let text = self.text(id);
        if self.bare.get(id as usize).copied().unwrap_or(false) {
            Cow::Borrowed(text)
        } else {
            quote(text)
        }
    }

    /// The id of `term`, if an indexed message holds it or it is a part of a term one holds.
    pub(crate) fn id(&self, term: &str) -> Option<u32> {
        self.ids.get(term).copied()
    }

    /// How many distinct terms the index holds (ids are below it).
    pub(crate) fn vocabulary(&self) -> usize {
        self.texts.len()
    }

    /// The text of term `id`.
    pub(crate) fn text(&self, id: u32) -> &str {
        self.texts.get(id as usize).map_or("", |t| t)
    }

    /// The distinct terms of the message at `pos`, in order of first occurrence.
    pub(crate) fn terms_at(&self, pos: usize) -> &[u32] {
        match (self.starts.get(pos), self.starts.get(pos + 1)) {
            (Some(&a), Some(&b)) => &self.terms[a as usize..b as usize],
            _ => &[],
        }
    }

    /// Where term `id` occurs, with how often.
    pub(crate) fn postings(&self, id: u32) -> &[(u32, u32)] {
        self.postings.get(id as usize).map_or(&[], Vec::as_slice)
    }

    /// Where term `id` occurs before position `limit`, with how often: statistics of the
    /// first `limit` messages, whatever was appended after them.
    pub(crate) fn postings_before(&self, id: u32, limit: usize) -> &[(u32, u32)] {
        let all = self.postings(id);
        &all[..all.partition_point(|&(pos, _)| (pos as usize) < limit)]
    }

    /// Mean number of term occurrences per message of the first `limit` messages.
    #[expect(clippy::cast_precision_loss, reason = "a mean of counts")]
    pub(crate) fn mean_len_before(&self, limit: usize) -> f64 {
        let n = limit.min(self.lens.len());
        if n == 0 { 0.0 } else { self.before_len[n] as f64 / n as f64 }
    }

    /// Number of term occurrences in the message at `pos`.
    pub(crate) fn len_at(&self, pos: usize) -> u32 {
        self.lens.get(pos).copied().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn postings_count_each_position_once_with_its_frequency() {
        let mut index = TermIndex::default();
        // A text names each term once; a string argument names it twice (as a quoted value
        // and as text).
        index.push(&Message::assistant_with_calls(
            Some("read src/lib.rs then src/lib.rs again".into()),
            vec![curator_model::ToolCall::new("c", "open", r#"{"path": "lib.rs"}"#)],
        ));
        index.push(&Message::assistant("no terms here"));
        index.push(&Message::assistant("parse_binary in lib.rs"));
        let lib = index.id("lib.rs").unwrap_or(u32::MAX);
        assert_eq!(index.postings(lib), [(0, 3), (2, 1)]);
        assert_eq!(index.terms_at(1), [] as [u32; 0]);
        assert_eq!(index.indexed(), 3);
        let texts: Vec<&str> = index.terms_at(2).iter().map(|&id| index.text(id)).collect();
        assert_eq!(texts, ["parse_binary", "lib.rs"]);
        assert_eq!(index.len_at(0), 4);
    }

    proptest::proptest! {
        /// A term's parts are the terms a scan of its text finds, each with an id, whether
        /// a message held the part before, after or never; a plain word has none.
        #[test]
        fn a_terms_parts_are_what_a_scan_of_it_finds(
            texts in proptest::collection::vec(
                r#"([a-z_]{1,6}[./:-]?){1,5}( [A-Za-z0-9_./:-]{1,12}){0,4}( "[A-Za-z0-9 (),-]{3,12}")?"#,
                1..8,
            ),
        ) {
            let mut index = TermIndex::default();
            for text in &texts {
                index.push(&Message::assistant(text.clone()));
            }
            for id in 0..index.vocabulary() as u32 {
                let text = index.text(id);
                let parts: Vec<&str> = index.parts(id).iter().map(|&p| index.text(p)).collect();
                let want = if text.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
                    Vec::new()
                } else {
                    crate::terms::terms(text)
                };
                proptest::prop_assert_eq!(&parts, &want, "{}", text);
                for part in parts {
                    proptest::prop_assert_eq!(index.id(part).map(|p| index.text(p)), Some(part));
                }
                proptest::prop_assert_eq!(index.written(id), crate::terms::written(text));
            }
        }
    }

    #[test]
    fn a_path_s_parts_hold_its_file_name_s_id() {
        let mut index = TermIndex::default();
        index.push(&Message::assistant("see src/grammar/parser_core.rs"));
        index.push(&Message::assistant("parser_core.rs again"));
        let path = index.id("src/grammar/parser_core.rs").unwrap_or(u32::MAX);
        let name = index.id("parser_core.rs").unwrap_or(u32::MAX);
        assert!(index.parts(path).contains(&name));
        assert_eq!(index.postings(name), [(0, 1), (1, 1)]);
        assert_eq!(index.terms_at(1).first(), Some(&name));
        assert_eq!(index.parts(name).first(), Some(&name));
    }
}
