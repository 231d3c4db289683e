//! The folded-history note: what the units left out held, in one compact user message.

use std::ops::Range;

use curator_model::{Message, Role};

use super::labels::{Label, LabelCache, Labels};
use crate::term_index::TermIndex;
use crate::terms::message_terms;
use crate::tokens::share;
use crate::{MessageRef, TokenCounter, View};

/// How every folded-history note begins.
pub(crate) const NOTE_START: &str = "[curator left out ";

/// The most tool calls a note lists (they take at most a third of its room).
const MAX_CALLS: usize = 12;

/// The most messages of left-out units a note reads (the newest), which bounds its cost.
pub(super) const MAX_SCANNED: usize = 400;

/// The share of the terms' room that goes to the newest left-out units' terms, in order;
/// the rest goes to the terms the conversation came back to most often. Over
/// `../shared/corpus` at 4,000 tokens, half and half keeps more evidence than either order
/// alone (see `docs/benchmarks.md`).
const NEWEST_TERMS_SHARE: f64 = 0.5;

/// The note for the units at `dropped` (view index ranges, newest first, as far as the
/// note reads them), given what the view keeps (`kept`, sorted by start): how many messages
/// were left out (all of them), the tool calls the dropped units made and (with `terms`)
/// the distinctive terms they held that the kept messages do not, as many as fit `room`
/// tokens. The calls come newest first; the terms of the newest dropped units in order
/// (each unit's cheapest in tokens first) take up to [`NEWEST_TERMS_SHARE`] of the terms'
/// room, then the others most returned to first, then, if room is left, the numbers (see
/// [`numeric`]). A term that a listed call or term already shows (`parser.rs` after
/// `src/parser.rs`) is not listed again, one that a term listed later shows is left out,
/// and terms are separated by spaces, not commas (a comma is a token of its own). Each term is written so that it
/// reads back as itself ([`written`](crate::terms::written)): a quoted value (`"PHL"`,
/// `"2024-05-10"`) between its quotes, which bare would be no term.
/// The dropped messages are read as `view` shows them (the view the strategy was given,
/// before its own cut: what a unit left out held, as far as the pipeline before it lets it
/// through), so that what an earlier strategy took out (a redacted secret) stays out.
/// `None` when nothing was dropped or not even the note's opening fits.
pub(super) fn note(
    view: &View<'_>,
    dropped: &[Range<usize>],
    kept: &[Range<usize>],
    room: u64,
    counter: &dyn TokenCounter,
    labels: &LabelCache,
    terms: bool,
) -> Option<Message> {
    if dropped.iter().all(Range::is_empty) {
        return None;
    }
    // All the messages left out, not only those read (at most `MAX_SCANNED`).
    let count = left_out(view.len(), kept);
    let index = view.history().term_index();
    let mut shown = if terms { shown(view, kept, &index) } else { TermSet::new(0) };
    let opening = format!(
        "{NOTE_START}{count} earlier message{} to fit the context; ask for what you need again.",
        if count == 1 { "" } else { "s" }
    );
    let mut used = counter.count_message(&Message::user(format!("{opening}]")));
    if used > room {
        return None;
    }
    // Calls take a third of the room beside terms, all of it alone.
    let limit = if terms { room / 3 } else { room };
    let mut calls = Calls { listed: Vec::new(), limit };
    // Terms a listed call or term shows: reading the note back gives them too.
    let mut covered = TermSet::new(if terms { index.vocabulary() } else { 0 });
    // The ids of the terms a listed call or term shows: a buffer reused.
    let mut parts: Vec<u32> = Vec::new();
    // The listed terms: id, tokens, as written.
    let mut listed: Vec<(u32, u64, String)> = Vec::new();
    // The labels of the calls read, from the cache when the calls are the same.
    let mut cached = labels.take(view.history().id());
    let mut read = Labels::default();
    let mut candidates: Vec<u32> = Vec::new();
    // The ids of a changed message's terms: a buffer reused.
    let mut mapped: Vec<u32> = Vec::new();
    for range in dropped {
        let unit_start = candidates.len();
        for i in range.clone().rev() {
            let Some(pos) = view.pos(i) else { continue };
            // The message as the view received it: a redacted secret or a cleared output
            // must not come back through the note.
            let message = view.message(i);
            if message.role() == Role::Assistant && calls.listed.len() < MAX_CALLS {
                for label in cached.move_into(&mut read, pos, message.tool_calls()) {
                    if calls.offer(label, &mut used, counter) && terms {
                        label.shown(&index, &mut parts);
                        covered.extend(&parts);
                    }
                }
            }
            if !terms {
                continue;
            }
            for &id in term_ids(&message, pos, &index, &mut mapped) {
                if shown.insert(id) {
                    candidates.push(id);
                }
            }
        }
        // Each unit's terms cheapest (in tokens) first, so that more of them fit: over
        // `../shared/corpus` at 4,000 tokens this keeps more evidence than their order in
        // the text (worst decile 84.2% against 83.5%).
        candidates[unit_start..].sort_by_cached_key(|&id| counter.count_text(index.text(id)));
    }
    if !terms {
        drop(index);
        labels.keep(read);
        return fitted(&opening, calls.listed, Vec::new(), room, counter);
    }
    // The newest left-out units' terms in order (what the agent was just looking at), up to
    // their share of the room; then those the conversation came back to most often (newest
    // first on ties).
    let newest_room = used + share(NEWEST_TERMS_SHARE, room.saturating_sub(used));
    // Lists the term `id` when it fits within `limit` tokens in all.
    // (A term already shown counts as taken.)
    // (A listed term that a later one shows, a file name before its path, is then left out.)
    // The term as written after a space: a buffer reused.
    let mut spaced = String::new();
    let mut take = |id: u32, limit: u64| {
        if covered.contains(id) {
            return true;
        }
        let term = index.written(id).into_owned();
        spaced.clear();
        spaced.push(' ');
        spaced.push_str(&term);
        let cost = counter.count_text(&spaced);
        let fits = used + cost <= limit;
        if fits {
            let parts = index.parts(id);
            used = used + cost - unlist(&mut listed, parts, id);
            covered.extend(parts);
            listed.push((id, cost, term));
        }
        fits
    };
    let (mut numbers, mut candidates): (Vec<u32>, Vec<u32>) =
        candidates.into_iter().partition(|&id| numeric(index.text(id)));
    let newest = candidates.iter().take_while(|&&id| take(id, newest_room)).count();
    let mut rest = candidates.split_off(newest);
    // How often the conversation up to the view's newest message came back to a term (not
    // counting what was appended after it).
    let limit = view.horizon();
    let often = |id: &u32| std::cmp::Reverse(index.postings_before(*id, limit).len());
    rest.sort_by_cached_key(often);
    numbers.sort_by_cached_key(often);
    let mut full = false;
    for id in rest {
        if !take(id, room) {
            full = true;
            break;
        }
    }
    if !full {
        for id in numbers {
            if !take(id, room) {
                break;
            }
        }
    }
    drop(index);
    labels.keep(read);
    let terms = listed.into_iter().map(|(_, _, term)| term).collect();
    fitted(&opening, calls.listed, terms, room, counter)
}

