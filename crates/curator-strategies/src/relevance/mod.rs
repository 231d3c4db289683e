//! `RelevanceBudget`: a token budget that keeps, besides the newest units, the older units
//! that matter most to the present, and leaves a note of what it folded away.

mod ends;
mod fold;
pub(crate) use fold::NOTE_START;
mod labels;
mod score;

use std::borrow::Cow;
use std::collections::HashSet;
use std::ops::Range;
use std::sync::Arc;

use curator_model::{Message, Role};

use crate::fx::FxBuild;
use crate::tokens::share;
use crate::{
    CurationContext, Error, Event, HistoryManager, MessageRef, RelevanceKept, Result, ScoredUnit,
    TokenBudget, TokenCounter, View,
};

/// The most tokens the folded-history note takes, whatever the budget.
pub const MAX_NOTE_TOKENS: u64 = 1_000;

/// The longest a tool result stays, in characters, when the view does not fit its budget
/// (rule 1): a text over `available` characters, and over this at any budget, keeps its
/// beginning and its end. Over `../shared/corpus`, 3,000 keeps more evidence than 4,000 at
/// 2,000 tokens and sends fewer tokens at 8,000 (within 5% of what the token budget alone
/// sends, see `docs/benchmarks.md`).
pub const MAX_TOOL_RESULT_CHARS: usize = 3_000;

/// Characters a token holds at most in practice, to turn the room the present's results may
/// take into characters (the budget's own count then has the last word).
const PRESENT_CHARS_PER_TOKEN: u64 = 4;

/// The shortest a tool result is cut to, in characters, however small the budget.
pub const MIN_TOOL_RESULT_CHARS: usize = 400;

