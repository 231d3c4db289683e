//! Evidence kept: a model-free measure of what curation cost the agent.
//!
//! Saving tokens is easy (a window of one message saves nearly all of them); keeping what
//! the agent needs is the hard part. For every provider call of a replay, the reply the model
//! actually gave next (the recorded assistant message) shows what it used: the
//! *distinctive terms* of that reply (see [`terms`](curator::strategies::terms::terms)) that already occur earlier in the
//! conversation, outside the system messages, are the evidence the call needed. *Evidence
//! kept* is the share of them still present in the curated view, as sent (a term inside a
//! shortened message counts only when the shortened text still holds it; one inside a
//! summary counts).
//!
//! - A call whose reply has no such term needs no evidence: it is counted apart and left
//!   out of the means.
//! - Terms that occur in a system message are not evidence: the system message is always
//!   sent, so they would be kept by construction.
//! - The passthrough view keeps every term (score 1); a view without the earlier messages
//!   keeps none (score 0).
//!
//! Each message is tokenised once ([`Tracker::push`]), a changed message once per copy; a
//! call then costs one look-up per needed term and occurrence.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use curator::model::{Message, Role};
use curator::strategies::notes;
use curator::strategies::terms::message_terms;
use curator::strategies::{MessageRef, View};

/// What one call needed and kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "evidence", rename_all = "snake_case")]
pub(crate) enum Score {
    /// The reply used no distinctive term from the earlier conversation.
    NotNeeded,
    /// `kept` of the `needed` terms were in the view.
    Kept { needed: usize, kept: usize },
}

impl Score {
    /// The share kept, or `None` when no evidence was needed.
    pub(crate) fn share(self) -> Option<f64> {
        match self {
            Score::NotNeeded => None,
            #[expect(clippy::cast_precision_loss, reason = "term counts are small")]
            Score::Kept { needed, kept } => Some(kept as f64 / needed.max(1) as f64),
        }
    }
}

/// Follows a conversation as it grows, to score the view of each call.
#[derive(Debug, Default)]
pub(crate) struct Tracker {
    ids: HashMap<Box<str>, u32>,
    /// For each term id, the non-system positions it occurs at, rising.
    at: Vec<Vec<u32>>,
    /// Term ids that occur in a system message.
    system: HashSet<u32>,
    len: usize,
    /// Terms of changed copies, by the copy (kept alive so that its address stays its own),
    /// as sent and without curator's notes.
    copies: HashMap<usize, (Arc<Message>, HashSet<u32>)>,
    verbatim: HashMap<usize, (Arc<Message>, HashSet<u32>)>,
}

impl Tracker {
    /// An empty tracker.
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Adds the next message of the conversation (position `len`).
    pub(crate) fn push(&mut self, message: &Message) {
        let pos = self.len as u32;
        self.len += 1;
        let system = message.role() == Role::System;
        let mut ids = Vec::new();
        message_terms(message, &mut |term| ids.push(self.intern(term)));
        for id in ids {
            if system {
                self.system.insert(id);
            } else if self.at[id as usize].last() != Some(&pos) {
                self.at[id as usize].push(pos);
            }
        }
    }

    fn intern(&mut self, term: &str) -> u32 {
        if let Some(&id) = self.ids.get(term) {
            return id;
        }
        let id = self.at.len() as u32;
        self.ids.insert(term.into(), id);
        self.at.push(Vec::new());
        id
    }

    /// Scores the view a call was sent, given the reply the model then gave. The view's
    /// history must be the messages pushed so far.
    pub(crate) fn score(&mut self, reply: &Message, view: &View<'_>) -> Score {
        self.score_as(reply, view, false)
    }

    /// As [`score`](Tracker::score), counting only what the view holds verbatim: a term
    /// that only a note of curator's lists (the folded-history note, what a cut part held
    /// or named) is not kept.
    pub(crate) fn score_verbatim(&mut self, reply: &Message, view: &View<'_>) -> Score {
        self.score_as(reply, view, true)
    }

