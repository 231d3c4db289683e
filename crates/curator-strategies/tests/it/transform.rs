//! Transforming strategies: truncation, clearing, filtering, redaction.

use curator_model::{Content, Message, Part, ToolCall, validate};
use curator_strategies::{
    ClearOldToolResults, CurationContext, Error, HistoryManagerExt, Redactor, SlidingWindow,
    ToolFilter, ToolResultTruncator,
};
use proptest::prelude::*;

fn ctx() -> CurationContext<'static> {
    CurationContext::default()
}

#[test]
fn max_length_shorter_than_the_suffix_is_a_construction_error() {
    let err = ToolResultTruncator::with_suffix(5, "[truncated]").unwrap_err();
    assert!(matches!(err, Error::InvalidOption { option: "max_length", .. }));
    assert_eq!(
        err.to_string(),
        "tool_result_truncator: option `max_length` is 5, shorter than the suffix of 11 characters"
    );
    assert!(ToolResultTruncator::new(10).is_err());
    // Exactly the suffix's length is allowed: every cut result is the suffix alone.
    let t = ToolResultTruncator::with_suffix(3, "...").unwrap();
    assert_eq!(t.truncate("abcdef").as_deref(), Some("..."));
}

proptest! {
    #[test]
    fn truncation_never_exceeds_max_length(text in "[a-zé😀中 ]{0,300}", max in 0usize..120, suffix in "[.…{}cut ]{0,12}") {
        if let Ok(t) = ToolResultTruncator::with_suffix(max, suffix)
            && let Some(out) = t.truncate(&text) {
                prop_assert!(out.chars().count() <= max);
                prop_assert!(text.chars().count() > max);
            }
    }
}

#[test]
fn cut_counts_characters_on_char_boundaries() {
    let t = ToolResultTruncator::with_suffix(12, "…[{cut}]").unwrap();
    let text = "😀é中".repeat(10); // 30 characters, 90 bytes
    let out = t.truncate(&text).unwrap();
    assert_eq!(out, "😀é中😀é中😀…[23]");
    assert_eq!(out.chars().count(), 12);
    // The count's own digits are accounted for: 99 999 cut characters need five digits.
    let t = ToolResultTruncator::with_suffix(20, "…[{cut} cut]").unwrap();
    let out = t.truncate(&"x".repeat(100_010)).unwrap();
    assert_eq!(out.chars().count(), 20);
    assert_eq!(out, "xxxxxxx…[100003 cut]");
}

#[test]
fn truncator_touches_only_tool_results_and_keeps_images() {
    let long = "y".repeat(500);
    let input = vec![
        Message::user(long.as_str()),
        Message::assistant_with_calls(None, vec![ToolCall::new("1", "shot", "{}")]),
        Message::tool_result(
            "1",
            Content::Parts(vec![
                Part::text(long.as_str()),
                Part::image(curator_model::ImageSource::Url { url: "https://x/y.png".into() }),
            ]),
        ),
    ];
    let view = ToolResultTruncator::new(100).unwrap().curate_messages(&input, &ctx()).unwrap();
    assert_eq!(view[0], input[0]);
    let Some(Content::Parts(parts)) = view[2].content() else { panic!() };
    assert_eq!(parts.len(), 2);
    assert!(parts[0].as_text().unwrap().chars().count() <= 100);
    assert!(matches!(parts[1], Part::Image { .. }));
}

#[test]
fn clearing_keeps_every_pair_and_names_the_tool() {
    let mut input = vec![Message::user("task")];
    for (i, tool) in ["search", "read", "memory", "read"].iter().enumerate() {
        let id = format!("c{i}");
        input.push(Message::assistant_with_calls(None, vec![ToolCall::new(&id, *tool, "{}")]));
        input.push(Message::tool_result(&id, "z".repeat(100 + i)));
    }
    let clear = ClearOldToolResults::new(1)
        .with_exclude(["memory"])
        .with_placeholder("<{tool}: {chars} chars cleared>");
    let view = clear.curate_messages(&input, &ctx()).unwrap();
    assert_eq!(view.len(), input.len());
    assert_eq!(view[2].text(), "<search: 100 chars cleared>");
    assert_eq!(view[4].text(), "<read: 101 chars cleared>");
    assert_eq!(view[6], input[6], "excluded tools are never cleared");
    assert_eq!(view[8], input[8], "the newest result is kept");
    validate::openai(&view).unwrap();
    // keep_last larger than the number of results clears nothing.
    assert_eq!(ClearOldToolResults::new(10).curate_messages(&input, &ctx()).unwrap(), input);
}