/// Keeps the pinned head, the newest units, and then the older units most relevant to the
/// present, within a token budget; what it leaves out is listed in one compact note.
///
/// # Rules
///
/// With `available`, the head's share and the head's shortening as in [`TokenBudget`]
/// (which this strategy runs last, so every guarantee [`TokenBudget`] gives of one view
/// holds: within the budget, the head and the newest unit kept or a typed error, no call
/// split from its result; but not its monotonicity: rule 1's limit grows with the budget,
/// so a tool result just under it is kept whole where a smaller budget cut it, and fewer
/// of the newest units may fit), except that a
/// text it shortens (a long task, the newest unit's output) also names, in up to 0.3 of the
/// room it keeps, the distinctive [`terms`](crate::terms) of the part cut from its middle:
/// `[the part cut named: …]` after the note of how much was cut.
///
/// 1. When everything fits, nothing changes. Otherwise **long tool results are cut first**
///    (unless [`with_tool_result_cut(false)`](Self::with_tool_result_cut)): each text over
///    `available` characters (at most [`MAX_TOOL_RESULT_CHARS`], at least
///    [`MIN_TOOL_RESULT_CHARS`]) keeps its beginning (two thirds) and its end (a third, from
///    the start of a line), and between them a note of how many characters were cut that
///    names what the cut part held (for the present's results, a shorter beginning and end,
///    and the lines of the middle that name terms of the task or of the present's own text
///    and call arguments): its failure lines (`error`, `FAILED`, `panicked`, ...),
///    then its distinctive [`terms`](crate::terms) (paths, identifiers, numbers) that the
///    ends do not show, each written so that it reads back as the same term (a quoted value,
///    `"PHL"`, between its quotes). Errors, results and answers sit at the ends of outputs; a
///    conversation that fits is never cut. The present's results may keep more than the
///    others: half the room the rest of the view, so cut, leaves (shared among them, about
///    4 characters a token), so that a long newest result is not cut to a fixed length when
///    nothing else needs the room.
/// 2. **The newest units** take `recent_share` (0.85 by default) of the body's room (what the
///    head leaves), newest first and contiguous; the newest unit is always among them.
/// 3. **The folded-history note** takes up to a third of the body's room (at most
///    [`MAX_NOTE_TOKENS`]; a sixth when it lists calls only, see
///    [`with_note_terms`](Self::with_note_terms)): a user message after the task (and after
///    the units kept in a run from there, which earlier views sent as they are), that lists
///    the tool calls the units left out made (up to 12, each with its arguments as compact
///    JSON, cut to 120 characters) and the distinctive [`terms`](crate::terms) they held that the view
///    no longer shows: those of the newest units left out, in order, in up to half of the
///    room for terms, then the ones the conversation came back to most often, then numbers
///    (separated by spaces; a term a listed call or term shows is not repeated; a quoted
///    value, `"PHL"` or `"2024-05-10"`, keeps its quotes, so that it reads back as the same
///    term), so that the model knows what existed and can ask for it again. The units are
///    read as this strategy was given them: what an earlier strategy took out (a secret a
///    [`Redactor`](crate::Redactor) replaced) never comes back through the note.
/// 4. **Older units by relevance** fill the rest: each older unit is scored by BM25 against
///    the task and the newest units (the query), over distinctive terms; units are taken by
///    score (the newer first on ties) while they fit, whole and in their original order.
///    Room they leave goes to more of the newest units.
///
/// Term statistics live in the [`History`](crate::History) and are updated as messages are
/// appended (each message is read once), so a call costs the postings of the query's terms
/// and the units it keeps, not a re-index of the history. Deterministic: the same view gives
/// the same result.
///
/// # Errors
///
/// As [`TokenBudget`]: [`Error::BudgetTooSmall`] when not even the head fits.
///
/// # Examples
///
/// An early tool result holds the path the newest message asks about: recency alone drops
/// it, relevance keeps it.
///
/// ```
/// use curator::model::{Message, ToolCall};
/// use curator::strategies::{CurationContext, HistoryManagerExt, RelevanceBudget};
///
/// let mut messages = vec![
///     Message::system("You are a coding agent."),
///     Message::user("Fix the failing parser test."),
///     Message::assistant_with_calls(None, vec![ToolCall::new("c0", "find", r#"{"name": "parser"}"#)]),
///     Message::tool_result("c0", "src/grammar/parser_core.rs"),
/// ];
/// for i in 1..40 {
///     messages.push(Message::assistant_with_calls(None, vec![ToolCall::new(format!("c{i}"), "run", "{}")]));
///     messages.push(Message::tool_result(format!("c{i}"), "output line ".repeat(20)));
/// }
/// messages.push(Message::user("Now open parser_core.rs again."));
/// let view = RelevanceBudget::new(1_000).curate_messages(&messages, &CurationContext::default())?;
/// assert!(view.iter().any(|m| m.text() == "src/grammar/parser_core.rs"));
/// assert_eq!(view.last(), messages.last());
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct RelevanceBudget {
    budget: TokenBudget,
    recent_share: f64,
    fold_note: bool,
    /// Whether the note lists the terms of what it left out, besides its calls.
    note_terms: bool,
    cut_tool_results: bool,
    /// The present's focused cuts, kept across calls (a cache: results do not depend on it).
    focus_cache: Arc<ends::FocusCache>,
    /// The note's call labels, kept across calls (a cache: results do not depend on it).
    labels: Arc<labels::LabelCache>,
    /// The room rule 1's cut is sized for, when not the budget's own (a compaction to a
    /// low-water mark cuts tool results as the whole room would).
    cut_room: Option<u64>,
    /// The share of the body's room kept for the opening: the oldest units after the task,
    /// in a run, before the note (a compaction keeps the same opening each time, so that
    /// the provider's cache serves it). 0 outside a [`StableBudget`](crate::StableBudget).
    opening_share: f64,
}

impl RelevanceBudget {
    /// The head's default share of the budget: a quarter, less than [`TokenBudget`]'s half,
    /// because what the body keeps here is chosen for the task (on the corpus this keeps
    /// more of what the agent uses next than a larger head does; see `docs/benchmarks.md`).
    pub const DEFAULT_HEAD_SHARE: f64 = 0.25;

    /// The newest units' default share of the body's room.
    pub const DEFAULT_RECENT_SHARE: f64 = 0.85;

    /// A budget of `max_tokens` (see [`TokenBudget::new`]) with the default shares: at most
    /// a quarter for the head, 0.85 of the body for the newest units, and the
    /// folded-history note.
    pub fn new(max_tokens: u64) -> Self {
        let budget = TokenBudget::new(max_tokens)
            .with_known_head_share(Self::DEFAULT_HEAD_SHARE)
            .with_named_cuts();
        Self {
            budget,
            recent_share: Self::DEFAULT_RECENT_SHARE,
            fold_note: true,
            note_terms: true,
            cut_tool_results: true,
            focus_cache: Arc::default(),
            labels: Arc::default(),
            cut_room: None,
            opening_share: 0.0,
        }
    }

