//! The spec's type vocabulary table, row by row, and its truncation rules.

use curator_coalesce::{Function, Limits, Value, to_clojure};

/// Label and sample as a `user/` prelude line shows them: `= {type}` or `= {type}, sample: {sample}`.
fn described(value: &Value) -> String {
    match value.sample() {
        Some(sample) => {
            format!("= {}, sample: {}", value.type_label(), to_clojure(sample, Limits::SAMPLE))
        }
        None => format!("= {}", value.type_label()),
    }
}

#[track_caller]
fn check(value: &Value, expected: &str) {
    assert_eq!(described(value), expected);
}

#[test]
#[expect(clippy::approx_constant, reason = "the spec's table row is literally 3.14")]
fn every_row_of_the_type_vocabulary() {
    check(&Value::list([]), "= list[0]");
    check(&Value::list([1, 2, 3].map(Value::from)), "= list[3], sample: 1");
    check(&Value::map::<&str>([]), "= map[0]");
    check(&Value::map([("a", Value::from(1))]), "= map[1], sample: {:a 1}");
    check(&Value::from("hello"), "= string, sample: \"hello\"");
    check(&Value::from(42), "= integer, sample: 42");
    check(&Value::from(3.14), "= float, sample: 3.14");
    check(&Value::from(true), "= boolean, sample: true");
    check(&Value::keyword("active"), "= keyword, sample: :active");
    check(&Value::Nil, "= nil");
    check(&Value::Function(Function::new("helper", ["x"])), "= #fn[x]");
}

#[test]
fn samples_from_the_spec_examples() {
    let laptop = Value::map([("name", Value::from("Laptop")), ("price", Value::from(1200))]);
    let products = Value::list(vec![laptop; 7]);
    assert_eq!(described(&products), r#"= list[7], sample: {:name "Laptop", :price 1200}"#);
    let user = Value::map([
        ("id", Value::from(1)),
        ("name", Value::from("Alice")),
        ("email", Value::from("alice@example.com")),
        ("role", Value::keyword("admin")),
    ]);
    let users = Value::list(vec![user; 5]);
    assert_eq!(
        described(&users),
        r#"= list[5], sample: {:id 1, :name "Alice", :email "alice@example.com", ... 1 more}"#
    );
}

#[test]
fn samples_cut_strings_at_80_characters_and_tool_arguments_at_60() {
    let report = "Customer Review Summary for Electronics: ".repeat(4);
    let sample = to_clojure(&Value::from(report.as_str()), Limits::SAMPLE);
    assert_eq!(sample, format!("\"{}...\"", &report[..80]));
    let args = Value::map([
        ("to", Value::from("alice@example.com")),
        ("body", Value::from(report.as_str())),
    ]);
    assert_eq!(
        to_clojure(&args, Limits::TOOL_ARGS),
        format!("{{:to \"alice@example.com\", :body \"{}...\"}}", &report[..60])
    );
}