/// The terms the messages `kept` (view index ranges) of `view` show.
fn shown(view: &View<'_>, kept: &[Range<usize>], index: &TermIndex) -> TermSet {
    let mut shown = TermSet::new(index.vocabulary());
    for pos in kept.iter().flat_map(Clone::clone).filter_map(|i| view.pos(i)) {
        for &id in index.terms_at(pos) {
            shown.insert(id);
        }
    }
    shown
}

/// How many of a view's `len` messages the ranges `kept` (sorted by start; they may
/// overlap) leave out.
fn left_out(len: usize, kept: &[Range<usize>]) -> usize {
    let (mut covered, mut end) = (0, 0);
    for range in kept {
        let start = range.start.max(end);
        if range.end > start {
            covered += range.end - start;
            end = range.end;
        }
    }
    len.saturating_sub(covered)
}

/// The note's message, with the last terms (then calls) left off until it fits `room`:
/// estimates per item can undercount the joined text by a token or two.
fn fitted(
    opening: &str,
    mut calls: Vec<String>,
    mut terms: Vec<String>,
    room: u64,
    counter: &dyn TokenCounter,
) -> Option<Message> {
    let message = loop {
        let message = Message::user(text(opening, &calls, &terms));
        if counter.count_message(&message) <= room || (calls.is_empty() && terms.is_empty()) {
            break message;
        }
        if terms.pop().is_none() {
            calls.pop();
        }
    };
    (counter.count_message(&message) <= room).then_some(message)
}

