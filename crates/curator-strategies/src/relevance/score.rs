//! Scoring older units against the present: BM25 over distinctive terms.

use std::collections::HashMap;
use std::ops::Range;

use curator_model::Role;

use crate::View;
use crate::fx::FxBuild;

/// BM25's term-frequency saturation.
const K1: f64 = 1.2;
/// BM25's length normalisation.
const B: f64 = 0.75;

/// The units of the view that start before view index `before` (and after the first `from`
/// messages) and share terms with the messages at `query` (view indices), best first (the
/// newer first on ties), with their scores; units sharing nothing are left out.
///
/// A unit's score is the sum over its messages of the BM25 score of the message for the
/// query's distinct terms, with document frequencies over the whole history. Terms found in
/// more than a tenth of the history's messages (of at least 50) are not distinctive here and
/// are skipped, which bounds the cost to the postings of the rarer terms: nothing else of the
/// history is read.
pub(super) fn rank(
    view: &View<'_>,
    query: &[usize],
    from: usize,
    before: usize,
) -> Vec<(Range<usize>, f64)> {
    let index = view.history().term_index();
    let n = index.indexed();
    if before <= from || n == 0 {
        return Vec::new();
    }
    let mut terms: Vec<u32> = query
        .iter()
        .filter_map(|&i| view.pos(i))
        .flat_map(|pos| index.terms_at(pos).iter().copied())
        .collect();
    terms.sort_unstable();
    terms.dedup();
    let mean = index.mean_len().max(1.0);
    #[expect(clippy::cast_precision_loss, reason = "message counts")]
    let total = n as f64;
    let mut scores: HashMap<usize, (Range<usize>, f64), FxBuild> = HashMap::default();
    for term in terms {
        let postings = index.postings(term);
        if n >= 50 && postings.len() * 10 > n {
            continue;
        }
        #[expect(clippy::cast_precision_loss, reason = "message counts")]
        let df = postings.len() as f64;
        let idf = (1.0 + (total - df + 0.5) / (df + 0.5)).ln();
        for &(pos, tf) in postings {
            let Some(at) = view.index_of(pos as usize).filter(|&i| (from..before).contains(&i))
            else {
                continue;
            };
            let Some(unit) = unit_at(view, at).filter(|u| u.start >= from && u.end <= before)
            else {
                continue;
            };
            let tf = f64::from(tf);
            let len = f64::from(index.len_at(pos as usize));
            let score = idf * tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * len / mean));
            scores.entry(unit.start).or_insert((unit, 0.0)).1 += score;
        }
    }
    let mut ranked: Vec<(Range<usize>, f64)> = scores.into_values().collect();
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(b.0.start.cmp(&a.0.start)));
    ranked
}

/// The unit of the message at view index `at`: the assistant message whose call a tool
/// message answers, with the tool messages that follow it and answer its calls; any other
/// message alone. `None` for a tool message whose call is not in the view.
pub(super) fn unit_at(view: &View<'_>, at: usize) -> Option<Range<usize>> {
    let history = view.history();
    let head_pos = |i: usize| view.pos(i).and_then(|p| history.unit_head(p));
    let start =
        if view.structure(at).role() == Role::Tool { view.index_of(head_pos(at)?)? } else { at };
    let head = view.pos(start);
    let mut end = start + 1;
    while end < view.len()
        && view.structure(end).role() == Role::Tool
        && head.is_some()
        && head_pos(end) == head
    {
        end += 1;
    }
    Some(start..end)
}