#[test]
fn filter_drops_calls_with_their_results_by_name_or_predicate() {
    let input = vec![
        Message::user("task"),
        Message::assistant_with_calls(None, vec![ToolCall::new("1", "debug_dump", "{}")]),
        Message::tool_result("1", "noise"),
        Message::assistant_with_calls(
            Some("both".into()),
            vec![ToolCall::new("2", "debug_log", "{}"), ToolCall::new("3", "ls", "{}")],
        ),
        Message::tool_result("2", "noise"),
        Message::tool_result("3", "a.txt"),
        Message::assistant("Done."),
    ];
    let view = ToolFilter::predicate(|name| name.starts_with("debug_"))
        .curate_messages(&input, &ctx())
        .unwrap();
    assert_eq!(view.len(), 4);
    assert_eq!(view[1].tool_calls().len(), 1);
    assert_eq!(view[2].text(), "a.txt");
    validate::openai(&view).unwrap();
    assert_eq!(ToolFilter::names(["nothing"]).curate_messages(&input, &ctx()).unwrap(), input);
    // The newest unit is never filtered: its calls are what the model just did.
    let view = ToolFilter::predicate(|name| name.starts_with("debug_"))
        .curate_messages(&input[..6], &ctx())
        .unwrap();
    assert_eq!(view, input[..1].iter().chain(&input[3..6]).cloned().collect::<Vec<_>>());
}

#[test]
fn redaction_covers_every_built_in_kind() {
    let r = Redactor::new();
    let cases = [
        ("key sk-proj-AbCdEfGhIjKlMnOpQrStUvWx12", "key [REDACTED:openai_key]"),
        ("sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWx_1234", "[REDACTED:anthropic_key]"),
        ("aws AKIAIOSFODNN7EXAMPLE here", "aws [REDACTED:aws_access_key] here"),
        ("ghp_0123456789abcdefghijklmnopqrstuvwxyz", "[REDACTED:github_token]"),
        ("github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz", "[REDACTED:github_token]"),
        ("xoxb-1234567890-abcdefghij", "[REDACTED:slack_token]"),
        (
            "Authorization: Bearer abc.def-ghi_jkl~mno+pqr/stu=",
            "Authorization: Bearer [REDACTED:bearer_token]",
        ),
        (
            "token eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
            "token [REDACTED:jwt]",
        ),
        (
            "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\nabc\n-----END RSA PRIVATE KEY-----",
            // The key's line breaks stay: the lines after it are where they were.
            "[REDACTED:pem_private_key]\n\n\n",
        ),
        (
            "-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----",
            "[REDACTED:pem_private_key]\n\n",
        ),
        (
            "https://admin:s3cr3t@example.com/x",
            "https://admin:[REDACTED:url_password]@example.com/x",
        ),
        ("nothing secret here: sk-short", "nothing secret here: sk-short"),
    ];
    for (input, expected) in cases {
        assert_eq!(r.redact(input), expected, "{input}");
    }
}

#[test]
fn redaction_keeps_arguments_valid_json_and_the_record_untouched() {
    let args = r#"{"cmd": "curl -H 'Authorization: Bearer abcdefghijklmnopqrstu' https://api"}"#;
    let input = vec![
        Message::user("task"),
        Message::assistant_with_calls(None, vec![ToolCall::new("1", "bash", args)]),
        Message::tool_result("1", "200 OK"),
    ];
    let view = Redactor::new().curate_messages(&input, &ctx()).unwrap();
    let redacted = view[1].tool_calls()[0].arguments_json().unwrap();
    assert_eq!(
        redacted["cmd"],
        "curl -H 'Authorization: Bearer [REDACTED:bearer_token]' https://api"
    );
    assert_eq!(input[1].tool_calls()[0].arguments(), args);
}

#[test]
fn a_bad_pattern_is_a_typed_error() {
    let err = Redactor::new().with_pattern("broken", "(unclosed").unwrap_err();
    assert!(matches!(&err, Error::Pattern { name, .. } if name == "broken"));
}

#[test]
fn transformations_apply_only_to_what_a_later_window_keeps() {
    #[derive(Debug, Default)]
    struct Spy(std::sync::atomic::AtomicUsize);
    impl curator_strategies::MessageMap for Spy {
        fn map(
            &self,
            _: &Message,
            _: Option<usize>,
            _: &curator_strategies::History<'_>,
        ) -> Option<Message> {
            self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            None
        }
    }
    let spy = std::sync::Arc::new(Spy::default());
    let input: Vec<Message> = (0..1_000).map(|i| Message::user(format!("m{i}"))).collect();
    let history = curator_strategies::History::from(&input);
    let view = curator_strategies::View::full(&history).with_map(spy.clone());
    let view =
        curator_strategies::HistoryManager::curate(&SlidingWindow::new(3), view, &ctx()).unwrap();
    assert_eq!(view.to_messages().len(), 4);
    assert_eq!(spy.0.load(std::sync::atomic::Ordering::Relaxed), 4);
}