    /// Holds back `reserve` tokens for tool schemas and the reply.
    #[must_use]
    pub fn with_reserve(mut self, reserve: u64) -> Self {
        self.budget = self.budget.with_reserve(reserve);
        self
    }

    /// Lets the head take at most `share` of the budget; see [`TokenBudget::with_head_share`].
    ///
    /// # Errors
    ///
    /// [`Error::InvalidOption`] for a share outside 0 to 1.
    pub fn with_head_share(mut self, share: f64) -> Result<Self> {
        self.budget = self.budget.with_head_share(share)?;
        Ok(self)
    }

    /// Gives the newest units `share` of the body's room (the rest goes to older units by
    /// relevance, and the note).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidOption`] for a share outside 0 to 1.
    pub fn with_recent_share(mut self, share: f64) -> Result<Self> {
        if !(0.0..=1.0).contains(&share) {
            return Err(Error::InvalidOption {
                strategy: "relevance_budget",
                option: "recent_share",
                reason: format!("is {share}, not between 0 and 1"),
            });
        }
        self.recent_share = share;
        Ok(self)
    }

    /// Whether to leave the folded-history note (on by default).
    #[must_use]
    pub fn with_fold_note(mut self, on: bool) -> Self {
        self.fold_note = on;
        self
    }

    /// Whether the folded-history note lists the terms of what it left out (rule 3; on by
    /// default) or only the tool calls the left-out units made.
    ///
    /// A listed term tells the model that something existed, not what it said. Without
    /// them the note takes at most a sixth of the body's room instead of a third, and the
    /// rest holds messages as the conversation had them: on `../shared/corpus` at 8,000
    /// tokens, the default pipeline, whose [`StableBudget`](crate::StableBudget) lists calls
    /// only, keeps 98.5% of what the agent uses next verbatim where the terms' list keeps
    /// 98.2% (85.2% against 82.2% in the worst tenth of calls).
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::model::{Message, ToolCall};
    /// use curator::strategies::{CurationContext, HistoryManagerExt, RelevanceBudget};
    ///
    /// let mut messages = vec![Message::system("You are an agent."), Message::user("Fix it.")];
    /// for i in 0..30 {
    ///     let id = format!("c{i}");
    ///     let call = ToolCall::new(&id, "grep", r#"{"q":"needle"}"#);
    ///     messages.push(Message::assistant_with_calls(None, vec![call]));
    ///     let output = format!("src/module_{i}.rs: {}", "line ".repeat(60));
    ///     messages.push(Message::tool_result(&id, output));
    /// }
    /// let budget = RelevanceBudget::new(1_500).with_note_terms(false);
    /// let view = budget.curate_messages(&messages, &CurationContext::default())?;
    /// let note = view.iter().find(|m| RelevanceBudget::is_note(m)).map(|m| m.text());
    /// let note = note.unwrap_or_default();
    /// assert!(note.contains(r#"grep({"q":"needle"})"#), "{note}");
    /// assert!(!note.contains("They mentioned"), "{note}");
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn with_note_terms(mut self, on: bool) -> Self {
        self.note_terms = on;
        self
    }

    /// Whether long tool results are cut to their beginning and end when the view does not
    /// fit (rule 1; on by default).
    ///
    /// # Examples
    ///
    /// A 20,000-character output whose answer is on its last line: the budget keeps the
    /// line.
    ///
    /// ```
    /// use curator::model::{Message, ToolCall};
    /// use curator::strategies::{CurationContext, HistoryManagerExt, RelevanceBudget};
    ///
    /// let output = format!("{}\nanswer: 42", "noise line\n".repeat(2_000));
    /// let messages = vec![
    ///     Message::user("Run the job."),
    ///     Message::assistant_with_calls(None, vec![ToolCall::new("c0", "run", "{}")]),
    ///     Message::tool_result("c0", output),
    ///     Message::user("What was the answer?"),
    /// ];
    /// let budget = RelevanceBudget::new(2_000);
    /// let view = budget.curate_messages(&messages, &CurationContext::default())?;
    /// assert!(view[2].text().ends_with("answer: 42"));
    /// let plain = budget.with_tool_result_cut(false);
    /// let view = plain.curate_messages(&messages, &CurationContext::default())?;
    /// assert!(view.iter().all(|m| !m.text().contains("characters cut by curator")));
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn with_tool_result_cut(mut self, on: bool) -> Self {
        self.cut_tool_results = on;
        self
    }

