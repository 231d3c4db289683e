//! The coalesced USER message of a code-executing agent: 5 and 50 turns over 100 definitions.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use curator_coalesce::{
    DataEntry, Definition, Function, RecordedToolCall, Run, SingleUserCoalesced, ToolSpec,
    TurnDraft, Turns, Value,
};

fn row(i: i64) -> Value {
    Value::map([
        ("id", Value::from(i)),
        ("name", Value::from(format!("Product {i} with a fairly long descriptive name"))),
        ("price", Value::from(f64::from(i32::try_from(i).unwrap_or(0)) * 1.5)),
        ("tags", Value::list([Value::keyword("new"), Value::keyword("sale")])),
    ])
}

/// A run of `turns` turns that together define 100 names (functions and values), calling
/// tools and printing along the way, with one failure in the middle.
fn run_with(turns: usize) -> (Run, Turns) {
    let run = Run::new("You write PTC-Lisp.", "Find well-reviewed products in stock")
        .with_tools(
            (0..8)
                .map(|i| {
                    ToolSpec::new(
                        format!("tool-{i}"),
                        ["query", "opts"],
                        "query:string, opts:map -> list",
                    )
                })
                .collect(),
        )
        .with_data(vec![
            DataEntry::new("products", Value::list((0..200).map(row))),
            DataEntry::new(
                "config",
                Value::map([("env", Value::from("prod")), ("debug", Value::from(false))]),
            ),
        ])
        .with_max_turns(60);
    let mut record = Turns::new();
    let per_turn = 100 / turns;
    for t in 0..turns {
        let mut draft = TurnDraft::returned(format!("(def ...) ; turn {t}"), Value::Nil);
        if t == turns / 2 {
            draft = TurnDraft::failed("(def x (broken))", "undefined symbol 'broken'");
        }
        draft.memory = (0..per_turn)
            .map(|d| {
                let n = t * per_turn + d;
                let value = if n.is_multiple_of(4) {
                    Value::Function(
                        Function::new(format!("helper-{n}"), ["items", "limit"])
                            .with_docstring("Filters items"),
                    )
                } else {
                    Value::list((0..20).map(|i| row(i64::try_from(n).unwrap_or(0) + i)))
                };
                Definition { name: format!("name-{n}"), value }
            })
            .collect();
        draft.tool_calls = (0..3)
            .map(|c| {
                RecordedToolCall::new(
                    format!("tool-{c}"),
                    row(i64::try_from(t).unwrap_or(0)),
                    Value::Nil,
                )
            })
            .collect();
        if t.is_multiple_of(2) {
            draft.prints = vec![format!("Found {t} products\nfirst: Product {t}")];
        }
        record.push(draft);
    }
    (run, record)
}

fn user_message(c: &mut Criterion) {
    let coalesced = SingleUserCoalesced::default();
    for turns in [5, 50] {
        let (run, record) = run_with(turns);
        c.bench_function(&format!("coalesce/user_message/{turns}_turns"), |b| {
            b.iter(|| black_box(coalesced.user_message(black_box(&run), black_box(&record))));
        });
    }
}

criterion_group!(benches, user_message);
criterion_main!(benches);
