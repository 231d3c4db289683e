//! Generators of values, turns and runs for the property tests.

use curator_coalesce::{
    DataEntry, Definition, Function, RecordedToolCall, Run, ToolSpec, TurnDraft, Turns, Value,
};
use proptest::prelude::*;

pub(crate) fn arb_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Nil),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        ".{0,40}".prop_map(Value::from),
        "[a-z-]{1,12}".prop_map(Value::keyword),
    ];
    leaf.prop_recursive(4, 64, 8, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..8).prop_map(Value::List),
            prop::collection::vec(inner.clone(), 0..8).prop_map(Value::Set),
            prop::collection::vec(("[a-z]{1,6}", inner), 0..8).prop_map(Value::map),
        ]
    })
}

fn arb_definition() -> impl Strategy<Value = Definition> {
    let function = (
        "[a-z]{1,6}",
        prop::collection::vec("[a-z]{1,4}", 0..3),
        prop::option::of(".{0,20}"),
        prop::option::of("[a-z]+\\[[0-9]\\]"),
    )
        .prop_map(|(name, params, doc, ret)| {
            let mut function = Function::new(name, params);
            if let Some(doc) = doc {
                function = function.with_docstring(doc);
            }
            if let Some(ret) = ret {
                function = function.with_return_type(ret);
            }
            Value::Function(function)
        });
    ("[a-e]{1,2}", prop_oneof![3 => arb_value(), 1 => function])
        .prop_map(|(name, value)| Definition { name, value })
}

fn arb_draft() -> impl Strategy<Value = TurnDraft> {
    (
        ".{0,40}",
        prop::option::of("[a-z ']{1,30}"),
        prop::collection::vec("[a-z0-9 ]{0,12}(\n[a-z0-9 ]{1,12})?", 0..4),
        prop::collection::vec(("[a-z-]{1,10}", arb_value()), 0..4),
        prop::collection::vec(arb_definition(), 0..4),
    )
        .prop_map(|(program, error, prints, calls, memory)| {
            let mut draft = match error {
                Some(error) => TurnDraft::failed(program, error),
                None => TurnDraft::returned(program, Value::Nil),
            };
            draft.prints = prints;
            draft.tool_calls = calls
                .into_iter()
                .map(|(name, args)| RecordedToolCall::new(name, args, Value::Nil))
                .collect();
            draft.memory = memory;
            draft
        })
}

pub(crate) fn arb_turns() -> impl Strategy<Value = Turns> {
    prop::collection::vec(arb_draft(), 0..8).prop_map(|drafts| {
        let mut turns = Turns::new();
        for draft in drafts {
            turns.push(draft);
        }
        turns
    })
}

pub(crate) fn arb_run() -> impl Strategy<Value = Run> {
    (
        "[A-Za-z][A-Za-z ]{0,39}",
        prop::collection::vec(
            ("[a-z-]{1,10}", prop::collection::vec("[a-z]{1,5}", 0..3), "[a-z:>-]{0,20}"),
            0..4,
        ),
        prop::collection::vec(("[a-z]{1,8}", arb_value(), any::<bool>()), 0..4),
        0u32..10,
    )
        .prop_map(|(mission, tools, data, max_turns)| {
            let tools = tools
                .into_iter()
                .map(|(name, params, signature)| ToolSpec::new(name, params, signature))
                .collect();
            let data = data
                .into_iter()
                .map(|(name, value, sample)| {
                    let entry = DataEntry::new(name, value);
                    if sample { entry } else { entry.without_sample() }
                })
                .collect();
            Run::new("system", mission).with_tools(tools).with_data(data).with_max_turns(max_turns)
        })
}
