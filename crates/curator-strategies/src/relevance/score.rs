//! Scoring older units against the present: BM25 over distinctive terms.

use std::collections::HashMap;
use std::ops::Range;

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
/// query's distinct terms, with document frequencies over the history up to the view's newest
/// message. Terms found in more than a tenth of those messages (of at least 50) are not distinctive here and
/// are skipped, which bounds the cost to the postings of the rarer terms: nothing else of the
/// history is read.
pub(super) fn rank(
    view: &View<'_>,
    query: &[usize],
    from: usize,
    before: usize,
) -> Vec<(Range<usize>, f64)> {
    let index = view.history().term_index();
    // Statistics of the messages up to the view's newest, not of any appended after it, so
    // that a view of a history's first messages ranks as it did before more were appended.
    let limit = view.horizon();
    let n = index.indexed().min(limit);
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
    let mean = index.mean_len_before(limit).max(1.0);
    #[expect(clippy::cast_precision_loss, reason = "message counts")]
    let total = n as f64;
    let mut scores: HashMap<usize, (Range<usize>, f64), FxBuild> = HashMap::default();
    for term in terms {
        let postings = index.postings_before(term, limit);
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
            let Some(unit) =
                view.unit_at(at).map(|u| u.range()).filter(|u| u.start >= from && u.end <= before)
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

#[cfg(test)]
mod tests {
    use curator_model::{Message, ToolCall};

    use crate::{CurationContext, History, View};

    /// Parallel calls made in two consecutive assistant messages form one unit with both
    /// results: a term of the second result credits that whole unit, never the second
    /// assistant message alone (which would be kept without its result, or split from it).
    #[test]
    fn a_result_of_a_parallel_call_scores_its_whole_unit() {
        let history = History::from(vec![
            Message::system("Be brief."),
            Message::user("Find the config."),
            Message::assistant_with_calls(None, vec![ToolCall::new("a", "ls", "{}")]),
            Message::assistant_with_calls(None, vec![ToolCall::new("b", "cat", "{}")]),
            Message::tool_result("a", "src tests"),
            Message::tool_result("b", "timeout_ms = 4200 in src/zanzibar_config.rs"),
            Message::user("Thanks."),
            Message::assistant("Done."),
            Message::user("Why is src/zanzibar_config.rs setting timeout_ms?"),
        ]);
        let view = View::full(&history);
        let head = view.head(&CurationContext::default());
        let ranked = super::rank(&view, &[8], head.len(), 6);
        let units: Vec<(usize, usize)> = ranked.iter().map(|(u, _)| (u.start, u.end)).collect();
        assert_eq!(units, [(2, 6)]);
    }
}