    /// Counts with `counter`.
    #[must_use]
    pub fn with_counter(mut self, counter: impl TokenCounter + 'static) -> Self {
        self.budget = self.budget.with_counter(counter);
        self
    }

    /// Counts with a shared counter.
    #[must_use]
    #[deprecated(note = "use `with_counter`: an `Arc<dyn TokenCounter>` is a `TokenCounter`")]
    pub fn with_shared_counter(mut self, counter: Arc<dyn TokenCounter>) -> Self {
        self.budget = self.budget.with_counter(counter);
        self
    }

    /// Whether `message` is a folded-history note (rule 3) this strategy wrote.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::model::{Message, Role};
    /// use curator::strategies::RelevanceBudget;
    ///
    /// assert!(!RelevanceBudget::is_note(&Message::user("hello")));
    /// ```
    pub fn is_note(message: &Message) -> bool {
        fold::is_note(message)
    }

    /// The same strategy with `available` tokens for messages (see
    /// [`TokenBudget::with_available`]); its caches are shared, as results never depend on
    /// them.
    pub(crate) fn with_available(&self, available: u64) -> RelevanceBudget {
        let room = self.budget.available().saturating_sub(self.budget.counter().reply_priming());
        RelevanceBudget {
            budget: self.budget.with_available(available),
            cut_room: Some(self.cut_room.unwrap_or(room)),
            ..self.clone()
        }
    }

    /// The same strategy keeping `share` of the body's room for the opening run.
    pub(crate) fn with_opening_share(&self, share: f64) -> RelevanceBudget {
        RelevanceBudget { opening_share: share, ..self.clone() }
    }

    /// The token budget that bounds the result.
    pub fn budget(&self) -> &TokenBudget {
        &self.budget
    }
}

impl HistoryManager for RelevanceBudget {
    fn curate<'h>(&self, view: View<'h>, ctx: &CurationContext<'_>) -> Result<View<'h>> {
        let counter = self.budget.counter();
        let available = self.budget.available().saturating_sub(counter.reply_priming());
        let tally = view.tally(counter);
        let fits = tally.range(0..view.len()) <= available;
        drop(tally);
        if fits {
            return self.budget.curate(view, ctx);
        }
        self.curate_overflowing(view, ctx)
    }

    fn name(&self) -> Cow<'_, str> {
        Cow::Borrowed("relevance_budget")
    }
}

