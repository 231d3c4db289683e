//! What review found in issue 16, one test per defect: each failed before its fix.

use curator_coalesce::{
    CompressionConfig, Definition, Limits, Run, SingleUserCoalesced, TurnDraft, Turns, Value,
    to_clojure,
};

fn define(name: &str, value: Value) -> Definition {
    Definition { name: name.to_owned(), value }
}

/// Defect 7: `memory` is the snapshot after a turn; a name defined earlier without output
/// lost its sample as soon as a later turn printed.
#[test]
fn memory_snapshots_keep_the_sample_of_the_turn_that_defined_each_name() {
    let mut turns = Turns::new();
    let mut first = TurnDraft::returned("(def x 41)", Value::Nil);
    first.memory = vec![define("x", Value::from(41))];
    turns.push(first);
    let mut second = TurnDraft::returned("(def y [1 2 3]) (println y)", Value::Nil);
    second.prints = vec!["[1 2 3]".to_owned()];
    // The snapshot: x is still there, unchanged; y is new.
    second.memory =
        vec![define("x", Value::from(41)), define("y", Value::list([1, 2, 3].map(Value::from)))];
    turns.push(second);
    let mut third = TurnDraft::returned("(def x 42) (println x)", Value::Nil);
    third.prints = vec!["42".to_owned()];
    third.memory =
        vec![define("x", Value::from(42)), define("y", Value::list([1, 2, 3].map(Value::from)))];
    let text = SingleUserCoalesced::default().user_message(&Run::new("s", "Count"), &turns);
    assert!(
        text.contains("\nx                                ; = integer, sample: 41\n"),
        "{text}"
    );
    assert!(text.contains("\ny                                ; = list[3]\n"), "{text}");
    // Redefined by a turn that printed: the new value, without a sample.
    turns.push(third);
    let text = SingleUserCoalesced::default().user_message(&Run::new("s", "Count"), &turns);
    assert!(text.contains("\nx                                ; = integer\n"), "{text}");
}

/// Defect 8: options on a strategy that has none were ignored; the spec's own spelling was
/// refused.
#[test]
fn configuration_refuses_foreign_options_and_takes_the_specs_spelling() {
    let error = serde_json::from_str::<CompressionConfig>(
        r#"{"strategy":"uncompressed","println_limit":10}"#,
    )
    .unwrap_err()
    .to_string();
    assert!(error.contains("unknown field `println_limit`"), "{error}");
    for json in
        [r#""SingleUserCoalesced""#, r#"{"strategy": "SingleUserCoalesced", "println_limit": 10}"#]
    {
        let config: CompressionConfig = serde_json::from_str(json).unwrap();
        assert_eq!(config.build().name(), "single_user_coalesced", "{json}");
    }
    let config: CompressionConfig = serde_json::from_str(r#""Uncompressed""#).unwrap();
    assert_eq!(config.build().name(), "uncompressed");
}

/// Defect 9: deserialized turns took any number; a mission ending in a newline gave an
/// extra blank line.
#[test]
fn turns_read_back_are_numbered_by_position_and_missions_are_trimmed() {
    let mut turns = Turns::new();
    turns.push(TurnDraft::returned("(+ 1 2)", Value::from(3)));
    let mut json = serde_json::to_value(&turns).unwrap();
    json[0]["number"] = serde_json::json!(9);
    let error = serde_json::from_value::<Turns>(json).unwrap_err().to_string();
    assert!(error.contains("turn 1 is numbered 9"), "{error}");
    let json = serde_json::to_value(&turns).unwrap();
    assert_eq!(serde_json::from_value::<Turns>(json).unwrap(), turns);

    let text = SingleUserCoalesced::default().user_message(&Run::new("s", "Count\n"), &turns);
    assert_eq!(text, "Count\n\nTurns left: 4");
}

/// Defect 10: tool results arrive as JSON; there was no conversion.
#[test]
fn json_values_convert() {
    // Keys in sorted order, so that the test holds whether or not maps keep insertion order.
    let json = serde_json::json!({
        "first name": "Ada",
        "huge": u64::MAX,
        "name": "Laptop",
        "price": 1200,
        "ratio": 0.5,
        "tags": ["new", null, true],
    });
    let value = Value::from(json);
    assert_eq!(
        to_clojure(&value, Limits::UNLIMITED),
        r#"{"first name" "Ada", :huge 18446744073709552000.0, :name "Laptop", :price 1200, :ratio 0.5, :tags ["new" nil true]}"#
    );
    assert_eq!(value.type_label(), "map[6]");
}
