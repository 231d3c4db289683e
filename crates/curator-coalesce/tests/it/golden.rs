//! The spec's examples, rendered and compared line by line.
//!
//! Where the spec's examples disagree with its own rules, the rule wins and the test says so:
//! maps print with `", "` between entries everywhere, and a definition made in a turn that
//! printed output is listed without a sample.

use curator_coalesce::{
    Compression, DataEntry, Definition, Function, RecordedToolCall, Run, SingleUserCoalesced,
    ToolSpec, TurnDraft, Turns, Uncompressed, Value,
};

fn laptop() -> Value {
    Value::map([("name", Value::from("Laptop")), ("price", Value::from(1200))])
}

fn def(name: &str, value: Value) -> Definition {
    Definition { name: name.to_owned(), value }
}

fn shop() -> Run {
    Run::new("PTC-Lisp rules", "Find well-reviewed products in stock")
        .with_tools(vec![
            ToolSpec::new("search-reviews", ["query"], "query:string -> string"),
            ToolSpec::new("get-inventory", Vec::<String>::new(), "-> map"),
        ])
        .with_data(vec![DataEntry::new("products", Value::list(vec![laptop(); 7]))])
}

#[track_caller]
fn check(run: &Run, turns: &Turns, expected: &str) {
    let actual = SingleUserCoalesced::default().user_message(run, turns);
    assert_eq!(actual, expected, "\n--- actual ---\n{actual}\n--- expected ---\n{expected}");
}

#[test]
fn after_single_user_coalesced() {
    let mut turns = Turns::new();
    let mut draft =
        TurnDraft::returned("(def electronics ...) (def reviews ...) (println ...)", Value::Nil);
    draft.memory = vec![
        def("electronics", Value::list(vec![laptop(); 4])),
        def("reviews", Value::from("Customer Review Summary for Electronics...")),
    ];
    draft.tool_calls = vec![RecordedToolCall::new(
        "search-reviews",
        Value::from("Electronics"),
        Value::from("Customer Review..."),
    )];
    draft.prints = vec!["Reviews: Customer Review Summary for Electronics...".to_owned()];
    turns.push(draft);
    check(
        &shop(),
        &turns,
        r#"Find well-reviewed products in stock

;; === tool/ ===
(tool/search-reviews query)      ; query:string -> string
(tool/get-inventory)             ; -> map

;; === data/ ===
data/products                    ; list[7], sample: {:name "Laptop", :price 1200}

;; === user/ (your prelude) ===
electronics                      ; = list[4]
reviews                          ; = string

;; Tool calls made:
;   search-reviews("Electronics")

;; Output:
Reviews: Customer Review Summary for Electronics...

Turns left: 4"#,
    );
}

#[test]
fn turn_one_has_an_empty_prelude_and_no_tool_calls() {
    let run = shop().with_tools(vec![ToolSpec::new(
        "search-reviews",
        ["query"],
        "query:string -> string",
    )]);
    check(
        &run,
        &Turns::new(),
        r#"Find well-reviewed products in stock

;; === tool/ ===
(tool/search-reviews query)      ; query:string -> string

;; === data/ ===
data/products                    ; list[7], sample: {:name "Laptop", :price 1200}

;; No tool calls made

Turns left: 5"#,
    );
}

#[test]
fn minimal_without_tools_or_output() {
    let run = Run::new("s", "Pick results").with_data(vec![
        DataEntry::new("items", Value::list([1, 2, 3].map(Value::from))).without_sample(),
    ]);
    let mut turns = Turns::new();
    let mut draft = TurnDraft::returned("(def results ...)", Value::Nil);
    let row = Value::map([("id", Value::from(1))]);
    draft.memory = vec![def("results", Value::list([row.clone(), row]))];
    turns.push(draft);
    check(
        &run,
        &turns,
        r"Pick results

;; === data/ ===
data/items                       ; list[3]

;; === user/ (your prelude) ===
results                          ; = list[2], sample: {:id 1}

Turns left: 4",
    );
}

fn fetch_run() -> Run {
    Run::new("s", "Load the users")
        .with_tools(vec![ToolSpec::new("fetch-data", ["key"], "key:string -> map")])
        .with_data(vec![
            DataEntry::new("config", Value::map([("env", Value::from("prod"))])).without_sample(),
        ])
}