impl RelevanceBudget {
    /// Curates `view`, known not to fit the budget (rules 1 to 4): what a compaction of
    /// [`StableBudget`](crate::StableBudget) runs, which knows it overflows without counting
    /// the whole history again.
    pub(crate) fn curate_overflowing<'h>(
        &self,
        view: View<'h>,
        ctx: &CurationContext<'_>,
    ) -> Result<View<'h>> {
        let counter = self.budget.counter();
        let available = self.budget.available().saturating_sub(counter.reply_priming());
        // Rule 1: long tool results cut to their ends, then the rest as before. (Whether the
        // cut view fits is not counted apart: the newest units below take all of it if so.)
        // The view as given, for the note to read what the units it leaves out held (the
        // cut below is this strategy's own; an earlier strategy's changes stay).
        let given = (self.fold_note && self.cut_tool_results).then(|| view.clone());
        let view = if self.cut_tool_results {
            self.cut(view, ctx, self.cut_room.unwrap_or(available), available)
        } else {
            view
        };
        let tally = view.tally(counter);
        let head = view.head(ctx);
        let head_tokens: u64 = head.pinned().iter().map(|&i| tally.message(i)).sum();
        let (head_room, head_whole) = self.head_room(head_tokens, available);
        let body_room = available.saturating_sub(head_room);
        let note_room = self.note_room(body_room);
        let room = body_room - note_room;
        let opening_room = share(self.opening_share, room);
        let recent_room = share(self.recent_share, room - opening_room);

        // The newest units (rule 2): the present always, then while they fit.
        let pinned_alone = |u: &crate::Unit| u.len() == 1 && head.is_pinned(u.start());
        let present = view.present(&head);
        let below = present.map_or(view.len(), |u| u.start());
        let mut units = view.units_rev_to(head.len(), below).filter(|u| !pinned_alone(u));
        let (mut kept, mut used, next) = newest(&head, present, &mut units, &tally, recent_room);
        let Some(next) = next else {
            drop(tally);
            return self.budget.curate(view, ctx);
        };
        let cut = next.range().end;
        let task = head.pinned().iter().find(|&&i| view.structure(i).role() != Role::System);
        let first_body = task.map_or(head.len(), |&t| head.len().max(t + 1));

        // The opening: the oldest units after the task, in a run, while they fit its share.
        let limit = (used + opening_room).min(room);
        let opening = opening_run(&view, &head, &tally, (first_body, cut), limit, &mut used);
        let opening_end = opening.last().map_or(first_body, |unit| unit.end);
        let mut chosen: HashSet<usize, FxBuild> = opening.iter().map(|unit| unit.start).collect();
        kept.extend(opening);

        // Older units by relevance (rule 4), then more of the newest with what is left.
        let query: Vec<usize> =
            head.pinned().iter().copied().chain(kept.iter().flat_map(Clone::clone)).collect();
        let ranked = score::rank(&view, &query, head.len(), cut);
        let mut scored = Vec::new();
        for (unit, score) in &ranked {
            if unit.clone().any(|i| head.is_pinned(i)) || chosen.contains(&unit.start) {
                continue;
            }
            if let Some(tokens) = tokens_within(&tally, unit.clone(), room, used) {
                used += tokens;
                chosen.insert(unit.start);
                kept.push(unit.clone());
                scored.push((view.pos(unit.start), unit.len(), *score));
            }
        }
        let mut dropped: Vec<Range<usize>> = Vec::new();
        let mut scanned = 0;
        let mut filling = true;
        for unit in std::iter::once(next).chain(units) {
            if chosen.contains(&unit.start()) {
                continue;
            }
            if filling {
                if let Some(tokens) = tokens_within(&tally, unit.range(), room, used) {
                    used += tokens;
                    kept.push(unit.range());
                    continue;
                }
                filling = false;
            }
            // Units left out, newest first, as far as the note reads them.
            if !self.fold_note || scanned >= fold::MAX_SCANNED {
                break;
            }
            scanned += unit.len();
            dropped.push(unit.range());
        }
        drop(tally);

        // The view: head, note, chosen older units and the newest, in their order.
        kept.extend(head.pinned().iter().map(|&i| i..i + 1));
        kept.sort_unstable_by_key(|r| r.start);
        let note = if dropped.is_empty() {
            None
        } else {
            fold::note(
                given.as_ref().unwrap_or(&view),
                &dropped,
                &kept,
                note_room,
                counter,
                &self.labels,
                self.note_terms,
            )
        };
        // The note comes after the pinned head and the task (so that the task stays the
        // first user message: later strategies pin it by that) and the opening.
        // ... and after the units kept in a run from there: the views before this one sent
        // that run as it is, so the provider's cache serves it again.
        let selected = assemble(&view, run_end(&kept, opening_end), &kept, note);
        // A selection that opens on an assistant turn where the view did not (the task not
        // pinned, no note to open the body) is refused by Anthropic, and the budget keeps a
        // view that opens so as it is: the budget alone then decides on the whole view (the
        // user turn kept, its note opening the view, or its typed refusal).
        if selected.leads_with() == Some(Role::Assistant)
            && view.leads_with() != Some(Role::Assistant)
        {
            return self.budget.curate(view, ctx);
        }
        emit_kept(ctx, scored);
        // The selection aims at `available`; at a compaction that is a low-water mark, and
        // the bound is the whole room, so that a selection just over the mark is sent as it
        // is rather than with its task shortened.
        match self.cut_room.filter(|_| head_whole) {
            Some(room) => {
                self.budget.with_available(room + counter.reply_priming()).curate(selected, ctx)
            }
            None => self.budget.curate(selected, ctx),
        }
    }
}

impl RelevanceBudget {
    /// The room for a head of `head_tokens` in `available` tokens, and whether it is kept
    /// whole beyond its share of them. A compaction to a low-water mark keeps whole a head
    /// that the whole room's share for it holds (it stays the same, and cached, across
    /// compactions); a longer head is capped as the mark's share caps it.
    fn head_room(&self, head_tokens: u64, available: u64) -> (u64, bool) {
        let whole_cap = self.cut_room.map(|room| share(self.budget.head_share(), room));
        if whole_cap.is_some_and(|cap| head_tokens <= cap) {
            (head_tokens, true)
        } else {
            (head_tokens.min(share(self.budget.head_share(), available)), false)
        }
    }