    fn score_as(&mut self, reply: &Message, view: &View<'_>, verbatim: bool) -> Score {
        let needed: Vec<u32> = {
            let mut seen = HashSet::new();
            let mut known = Vec::new();
            message_terms(reply, &mut |t| known.extend(self.ids.get(t).copied()));
            known
                .into_iter()
                .filter(|id| {
                    !self.system.contains(id)
                        && !self.at[*id as usize].is_empty()
                        && seen.insert(*id)
                })
                .collect()
        };
        if needed.is_empty() {
            return Score::NotNeeded;
        }
        // Positions sent unchanged, and the terms of the messages sent changed or new.
        let mut unchanged = vec![false; self.len];
        let mut changed: Vec<&HashSet<u32>> = Vec::new();
        let mut copies = Vec::new();
        for entry in view.iter() {
            match (&entry.message, entry.pos) {
                (MessageRef::Borrowed(_), Some(pos)) if pos < self.len => unchanged[pos] = true,
                (MessageRef::Shared(copy), _) => copies.push(Arc::clone(copy)),
                (MessageRef::Borrowed(message), _) => {
                    copies.push(Arc::new(Message::clone(message)));
                }
            }
        }
        let table = if verbatim { &mut self.verbatim } else { &mut self.copies };
        for copy in &copies {
            let key = Arc::as_ptr(copy) as usize;
            if let std::collections::hash_map::Entry::Vacant(slot) = table.entry(key) {
                let mut ids = HashSet::new();
                let shown =
                    if verbatim { notes::verbatim(copy) } else { Some(Cow::Borrowed(&**copy)) };
                if let Some(shown) = shown {
                    message_terms(&shown, &mut |t| ids.extend(self.ids.get(t).copied()));
                }
                slot.insert((Arc::clone(copy), ids));
            }
        }
        for copy in &copies {
            if let Some((_, ids)) = table.get(&(Arc::as_ptr(copy) as usize)) {
                changed.push(ids);
            }
        }
        let kept = needed
            .iter()
            .filter(|id| {
                self.at[**id as usize].iter().any(|&p| unchanged[p as usize])
                    || changed.iter().any(|ids| ids.contains(id))
            })
            .count();
        Score::Kept { needed: needed.len(), kept }
    }
}

/// Evidence kept over several calls.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub(crate) struct Summary {
    /// Calls that needed evidence.
    pub(crate) scored: usize,
    /// Calls that needed none.
    pub(crate) not_needed: usize,
    /// The mean share over the calls that needed evidence (`None` when none did).
    pub(crate) mean: Option<f64>,
    /// The lowest share of one call.
    pub(crate) worst: Option<f64>,
    /// The mean share of the worst tenth of the calls (at least one call).
    pub(crate) worst_decile: Option<f64>,
}

impl Summary {
    /// Summarises scores.
    pub(crate) fn of(scores: impl IntoIterator<Item = Score>) -> Self {
        let mut shares = Vec::new();
        let mut not_needed = 0;
        for score in scores {
            match score.share() {
                Some(share) => shares.push(share),
                None => not_needed += 1,
            }
        }
        shares.sort_by(f64::total_cmp);
        #[expect(clippy::cast_precision_loss, reason = "call counts are small")]
        let mean = |s: &[f64]| (!s.is_empty()).then(|| s.iter().sum::<f64>() / s.len() as f64);
        let decile = shares.len().div_ceil(10);
        Summary {
            scored: shares.len(),
            not_needed,
            mean: mean(&shares),
            worst: shares.first().copied(),
            worst_decile: mean(&shares[..decile]),
        }
    }
}

#[cfg(test)]
mod tests {
    use curator::model::ToolCall;
    use curator::strategies::History;
    use proptest::prelude::*;

    use super::*;

