//! The unit walk and the view's readers, against their plainest definitions, on views of
//! every shape edits make: runs with gaps, replaced messages, inserted messages.

use curator_model::{Message, ToolCall};
use curator_strategies::{CharEstimate, History, TokenCounter, View};
use proptest::prelude::*;

/// Lists built from few ids, so that parallel calls, split calls, results without calls and
/// calls without results all occur.
fn messy_list() -> impl Strategy<Value = Vec<Message>> {
    let id = prop_oneof![Just("a"), Just("b"), Just("c")];
    let message = prop_oneof![
        Just(Message::user("u")),
        Just(Message::system("s")),
        Just(Message::assistant("text")),
        prop::collection::vec(id.clone(), 1..4).prop_map(|ids| Message::assistant_with_calls(
            None,
            ids.into_iter().map(|id| ToolCall::new(id, "t", "{}")).collect()
        )),
        id.prop_map(|id| Message::tool_result(id, "ok")),
    ];
    prop::collection::vec(message, 0..30)
}

/// What an edit does at each history position: keep it, drop it, replace it (with a copy
/// of the same structure, or a plain user message), or insert a new message before it.
#[derive(Clone, Debug)]
enum Step {
    Keep,
    Drop,
    SameShape,
    Other,
    InsertBefore,
}

fn steps() -> impl Strategy<Value = Vec<Step>> {
    let step = prop_oneof![
        6 => Just(Step::Keep),
        2 => Just(Step::Drop),
        1 => Just(Step::SameShape),
        1 => Just(Step::Other),
        1 => Just(Step::InsertBefore),
    ];
    prop::collection::vec(step, 30)
}

fn edited<'h>(history: &'h History<'h>, steps: &[Step]) -> View<'h> {
    let full = View::full(history);
    let mut edit = full.edit();
    for (index, step) in steps.iter().enumerate().take(full.len()) {
        match step {
            Step::Keep => {
                edit.keep(index..index + 1);
            }
            Step::Drop => {}
            Step::SameShape => {
                let copy = Message::clone(&full.message(index));
                edit.replace(index, copy);
            }
            Step::Other => {
                edit.replace(index, Message::user("replaced"));
            }
            Step::InsertBefore => {
                edit.insert(Message::user("inserted")).keep(index..index + 1);
            }
        }
    }
    edit.finish()
}

/// The walk as first written: every index located on its own.
fn reference_units(view: &View<'_>, floor: usize) -> Vec<std::ops::Range<usize>> {
    let history = view.history();
    let head_of = |p: usize| history.unit_head(p).unwrap_or(p);
    let mut units = Vec::new();
    let mut next = view.len();
    while next > floor {
        let last = next - 1;
        let mut first = last;
        if let Some(pos) = view.pos(last) {
            let mut head = head_of(pos);
            while first > floor {
                match view.pos(first - 1) {
                    Some(p) if p >= head && p < pos => {
                        head = head.min(head_of(p));
                        first -= 1;
                    }
                    _ => break,
                }
            }
        }
        units.push(first..last + 1);
        next = first;
    }
    units
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1_000))]

    #[test]
    fn the_unit_walk_and_the_readers_agree_with_their_definitions(
        messages in messy_list(),
        steps in steps(),
        floor in 0usize..8,
    ) {
        let history = History::from(messages.as_slice());
        let counter = CharEstimate::default();
        for view in [View::full(&history), edited(&history, &steps)] {
            let floor = floor.min(view.len());
            let units: Vec<_> = view.units_rev(floor).map(|u| u.range()).collect();
            prop_assert_eq!(&units, &reference_units(&view, floor));
            for unit in &units {
                for at in unit.clone() {
                    if floor == 0 {
                        prop_assert_eq!(view.unit_at(at).map(|u| u.range()), Some(unit.clone()));
                    }
                }
            }
            // Reading the view in order is reading each index.
            let entries: Vec<_> = view.iter().map(|e| (e.pos, Message::clone(&e.message))).collect();
            let by_index: Vec<_> =
                (0..view.len()).map(|i| (view.pos(i), Message::clone(&view.message(i)))).collect();
            prop_assert_eq!(entries, by_index);
            let structures: Vec<_> = view.structures().cloned().collect();
            let by_index: Vec<_> = (0..view.len()).map(|i| view.structure(i).clone()).collect();
            prop_assert_eq!(structures, by_index);
            // A range's tokens are the sum of its messages' own counts.
            let tally = view.tally(&counter);
            for unit in &units {
                let each: u64 = unit.clone().map(|i| counter.count_message(&view.message(i))).sum();
                prop_assert_eq!(tally.range(unit.clone()), each);
            }
        }
    }
}
