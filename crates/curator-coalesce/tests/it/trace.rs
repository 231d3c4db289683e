//! Trace views: the turns as they happened, the compressed view, and token usage.

use curator_coalesce::{
    Compression, RecordedToolCall, Run, SingleUserCoalesced, Trace, TurnDraft, Turns, Uncompressed,
    Value,
};
use curator_strategies::{CharEstimate, TokenCounter};

fn two_turns() -> Turns {
    let mut turns = Turns::new();
    let mut first = TurnDraft::returned("(def r (tool/search \"x\"))\n(println r)", Value::Nil);
    first.raw_response = format!("Let me search.\n{}", first.program);
    first.tool_calls =
        vec![RecordedToolCall::new("search", Value::from("x"), Value::from("found"))];
    first.prints = vec!["found".to_owned()];
    turns.push(first);
    turns.push(TurnDraft::failed("(boom)", "undefined symbol 'boom'"));
    turns
}

#[test]
fn the_turns_view_shows_everything_that_happened() {
    let text = Trace::turns().render(&Run::new("s", "m"), &two_turns());
    assert_eq!(
        text,
        r#"=== Turn 1 (ok) ===
Program:
```clojure
(def r (tool/search "x"))
(println r)
```
Tool calls:
  search("x") -> "found"
Output:
found
Result: nil

=== Turn 2 (failed) ===
Program:
```clojure
(boom)
```
Error: undefined symbol 'boom'"#
    );
    let raw = Trace::turns().with_raw().render(&Run::new("s", "m"), &two_turns());
    assert!(raw.contains("Raw response:\nLet me search.\n"), "{raw}");
}

#[test]
fn usage_counts_match_the_counter() {
    let run = Run::new("You write PTC-Lisp.", "Search for x");
    let turns = two_turns();
    let counter = CharEstimate::default();
    let coalesced = SingleUserCoalesced::default();
    let text = Trace::compressed(&coalesced).with_usage(&counter).render(&run, &turns);

    let messages = coalesced.to_messages(&run, &turns);
    let per_message: Vec<u64> =
        messages.iter().map(|message| counter.count_message(message)).collect();
    assert!(
        text.starts_with(&format!(
            "[system] ({} tokens)\nYou write PTC-Lisp.\n\n[user] ({} tokens)\nSearch for x\n",
            per_message[0], per_message[1]
        )),
        "{text}"
    );
    let full: u64 = Uncompressed
        .to_messages(&run, &turns)
        .iter()
        .map(|message| counter.count_message(message))
        .sum();
    let compressed: u64 = per_message.iter().sum();
    let priming = counter.reply_priming();
    assert!(
        text.ends_with(&format!(
            "tokens: single_user_coalesced prompt: {}, uncompressed prompt: {}",
            compressed + priming,
            full + priming
        )),
        "{text}"
    );
}