fn fetched_users() -> TurnDraft {
    let mut draft = TurnDraft::returned(r#"(def users (tool/fetch-data "users"))"#, Value::Nil);
    draft.memory =
        vec![def("users", Value::list(vec![Value::map([("name", Value::from("Alice"))]); 5]))];
    draft.tool_calls = vec![RecordedToolCall::new("fetch-data", Value::from("users"), Value::Nil)];
    draft
}

const FETCH_HEAD: &str = r#"Load the users

;; === tool/ ===
(tool/fetch-data key)            ; key:string -> map

;; === data/ ===
data/config                      ; map[1]

;; === user/ (your prelude) ===
users                            ; = list[5], sample: {:name "Alice"}
"#;

#[test]
fn still_failing_shows_the_most_recent_failed_attempt() {
    let mut turns = Turns::new();
    turns.push(fetched_users());
    turns.push(TurnDraft::failed("(def y (older-mistake))", "undefined symbol 'older-mistake'"));
    turns.push(TurnDraft::failed("(def x (broken-code))", "undefined symbol 'broken-code'"));
    let run = fetch_run().with_max_turns(6);
    check(
        &run,
        &turns,
        &format!(
            "{FETCH_HEAD}
;; Tool calls made:
;   fetch-data(\"users\")

---
Your previous attempt:
```clojure
(def x (broken-code))
```

Error: undefined symbol 'broken-code'
---

Turns left: 3"
        ),
    );
}

#[test]
fn after_recovery_errors_collapse() {
    let mut turns = Turns::new();
    turns.push(fetched_users());
    turns.push(TurnDraft::failed("(def x (broken-code))", "undefined symbol 'broken-code'"));
    let mut recovered = TurnDraft::returned("(def result {:status \"ok\" :count 5})", Value::Nil);
    recovered.memory =
        vec![def("result", Value::map([("status", Value::from("ok")), ("count", Value::from(5))]))];
    turns.push(recovered);
    check(
        &fetch_run(),
        &turns,
        &format!(
            "{FETCH_HEAD}result                           ; = map[2], sample: {{:status \"ok\", :count 5}}

;; Tool calls made:
;   fetch-data(\"users\")

Turns left: 2"
        ),
    );
}

#[test]
fn exploration_mode_samples_and_explicit_mode_prints() {
    let report = "Customer Review Summary for Electronics: 4.5 stars across 1,200 reviews, praising battery life";
    let run = Run::new("s", "Review");
    let mut exploring =
        TurnDraft::returned("(def reviews (tool/search-reviews \"Electronics\"))", Value::Nil);
    exploring.memory = vec![def("reviews", Value::from(report))];
    let mut turns = Turns::new();
    turns.push(exploring.clone());
    let sample: String = report.chars().take(80).collect();
    let text = SingleUserCoalesced::default().user_message(&run, &turns);
    assert!(
        text.contains(&format!(
            "reviews                          ; = string, sample: \"{sample}...\"\n"
        )),
        "{text}"
    );
    assert!(!text.contains(";; Output:"), "{text}");

    let mut explicit = exploring;
    explicit.prints = vec![format!("Reviews: {report}")];
    let mut turns = Turns::new();
    turns.push(explicit);
    let text = SingleUserCoalesced::default().user_message(&run, &turns);
    assert!(text.contains("reviews                          ; = string\n"), "{text}");
    assert!(text.contains(&format!(";; Output:\nReviews: {report}\n")), "{text}");
}

#[test]
fn tool_calls_that_return_nil_are_still_listed() {
    let run = Run::new("s", "Call the team").with_tools(vec![ToolSpec::new(
        "make-call",
        ["opts"],
        "opts:map -> nil",
    )]);
    let mut draft = TurnDraft::returned("(tool/make-call ...) (tool/make-call ...)", Value::Nil);
    draft.tool_calls = ["Alice", "Bob"]
        .into_iter()
        .zip(["Meeting at 3pm", "Bring documents"])
        .map(|(to, message)| {
            let args = Value::map([("to", Value::from(to)), ("message", Value::from(message))]);
            RecordedToolCall::new("make-call", args, Value::Nil)
        })
        .collect();
    let mut turns = Turns::new();
    turns.push(draft);
    let text = SingleUserCoalesced::default().user_message(&run, &turns);
    assert!(
        text.contains(
            ";; Tool calls made:\n;   make-call({:to \"Alice\", :message \"Meeting at 3pm\"})\n;   make-call({:to \"Bob\", :message \"Bring documents\"})\n"
        ),
        "{text}"
    );
}

#[test]
fn tool_arguments_are_truncated_at_60_characters_and_3_items() {
    let long = "x".repeat(100);
    let args =
        Value::list([Value::from(long.as_str()), Value::from(2), Value::from(3), Value::from(4)]);
    let mut draft = TurnDraft::returned("(tool/t ...)", Value::Nil);
    draft.tool_calls = vec![RecordedToolCall::new("t", args, Value::Nil)];
    let mut turns = Turns::new();
    turns.push(draft);
    let text = SingleUserCoalesced::default().user_message(&Run::new("s", "m"), &turns);
    assert!(
        text.contains(&format!(";   t([\"{}...\" 2 3 ... 1 more])\n", "x".repeat(60))),
        "{text}"
    );
}

#[test]
fn prints_and_tool_calls_keep_only_the_most_recent() {
    let compression = SingleUserCoalesced::default().with_println_limit(2).with_tool_call_limit(3);
    let mut turns = Turns::new();
    for turn in 0..3 {
        let mut draft = TurnDraft::returned("(...)", Value::Nil);
        // A call that printed two lines still counts as one println call.
        draft.prints = vec![format!("turn {turn}\nsecond line")];
        draft.tool_calls = (0..2)
            .map(|n| RecordedToolCall::new(format!("t{turn}-{n}"), Value::Nil, Value::Nil))
            .collect();
        turns.push(draft);
    }
    let text = compression.user_message(&Run::new("s", "m"), &turns);
    // What the limits leave out is counted, not dropped unsaid.
    assert!(
        text.contains(
            ";; Tool calls made:\n;   ... 3 earlier tool calls not shown (tool_call_limit 3)\n;   t1-1()\n;   t2-0()\n;   t2-1()\n\n"
        ),
        "{text}"
    );
    assert!(
        text.contains(
            ";; Output:\n;; ... 1 earlier println call not shown (println_limit 2)\nturn 1\nsecond line\nturn 2\nsecond line\n\n"
        ),
        "{text}"
    );
}

#[test]
fn a_redefined_name_keeps_its_place_and_shows_the_latest_value() {
    let mut turns = Turns::new();
    let mut first = TurnDraft::returned("(def a 1) (def b 2)", Value::Nil);
    first.memory = vec![def("a", Value::from(1)), def("b", Value::from(2))];
    turns.push(first);
    let mut second = TurnDraft::returned("(defn a ...)", Value::Nil);
    second.memory = vec![def(
        "a",
        Value::Function(
            Function::new("a", ["items", "filter-fn"])
                .with_docstring("Processes and filters items")
                .with_return_type("list[3]"),
        ),
    )];
    turns.push(second);
    let text = SingleUserCoalesced::default().user_message(&Run::new("s", "m"), &turns);
    assert!(
        text.contains(
            ";; === user/ (your prelude) ===\n(a [items filter-fn])            ; \"Processes and filters items\" -> list[3]\nb                                ; = integer, sample: 2\n"
        ),
        "{text}"
    );
}

#[test]
fn uncompressed_keeps_every_program_error_and_line() {
    let mut turns = Turns::new();
    turns.push(fetched_users());
    turns.push(TurnDraft::failed("(def x (broken-code))", "undefined symbol 'broken-code'"));
    let messages = Uncompressed.to_messages(&fetch_run(), &turns);
    let texts: Vec<String> = messages.iter().map(|message| message.text().into_owned()).collect();
    assert_eq!(texts.len(), 6);
    assert_eq!(texts[0], "s");
    assert!(texts[1].starts_with("Load the users\n\n;; === tool/ ===\n"));
    assert_eq!(texts[2], r#"(def users (tool/fetch-data "users"))"#);
    assert_eq!(texts[3], "Result: nil\n\n;; Tool calls made:\n;   fetch-data(\"users\")");
    assert_eq!(texts[4], "(def x (broken-code))");
    assert_eq!(texts[5], "Error: undefined symbol 'broken-code'\n\nTurns left: 3");
}