    /// The room for the folded-history note in a body of `body_room` tokens (rule 3).
    fn note_room(&self, body_room: u64) -> u64 {
        let share = if self.note_terms { 3 } else { 6 };
        if self.fold_note { (body_room / share).min(MAX_NOTE_TOKENS) } else { 0 }
    }

    /// `view` with its long tool results cut to their ends (rule 1), for `room` tokens. The
    /// present's results keep more when the rest of the view, cut, leaves room in the
    /// `available` tokens of the view: half of what it leaves (shared among them; the other
    /// half is the view's room to grow before the next cut), so that a long newest result
    /// is not cut to a fixed length when nothing else needs the room. Over
    /// `../shared/corpus` at 8,000 tokens, half keeps more evidence than the fixed length
    /// (98.3% verbatim against 98.2%) at 0.7% more cost; all of it (or all of it for
    /// results longer than the room) costs 3% more and keeps less.
    fn cut<'h>(
        &self,
        view: View<'h>,
        ctx: &CurationContext<'_>,
        room: u64,
        available: u64,
    ) -> View<'h> {
        let max = usize::try_from(room).unwrap_or(usize::MAX);
        let max = max.clamp(MIN_TOOL_RESULT_CHARS, MAX_TOOL_RESULT_CHARS);
        let Some(focus) = focus(&view, ctx) else {
            return view.with_map(Arc::new(ends::EndsCut::new(max)));
        };
        let cut_with = |view: View<'h>, present_max: usize| {
            let cut = ends::EndsCut::new(max)
                .with_present_max(present_max)
                .with_focus(Arc::clone(&focus), Arc::clone(&self.focus_cache));
            view.with_map(Arc::new(cut))
        };
        let plain = cut_with(view.clone(), max);
        // Counted from the newest back, and only as far as the room goes: in a long
        // conversation the rest leaves none, and the walk stops early.
        let counted = {
            let tally = plain.tally(self.budget.counter());
            let (mut results, mut present, mut rest) = (0_u64, 0, 0);
            let mut over = false;
            for i in (0..plain.len()).rev() {
                if plain.pos(i).is_some_and(|p| focus.holds(p)) {
                    results += 1;
                    present += tally.message(i);
                } else {
                    rest += tally.message(i);
                    if rest >= available {
                        over = true;
                        break;
                    }
                }
            }
            (!over).then_some((results, present, rest))
        };
        let Some((results, present, rest)) = counted else { return plain };
        let spare = available - rest;
        if results == 0 || spare <= present {
            return plain;
        }
        let each = (spare / 2 / results).saturating_mul(PRESENT_CHARS_PER_TOKEN);
        cut_with(view, usize::try_from(each).unwrap_or(usize::MAX))
    }
}

/// The present's tool results and the terms of the task and of the present's other
/// messages (its text and call arguments), which its long results keep the lines of.
fn focus(view: &View<'_>, ctx: &CurationContext<'_>) -> Option<Arc<ends::Focus>> {
    let head = view.head(ctx);
    let present = view.present(&head)?;
    let (mut positions, mut terms) = (Vec::new(), HashSet::default());
    let index = view.history().term_index();
    // A message the view holds as the history's own has the terms the index read from it;
    // another (a map changed it) is read.
    let mut add = |i: usize| {
        let mut insert = |term: &str| {
            if !terms.contains(term) {
                terms.insert(term.to_owned());
            }
        };
        let message = view.message(i);
        match (&message, view.pos(i)) {
            (MessageRef::Borrowed(_), Some(pos)) => {
                index.terms_at(pos).iter().for_each(|&id| insert(index.text(id)));
            }
            _ => crate::terms::message_terms(&message, &mut |term| insert(term)),
        }
    };
    for &i in head.pinned() {
        if view.structure(i).role() != Role::System {
            add(i);
        }
    }
    for i in present.range() {
        if view.structure(i).role() == Role::Tool {
            positions.extend(view.pos(i));
        } else {
            add(i);
        }
    }
    drop(index);
    Some(Arc::new(ends::Focus::new(positions, terms)))
}