    fn conversation() -> Vec<Message> {
        vec![
            Message::system("You are an agent in /workspace/exprs."),
            Message::user("Fix the failing test in src/parser.rs please."),
            Message::assistant_with_calls(
                None,
                vec![ToolCall::new("c1", "read_file", r#"{"path":"src/parser.rs"}"#)],
            ),
            Message::tool_result("c1", "fn parse_binary(prec: u8) at line 214 calls eval_expr"),
            Message::assistant(
                "The bug is in parse_binary at line 214 of src/parser.rs, under /workspace/exprs.",
            ),
        ]
    }

    /// Scores the call that produced message `reply` with the view `keep` selects.
    fn score_with(messages: &[Message], reply: usize, keep: impl Fn(usize) -> bool) -> Score {
        let history = History::from(&messages[..reply]);
        let mut tracker = Tracker::new();
        for m in &messages[..reply] {
            tracker.push(m);
        }
        let view = View::full(&history).retain(|e| e.pos.is_some_and(&keep));
        tracker.score(&messages[reply], &view)
    }

    #[test]
    fn known_answers_on_a_hand_made_conversation() {
        let messages = conversation();
        // Needed: parse_binary and 214 (the tool result), src/parser.rs and parser.rs (the
        // task); /workspace/exprs is the system message's, so not evidence.
        assert_eq!(score_with(&messages, 4, |_| true), Score::Kept { needed: 4, kept: 4 });
        // Without the tool result, only the task's two terms are left.
        assert_eq!(score_with(&messages, 4, |p| p != 3), Score::Kept { needed: 4, kept: 2 });
        assert_eq!(score_with(&messages, 4, |p| p == 0), Score::Kept { needed: 4, kept: 0 });
        // The first call's reply names src/parser.rs and parser.rs from the task.
        assert_eq!(score_with(&messages, 2, |_| true), Score::Kept { needed: 2, kept: 2 });
    }

    #[test]
    fn a_reply_without_earlier_terms_needs_no_evidence() {
        let messages =
            vec![Message::user("hello there"), Message::assistant("Hi! How can I help?")];
        assert_eq!(score_with(&messages, 1, |_| false), Score::NotNeeded);
    }

    #[test]
    fn a_shortened_message_keeps_what_its_text_still_holds() {
        let messages = conversation();
        let history = History::from(&messages[..4]);
        let mut tracker = Tracker::new();
        messages[..4].iter().for_each(|m| tracker.push(m));
        // The tool result cut after "line 214": parse_binary and 214 survive, eval_expr not.
        let view = View::full(&history).replace(|e| {
            (e.pos == Some(3))
                .then(|| Message::tool_result("c1", "fn parse_binary(prec: u8) at line 214"))
        });
        assert_eq!(tracker.score(&messages[4], &view), Score::Kept { needed: 4, kept: 4 });
        let view = View::full(&history)
            .replace(|e| (e.pos == Some(3)).then(|| Message::tool_result("c1", "[cut]")));
        assert_eq!(tracker.score(&messages[4], &view), Score::Kept { needed: 4, kept: 2 });
    }

    #[test]
    fn summaries_report_mean_worst_and_worst_decile() {
        let scores: Vec<Score> = (0..20)
            .map(|k| Score::Kept { needed: 10, kept: if k < 2 { 0 } else { 10 } })
            .chain([Score::NotNeeded])
            .collect();
        let summary = Summary::of(scores);
        assert_eq!((summary.scored, summary.not_needed), (20, 1));
        assert_eq!(summary.mean, Some(0.9));
        assert_eq!(summary.worst, Some(0.0));
        assert_eq!(summary.worst_decile, Some(0.0));
        assert_eq!(Summary::of([Score::NotNeeded]).mean, None);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Passthrough keeps all the evidence; a view of the system messages alone keeps
        /// none, wherever evidence is needed.
        #[test]
        fn passthrough_scores_one_and_dropping_everything_scores_zero(
            messages in curator_testkit::arb::history(),
            words in proptest::collection::vec("[a-z]{2,6}_[a-z0-9]{1,4}", 1..4),
        ) {
            // Make the last message use terms of earlier ones, so evidence is needed.
            let mut messages = messages;
            let shared = words.join(" ");
            messages.insert(messages.len().min(1), Message::user(format!("context: {shared}")));
            messages.push(Message::assistant(format!("using {shared}")));
            let reply = messages.len() - 1;
            let history = History::from(&messages[..reply]);
            let mut tracker = Tracker::new();
            messages[..reply].iter().for_each(|m| tracker.push(m));
            let all = tracker.score(&messages[reply], &View::full(&history));
            prop_assert_eq!(all.share(), Some(1.0));
            let none = View::full(&history).retain(|e| history.get(e.pos.unwrap_or(usize::MAX)).is_some_and(|m| m.role() == Role::System));
            let dropped = tracker.score(&messages[reply], &none);
            prop_assert_eq!(dropped.share(), Some(0.0));
        }

        /// Any conversation: passthrough never scores below 1.
        #[test]
        fn passthrough_keeps_everything_on_any_history(messages in curator_testkit::arb::history()) {
            let mut tracker = Tracker::new();
            let mut history = History::new();
            for m in &messages {
                if m.role() == Role::Assistant && !history.is_empty() {
                    let score = tracker.score(m, &View::full(&history));
                    prop_assert!(score.share().is_none_or(|s| (s - 1.0).abs() < f64::EPSILON), "{score:?}");
                }
                tracker.push(m);
                history.push(m.clone());
            }
        }
    }
}
