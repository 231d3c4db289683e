//! The walk shared by the trimming strategies: keep the head, then the newest whole units.

use curator_model::{Message, Role};

use crate::{Head, Tally, Unit, View};

/// The user message a trimmed view starts with when what it kept would begin with an
/// assistant message: Anthropic requires the first message after the system prompt to be
/// the user's, and the model learns that something came before.
pub(crate) const OMITTED_NOTE: &str =
    "[Earlier messages of this conversation were left out by curator to fit the context.]";

/// What a trimming strategy decides about the next-older unit.
pub(crate) enum Take {
    /// Keep it and look at the next.
    Keep,
    /// Keep it with these messages replaced (view index, replacement, in index order), and
    /// stop.
    KeepAs(Vec<(usize, Message)>),
    /// Stop: neither it nor anything older is kept.
    Stop,
}

/// Keeps the pinned `head` and the newest units for which `decide` says so, newest first,
/// then restores coherence. The first unit `decide` sees is `present`, the view's
/// [`present`](View::present) (which may span several units, and pinned messages, which are
/// kept whatever it decides). `None` when every unit is kept: nothing needed trimming, and the
/// caller repairs the view it owns (no copy is made). With `never_empty`, a non-empty view
/// never becomes empty: older units are taken one by one until something survives
/// coherence. When what is kept would start (after the system messages) with an assistant
/// message although the view did not, a short user note saying that earlier messages were
/// left out comes first. Costs O(kept).
pub(crate) fn keep_newest<'h>(
    view: &View<'h>,
    head: &Head,
    present: Option<Unit>,
    never_empty: bool,
    mut decide: impl FnMut(Unit) -> Take,
) -> Option<View<'h>> {
    let mut units = view.units_rev_to(head.len(), present.map_or(view.len(), |u| u.start()));
    let mut cut = None;
    let mut replaced: Option<(Unit, Vec<(usize, Message)>)> = None;
    let mut stopped_at = None;
    let mut is_present = present.is_some();
    let mut stop = false;
    for unit in present.into_iter().chain(units.by_ref()) {
        // A pinned message in the body (a later system message, the task after a gap) is
        // kept whatever the strategy decides, so it is not the strategy's to count.
        if unit.len() == 1 && head.is_pinned(unit.start()) && !is_present {
            continue;
        }
        if stop {
            stopped_at = Some(unit);
            break;
        }
        match decide(unit) {
            Take::Keep => cut = Some(unit.start()),
            Take::KeepAs(replacements) => {
                replaced = Some((unit, replacements));
                stopped_at = Some(unit);
                break;
            }
            // The present is never dropped: a strategy that stops at it keeps it whole, and
            // nothing older.
            Take::Stop if is_present => {
                cut = Some(unit.start());
                stop = true;
            }
            Take::Stop => {
                stopped_at = Some(unit);
                break;
            }
        }
        is_present = false;
    }
    stopped_at?;
    // The pinned messages before `limit`, then a replaced unit, then everything from `cut`
    // (after a replaced unit: what is newer than it, pinned messages among them).
    let build = |limit: Option<usize>, replaced: Option<&(Unit, Vec<(usize, Message)>)>, cut| {
        let mut edit = view.edit();
        for &index in head.pinned().iter().filter(|&&i| limit.is_none_or(|l| i < l)) {
            edit.keep(index..index + 1);
        }
        if let Some((unit, replacements)) = replaced {
            let mut from = unit.start();
            for (index, message) in replacements {
                edit.keep(from..*index).replace(*index, message.clone());
                from = index + 1;
            }
            edit.keep(from..unit.range().end);
        }
        if let Some(cut) = cut {
            edit.keep(cut..view.len());
        }
        edit.finish()
    };
    let mut kept = match &replaced {
        Some(replaced) => {
            build(Some(replaced.0.start()), Some(replaced), Some(replaced.0.range().end))
        }
        None => build(cut, None, cut),
    };
    if never_empty && kept.is_empty() {
        // Take older units one at a time until one survives coherence.
        for unit in stopped_at.into_iter().chain(units) {
            kept = build(Some(unit.start()), None, Some(unit.start()));
            if !kept.is_empty() {
                break;
            }
        }
    }
    Some(noted(view, kept))
}

