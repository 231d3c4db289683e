//! What the history's pairing index tells about a view, without walking its messages.

use curator_model::pairing::{Link, pairing};
use curator_model::{Message, Role, ToolCall};

use super::items::Item;
use super::selection::View;

/// What a stretch of history positions must satisfy for the history's index to speak for it.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Need {
    /// It pairs as in the history ([`History::pairs_alone`](crate::History::pairs_alone)).
    Pairing,
    /// It follows the coherence rules on its own ([`History::coherent`](crate::History::coherent)),
    /// but the last stretch may end with calls open: an agent's history between a call
    /// and its results.
    Coherent,
}

impl View<'_> {
    /// Where repair must look, by the history's pairing, without walking the view's
    /// messages. The view is coherent by history up to view index `index` when every
    /// stretch of history positions before it is coherent on its own, and what stands
    /// between them neither calls tools nor answers a call (a note, a summary); a message a
    /// strategy changed counts as its position when it keeps that message's structure.
    /// `Some(len)`: nothing needs repair. `Some(index)` below `len`: no call is open at
    /// `index` and repairing the messages from there on repairs the view (an agent's
    /// history kept up to calls whose results have not come yet). `None` only means the
    /// whole view must be planned. O(items + the open tail).
    pub(crate) fn repair_from(&self) -> Option<usize> {
        let tail = self.stretches_satisfy(Need::Coherent)?;
        Some(self.len() - tail)
    }

    /// Whether every tool message of the view answers the call the history pairs it with:
    /// as [`repair_from`](View::repair_from), but a stretch may hold orphans
    /// and calls closed unanswered, and the last may end with calls open. O(items).
    fn paired_by_history(&self) -> bool {
        self.stretches_satisfy(Need::Pairing).is_some()
    }

    /// Whether every stretch satisfies `need`: `Some` with the number of trailing messages
    /// left open (always 0 but for [`Need::Coherent`]), `None` when one does not.
    fn stretches_satisfy(&self, need: Need) -> Option<usize> {
        let history = self.history;
        let fits = |(s, e): (usize, usize), last: bool| match need {
            Need::Coherent => history.coherent(s..e),
            Need::Pairing => history.pairs_alone(s..e, last),
        };
        let mut stretch: Option<(usize, usize)> = None;
        for item in self.items.iter() {
            let (start, end) = match item {
                Item::Run { start, end } => (*start as usize, *end as usize),
                Item::Owned { pos: Some(pos), message, .. }
                    if history
                        .get(*pos as usize)
                        .is_some_and(|original| same_structure(original, message)) =>
                {
                    (*pos as usize, *pos as usize + 1)
                }
                Item::Owned { message, .. } => {
                    if message.role() == Role::Tool || message.has_tool_calls() {
                        return None;
                    }
                    if let Some(done) = stretch.take()
                        && !fits(done, false)
                    {
                        return None;
                    }
                    continue;
                }
            };
            stretch = match stretch {
                Some((s, e)) if e == start => Some((s, end)),
                Some(done) => {
                    if !fits(done, false) {
                        return None;
                    }
                    Some((start, end))
                }
                None => Some((start, end)),
            };
        }
        match stretch {
            None => Some(0),
            Some((s, e)) if need == Need::Coherent => {
                let settled = history.last_settled(s..e)?;
                fits((s, settled), true).then_some(e - settled)
            }
            Some(done) => fits(done, true).then_some(0),
        }
    }
}

/// Whether two messages have the same structure: role, answered call, and the calls' ids
/// and names.
pub(super) fn same_structure(a: &Message, b: &Message) -> bool {
    a.role() == b.role()
        && a.tool_call_id() == b.tool_call_id()
        && a.tool_calls().len() == b.tool_calls().len()
        && a.tool_calls()
            .iter()
            .zip(b.tool_calls())
            .all(|(x, y)| x.id() == y.id() && x.name() == y.name())
}

impl View<'_> {
    /// For each message of the view, the call it answers by the pairing rule applied to the
    /// view: read from the history's index when the view is
    /// [paired by history](View::paired_by_history), computed over the view otherwise.
    pub(crate) fn answered_calls(&self) -> Vec<Option<&ToolCall>> {
        let history = self.history;
        if self.paired_by_history() {
            let mut calls = Vec::with_capacity(self.len());
            for item in self.items.iter() {
                match item {
                    Item::Run { start, end } => {
                        calls.extend((*start..*end).map(|pos| history.answered_call(pos as usize)));
                    }
                    Item::Owned { pos: Some(pos), message, .. } if message.role() == Role::Tool => {
                        calls.push(history.answered_call(*pos as usize));
                    }
                    Item::Owned { .. } => calls.push(None),
                }
            }
            return calls;
        }
        let structures: Vec<&Message> = self.structures().collect();
        let mut calls = Vec::with_capacity(structures.len());
        for step in pairing(&structures) {
            calls.push(match step.link {
                Link::Answers(call) => {
                    structures.get(call.message).and_then(|m| m.tool_calls().get(call.call))
                }
                _ => None,
            });
        }
        calls
    }
}

#[cfg(test)]
mod tests {
    use curator_model::pairing::{Link, pairing};
    use curator_model::{Message, ToolCall};
    use proptest::prelude::*;

    use crate::{History, View, coherence};