/// The calls a note lists (newest first), within `limit` tokens, each once. A note lists a
/// dozen calls or so: a label is looked for among them, which costs less than hashing it.
struct Calls {
    listed: Vec<String>,
    limit: u64,
}

impl Calls {
    /// Lists `label` when it is not listed yet and fits with `used` tokens taken (counting
    /// it in): whether it was listed.
    fn offer(&mut self, label: &Label, used: &mut u64, counter: &dyn TokenCounter) -> bool {
        let text = label.text();
        if self.listed.iter().any(|listed| listed == text) {
            return false;
        }
        let cost = counter.count_text(text) + 1;
        if *used + cost > self.limit {
            return false;
        }
        *used += cost;
        self.listed.push(text.to_owned());
        true
    }
}

/// The ids of the distinct terms of `message`, the view's message at history position
/// `pos`: the index's when it is the history's own (most are), else read again (into
/// `buffer`) and looked up.
fn term_ids<'a>(
    message: &MessageRef<'_>,
    pos: usize,
    index: &'a TermIndex,
    buffer: &'a mut Vec<u32>,
) -> &'a [u32] {
    if matches!(message, MessageRef::Borrowed(_)) {
        return index.terms_at(pos);
    }
    buffer.clear();
    message_terms(message, &mut |term| buffer.extend(index.id(term)));
    buffer
}

/// Leaves out of `listed` (id, tokens, term) the terms among `parts` (the ids of the terms
/// the term `id` shows, as a path shows its file name), but `id` itself: the tokens they took.
fn unlist(listed: &mut Vec<(u32, u64, String)>, parts: &[u32], id: u32) -> u64 {
    if parts.iter().all(|&part| part == id) {
        return 0;
    }
    let mut freed = 0;
    listed.retain(|(listed_id, tokens, _)| {
        let shown = *listed_id != id && parts.contains(listed_id);
        if shown {
            freed += *tokens;
        }
        !shown
    });
    freed
}

/// A set of term ids, one bit per term of the index: the kept messages' terms number in
/// the thousands, and a bit costs less than a hash.
struct TermSet(Vec<u64>);

impl TermSet {
    fn new(vocabulary: usize) -> Self {
        TermSet(vec![0; vocabulary.div_ceil(64)])
    }

    /// Adds every id of `ids`.
    fn extend(&mut self, ids: &[u32]) {
        for &id in ids {
            self.insert(id);
        }
    }

    /// Whether `id` is in the set.
    fn contains(&self, id: u32) -> bool {
        self.0.get(id as usize / 64).is_some_and(|word| word & (1_u64 << (id % 64)) != 0)
    }

    /// Adds `id`, telling whether it was not in the set yet.
    fn insert(&mut self, id: u32) -> bool {
        let (word, bit) = (id as usize / 64, 1_u64 << (id % 64));
        if self.0.len() <= word {
            self.0.resize(word + 1, 0);
        }
        let new = self.0[word] & bit == 0;
        self.0[word] |= bit;
        new
    }
}

/// Whether `term` is a number (digits, dots and colons): mostly the line numbers of file
/// views, which the next reply rarely uses, so the note lists them last. Over
/// `../shared/corpus` at 4,000 tokens, listing them last keeps more evidence than in their
/// turn or not at all (see `docs/benchmarks.md`).
fn numeric(term: &str) -> bool {
    term.bytes().all(|b| b.is_ascii_digit() || b == b'.' || b == b':')
}

fn text(opening: &str, calls: &[String], terms: &[String]) -> String {
    let mut text = opening.to_owned();
    if !calls.is_empty() {
        text.push_str(" Tool calls: ");
        text.push_str(&calls.join(", "));
        text.push('.');
    }
    if !terms.is_empty() {
        text.push_str(" They mentioned: ");
        text.push_str(&terms.join(" "));
        text.push('.');
    }
    text.push(']');
    text
}

/// Whether `message` is a folded-history note.
pub(crate) fn is_note(message: &Message) -> bool {
    message.role() == Role::User && message.text().starts_with(NOTE_START)
}