/// [`keep_newest`] for a view that is the whole history under no map, with every pinned
/// message at its front, whose present fits whole and whose older units are kept while
/// their tokens fit `room`: the first kept unit is found by bisecting the history's prefix
/// sums, not by walking every unit, so that a call costs O(log history + the unit at the
/// cut + kept items). Returns what `keep_newest` returns and the tokens of the older units
/// kept. `None` when the view is not such a view.
pub(crate) fn keep_fitting<'h>(
    view: &View<'h>,
    head: &Head,
    present: Unit,
    room: u64,
    tally: &Tally<'_, 'h>,
) -> Option<(Option<View<'h>>, u64)> {
    let floor = head.len();
    if !view.is_whole_history() || head.pinned().len() != floor || present.start() < floor {
        return None;
    }
    // In such a view an index is a history position.
    let end = present.start();
    let fits_from = tally.first_within(floor..end, room);
    if fits_from == floor {
        return Some((None, tally.range(floor..end)));
    }
    // The walk passes through every position after which no call is open (nothing after
    // it can reach back over it): from the first such one at or after the bisected
    // position, the units that start at or after that position are the ones kept.
    let history = view.history();
    let settled = (fits_from..end).find(|&q| !history.open_after(q - 1)).unwrap_or(end);
    let cut = view
        .units_rev_to(floor, settled)
        .take_while(|unit| unit.start() >= fits_from)
        .last()
        .map_or(settled, |unit| unit.start());
    let used = tally.range(cut..end);
    let mut edit = view.edit();
    edit.keep(0..floor).keep(cut..view.len());
    Some((Some(noted(view, edit.finish())), used))
}

/// `kept`, a trimmed `view`, with a short user note first when it would start (after the
/// system messages) with an assistant message although `view` did not.
fn noted<'h>(view: &View<'h>, kept: View<'h>) -> View<'h> {
    if view.leads_with() == Some(Role::Assistant) {
        // The input itself starts that way: keep it as it is.
        return kept;
    }
    match kept.leads_with() {
        Some(Role::Assistant) => {
            let first = (0..kept.len()).find(|&i| kept.structure(i).role() != Role::System);
            let first = first.unwrap_or(0);
            let mut edit = kept.edit();
            edit.keep(0..first).insert(Message::user(OMITTED_NOTE)).keep(first..kept.len());
            edit.finish()
        }
        _ => kept,
    }
}

#[cfg(test)]
mod tests {
    use curator_model::ToolCall;
    use proptest::prelude::*;

    use super::*;
    use crate::{CharEstimate, CurationContext, History};

    /// An optional system message and the task, then a body of every shape the pairing
    /// knows (parallel calls, calls split over assistant messages, results without calls,
    /// calls without results), of varied sizes; rarely a late system message.
    fn conversation() -> impl Strategy<Value = Vec<Message>> {
        let id = prop_oneof![Just("a"), Just("b"), Just("c")];
        let text = (1usize..200).prop_map(|n| "x".repeat(n));
        let message = prop_oneof![
            3 => text.clone().prop_map(Message::user),
            3 => text.clone().prop_map(Message::assistant),
            4 => (prop::collection::vec(id.clone(), 1..4), prop::option::of(text.clone())).prop_map(
                |(ids, text)| Message::assistant_with_calls(
                    text.map(Into::into),
                    ids.into_iter().map(|id| ToolCall::new(id, "t", "{}")).collect()
                )
            ),
            6 => (id, text.clone()).prop_map(|(id, text)| Message::tool_result(id, text)),
            1 => Just(Message::tool_result("z", "for no call")),
            1 => Just(Message::system("late rule")),
        ];
        (any::<bool>(), prop::collection::vec(message, 0..40)).prop_map(|(system, body)| {
            let mut messages = Vec::new();
            if system {
                messages.push(Message::system("rules"));
            }
            messages.push(Message::user("the task"));
            messages.extend(body);
            messages
        })
    }

    fn entries(view: Option<&View<'_>>) -> Option<Vec<(Option<usize>, Message)>> {
        view.map(|v| v.iter().map(|e| (e.pos, Message::clone(&e.message))).collect())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3_000))]

        #[test]
        fn bisecting_the_cut_keeps_what_walking_the_units_keeps(
            messages in conversation(),
            room in 0u64..600,
        ) {
            let history = History::from(messages.as_slice());
            let view = View::full(&history);
            let head = view.head(&CurationContext::default());
            let Some(present) = view.present(&head) else { return Ok(()) };
            let counter = CharEstimate::default();
            let tally = view.tally(&counter);
            let fitting = keep_fitting(&view, &head, present, room, &tally);
            // It answers for every conversation whose system messages all come first.
            let late_system = messages
                .iter()
                .skip_while(|m| m.role() == Role::System)
                .any(|m| m.role() == Role::System);
            prop_assert!(late_system || fitting.is_some());
            let Some((fast, older)) = fitting else { return Ok(()) };
            let mut used = 0;
            let mut first = true;
            let walked = keep_newest(&view, &head, Some(present), false, |unit| {
                if std::mem::replace(&mut first, false) {
                    return Take::Keep;
                }
                let tokens = tally.range(unit.range());
                if used + tokens <= room {
                    used += tokens;
                    Take::Keep
                } else {
                    Take::Stop
                }
            });
            prop_assert_eq!(older, used);
            prop_assert_eq!(entries(fast.as_ref()), entries(walked.as_ref()));
        }
    }
}