    /// Few ids, so that ids repeat, results interleave and calls are closed unanswered.
    fn message() -> impl Strategy<Value = Message> {
        let id = prop_oneof![Just("a"), Just("b"), Just("c")];
        prop_oneof![
            Just(Message::user("u")),
            Just(Message::system("s")),
            Just(Message::assistant("text")),
            prop::collection::vec(id.clone(), 1..3).prop_map(|ids| Message::assistant_with_calls(
                None,
                ids.into_iter().map(|id| ToolCall::new(id, "t", "{}")).collect()
            )),
            id.prop_map(|id| Message::tool_result(id, "ok")),
        ]
    }

    /// One step of an edit: keep a range, replace a message (with itself, so keeping its
    /// structure, or with another), or insert one.
    #[derive(Clone, Debug)]
    enum Op {
        Keep(usize, usize),
        Replace(usize, Option<Message>),
        Insert(Message),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            3 => (0..20usize, 0..8usize).prop_map(|(start, len)| Op::Keep(start, start + len)),
            1 => (0..20usize, proptest::option::of(message())).prop_map(|(i, m)| Op::Replace(i, m)),
            1 => message().prop_map(Op::Insert),
        ]
    }

    /// The view `ops` make of `full`, as built (not repaired).
    fn edited<'h>(full: &View<'h>, ops: Vec<Op>) -> View<'h> {
        let mut edit = full.edit();
        for op in ops {
            match op {
                Op::Keep(start, end) => {
                    edit.keep(start..end);
                }
                Op::Replace(i, other) if i < full.len() => {
                    let message = other.unwrap_or_else(|| Message::clone(&full.message(i)));
                    edit.replace(i, message);
                }
                Op::Replace(..) => {}
                Op::Insert(message) => {
                    edit.insert(message);
                }
            }
        }
        edit.build()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3_000))]

        /// `View::unit_at` is the walk's answer: on whole histories and on edited views
        /// (messages left out, replaced, inserted), every index lies in the unit
        /// `units_rev(0)` yields for it, parallel and joined calls included.
        #[test]
        fn unit_at_agrees_with_the_walk(
            messages in prop::collection::vec(message(), 0..24),
            ops in prop::collection::vec(op(), 0..6),
            whole in any::<bool>(),
        ) {
            let history = History::from(messages);
            let full = View::full(&history);
            let view = if whole { View::full(&history) } else { edited(&full, ops) };
            let units: Vec<_> = view.units_rev(0).map(|u| u.range()).collect();
            prop_assert_eq!(units.iter().map(ExactSizeIterator::len).sum::<usize>(), view.len());
            for unit in &units {
                for at in unit.clone() {
                    prop_assert_eq!(
                        view.unit_at(at).map(|u| u.range()),
                        Some(unit.clone()),
                        "index {} of {:?}", at, view.to_messages()
                    );
                }
            }
            prop_assert_eq!(view.unit_at(view.len()), None);
        }

        /// The shortcuts never call a view coherent that the full plan would repair, nor
        /// pair a result otherwise than the rule applied to the view, on histories built at
        /// once or message by message, and on edits of every kind.
        #[test]
        fn the_history_shortcut_agrees_with_the_plan(
            messages in prop::collection::vec(message(), 0..20),
            ops in prop::collection::vec(op(), 0..6),
            pushed in any::<bool>(),
        ) {
            // Each call named for its place, so that equal calls are the same call.
            let messages: Vec<Message> = messages
                .into_iter()
                .enumerate()
                .map(|(i, m)| if m.has_tool_calls() {
                    let calls = m.tool_calls().iter().enumerate()
                        .map(|(k, c)| ToolCall::new(c.id(), format!("{i}-{k}"), "{}"))
                        .collect();
                    Message::assistant_with_calls(None, calls)
                } else {
                    m
                })
                .collect();
            let history = if pushed {
                let mut history = History::new();
                for message in &messages {
                    history.push(message.clone());
                }
                history
            } else {
                History::from(messages.clone())
            };
            let full = View::full(&history);
            let view = edited(&full, ops);
            if view.repair_from() == Some(view.len()) {
                let repairs = coherence::plan(view.structures(), |i| view.structure(i));
                prop_assert!(repairs.is_empty(), "{:?}", view.to_messages());
            }
            // Planning from where the history says the view is settled plans the same
            // repairs as planning the whole view.
            if let Some(start) = view.repair_from() {
                let plan_from = |start: usize| -> Vec<(usize, Option<Vec<bool>>)> {
                    coherence::plan(view.structures_from(start), |i| view.structure(start + i))
                        .iter()
                        .map(|(index, calls)| (start + index, calls.map(<[bool]>::to_vec)))
                        .collect()
                };
                prop_assert_eq!(plan_from(start), plan_from(0), "from {}", start);
            }
            // The pairing read from the history is the view's own.
            {
                let structures: Vec<&Message> = view.structures().collect();
                let own: Vec<Option<&ToolCall>> = pairing(&structures)
                    .map(|step| match step.link {
                        Link::Answers(call) => call.get(&structures),
                        _ => None,
                    })
                    .collect();
                prop_assert_eq!(view.answered_calls(), own);
            }
            // And it is exact on a whole history: taken whenever no repair is needed.
            let whole = View::full(&history);
            let needs = !coherence::plan(whole.structures(), |i| whole.structure(i)).is_empty();
            if !needs {
                prop_assert_eq!(whole.repair_from(), Some(whole.len()), "{:?}", messages);
            }
            // A history whose only fault is calls still open at its end is planned from
            // where they were opened, not from its start.
            let settled = history.last_settled(0..history.len());
            if settled.is_some_and(|pos| history.coherent(0..pos)) {
                prop_assert_eq!(whole.repair_from(), settled);
            }
        }
    }
}