/// The present (`present`, its pinned messages counted with the head), then the newest
/// `units` while they fit `room`: the ranges kept, their tokens, and the first unit that did
/// not fit.
fn newest(
    head: &crate::Head,
    present: Option<crate::Unit>,
    units: &mut impl Iterator<Item = crate::Unit>,
    tally: &crate::Tally<'_, '_>,
    room: u64,
) -> (Vec<Range<usize>>, u64, Option<crate::Unit>) {
    let mut kept = Vec::new();
    let mut used = 0;
    if let Some(present) = present {
        used +=
            present.range().filter(|&i| !head.is_pinned(i)).map(|i| tally.message(i)).sum::<u64>();
        kept.push(present.range());
    }
    for unit in units {
        let Some(tokens) = tokens_within(tally, unit.range(), room, used) else {
            return (kept, used, Some(unit));
        };
        used += tokens;
        kept.push(unit.range());
    }
    (kept, used, None)
}

/// Tells the event sink which older units relevance kept, with their scores.
fn emit_kept(ctx: &CurationContext<'_>, scored: Vec<(Option<usize>, usize, f64)>) {
    if let Some(sink) = ctx.events {
        let units = scored
            .into_iter()
            .map(|(position, messages, score)| ScoredUnit::new(position, messages, score))
            .collect();
        sink.emit(&Event::RelevanceKept(RelevanceKept::new(units)));
    }
}

/// The opening: the units from `first_body` on (up to `cut`), oldest first and in a run,
/// while they fit `room` with `used` taken (which grows by theirs); none when `room` leaves
/// nothing past `used`.
fn opening_run(
    view: &View<'_>,
    head: &crate::Head,
    tally: &crate::Tally<'_, '_>,
    (first_body, cut): (usize, usize),
    room: u64,
    used: &mut u64,
) -> Vec<Range<usize>> {
    if room <= *used {
        return Vec::new();
    }
    let oldest: Vec<crate::Unit> = view.units_rev_to(first_body, cut).collect();
    let mut run = Vec::new();
    let mut end = first_body;
    for unit in oldest.into_iter().rev() {
        if unit.start() != end || unit.range().any(|i| head.is_pinned(i)) {
            break;
        }
        let Some(tokens) = tokens_within(tally, unit.range(), room, *used) else { break };
        *used += tokens;
        end = unit.range().end;
        run.push(unit.range());
    }
    run
}

/// The tokens of the messages at `range` when they fit `room` with `used` taken.
fn tokens_within(
    tally: &crate::Tally<'_, '_>,
    range: Range<usize>,
    room: u64,
    used: u64,
) -> Option<u64> {
    tally.range_within(range, room.checked_sub(used)?)
}

/// The view of the `kept` ranges (in order), with `note` before the first range of the body
/// after the opening (which ends at `first_body`), coherence restored.
/// Where the run of `kept` (sorted) that starts at `from` ends, at the first gap: `from`
/// when nothing kept starts there, or when no gap follows (what was left out lies before
/// `from`, and the note stays there, not after the newest messages).
fn run_end(kept: &[Range<usize>], from: usize) -> usize {
    let mut end = from;
    for range in kept {
        if range.end <= end {
            continue;
        }
        if range.start > end {
            return end;
        }
        end = range.end;
    }
    from
}

fn assemble<'h>(
    view: &View<'h>,
    first_body: usize,
    kept: &[Range<usize>],
    mut note: Option<Message>,
) -> View<'h> {
    let mut edit = view.edit();
    for range in kept {
        if range.start >= first_body
            && let Some(note) = note.take()
        {
            edit.insert(note);
        }
        edit.keep(range.clone());
    }
    if let Some(note) = note {
        edit.insert(note);
    }
    edit.finish()
}

#[cfg(test)]
mod tests {
    use super::run_end;

    #[test]
    fn the_note_goes_after_the_run_kept_from_the_start_and_only_before_a_gap() {
        // The head (0, 1), then units 2..4 and 4..6 kept, 6..8 left out, 8..10 kept.
        assert_eq!(run_end(&[0..1, 1..2, 2..4, 4..6, 8..10], 2), 6);
        // The first unit after the task left out: the note right after the task.
        assert_eq!(run_end(&[0..1, 1..2, 4..6, 8..10], 2), 2);
        // Nothing left out after `from` (what was, lay before it): the note stays at
        // `from`, never after the newest messages.
        assert_eq!(run_end(&[0..1, 2..3, 3..5, 5..7], 2), 2);
    }
}
