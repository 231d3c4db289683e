//! Summarization: when it folds, what it keeps, how often it calls the summarizer.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use curator_model::{Message, Role, ToolCall, validate};
use curator_strategies::{
    CurationContext, Error, Event, Extractive, FnSummarizer, History, HistoryManager,
    HistoryManagerExt, MemorySink, MemorySummaryStore, OnError, Summarize, Summarizer,
    SummaryStore, Threshold, TokenBudget, View,
};

/// System, task, then `steps` call/result pairs.
fn agent(steps: usize) -> Vec<Message> {
    let mut m = vec![Message::system("sys"), Message::user("Fix the parser.")];
    for i in 0..steps {
        let id = format!("c{i}");
        m.push(Message::assistant_with_calls(
            Some(format!("step {i}").into()),
            vec![ToolCall::new(&id, "bash", "{}")],
        ));
        m.push(Message::tool_result(&id, format!("output {i}")));
    }
    m
}

/// A summarizer that counts its calls.
fn counting(calls: Arc<AtomicUsize>) -> impl Summarizer {
    FnSummarizer::new("counting", 1, move |previous, messages| {
        calls.fetch_add(1, Ordering::Relaxed);
        Ok(format!(
            "{}{} messages",
            previous.map(|p| format!("{p} + ")).unwrap_or_default(),
            messages.len()
        ))
    })
}

fn ctx() -> CurationContext<'static> {
    CurationContext::default()
}

#[test]
fn below_the_threshold_the_view_is_the_input() {
    let input = agent(5);
    let summarize = Summarize::new(Extractive::default())
        .with_threshold(Threshold::Messages(10))
        .with_keep_recent(2);
    assert_eq!(summarize.curate_messages(&input, &ctx()).unwrap(), input);
    let tokens = Summarize::new(Extractive::default()).with_threshold(Threshold::Tokens(10_000));
    assert_eq!(tokens.curate_messages(&input, &ctx()).unwrap(), input);
}

#[test]
fn the_summary_follows_the_system_message_and_the_task_and_units_stay_whole() {
    let input = agent(20); // 2 + 40 messages
    let summarize = Summarize::new(counting(Arc::default()))
        .with_threshold(Threshold::Messages(10))
        .with_keep_recent(4)
        .with_ratio(0.5)
        .unwrap();
    let view = summarize.curate_messages(&input, &ctx()).unwrap();
    assert_eq!(&view[..2], &input[..2]);
    assert_eq!(
        view[2].role(),
        Role::Assistant,
        "after the task, the summary is the assistant's note"
    );
    assert!(
        view[2].text().starts_with("[Summary of the 36 earlier messages"),
        "{}",
        view[2].text()
    );
    // Chunks of 5 messages on unit boundaries: 6, 6, … so 36 of the 36 foldable messages,
    // and what follows starts on a unit boundary (an assistant message, never a result).
    assert_eq!(view[3].role(), Role::Assistant);
    assert_eq!(&view[3..], &input[38..]);
    validate::openai(&view).unwrap();
    validate::anthropic(&view).unwrap();
    // Without a pinned task, the summary opens the conversation as a user message.
    let no_task = summarize.curate_messages(&input, &ctx().with_preserve_task(false)).unwrap();
    assert_eq!(no_task[1].role(), Role::User);
    validate::anthropic(&no_task).unwrap();
}

#[test]
fn ratio_edge_values() {
    let input = agent(20);
    let with = |ratio| {
        Summarize::new(Extractive::default())
            .with_threshold(Threshold::Messages(10))
            .with_keep_recent(4)
            .with_ratio(ratio)
            .unwrap()
            .curate_messages(&input, &ctx())
            .unwrap()
    };
    assert_eq!(with(0.0), input, "a ratio of 0 never folds");
    let whole = with(1.0);
    assert!(
        whole[2].text().starts_with("[Summary of the 30 earlier messages"),
        "{}",
        whole[2].text()
    );
    assert!(matches!(
        Summarize::new(Extractive::default()).with_ratio(1.5),
        Err(Error::InvalidOption { .. })
    ));
    assert!(Summarize::new(Extractive::default()).with_ratio(f64::NAN).is_err());
    // A tiny history: nothing to fold, whatever the ratio.
    let tiny = vec![Message::system("s"), Message::user("u")];
    let summarize = Summarize::new(Extractive::default())
        .with_threshold(Threshold::Messages(0))
        .with_keep_recent(0);
    assert_eq!(summarize.curate_messages(&tiny, &ctx()).unwrap(), tiny);
}

#[test]
fn a_failing_summarizer_falls_back_or_propagates_and_is_reported() {
    let input = agent(20);
    let failing = || FnSummarizer::new("broken", 1, |_, _| Err("model unavailable".into()));
    let sink = MemorySink::default();
    let fallback = Summarize::new(failing())
        .with_threshold(Threshold::Messages(10))
        .then(TokenBudget::new(10_000));
    let view = fallback.curate_messages(&input, &ctx().with_events(&sink)).unwrap();
    assert_eq!(view, input, "the bound alone");
    assert!(
        matches!(&sink.events()[0], Event::SummaryFailed(e) if e.message.contains("model unavailable"))
    );
    let propagate = Summarize::new(failing())
        .with_threshold(Threshold::Messages(10))
        .with_on_error(OnError::Propagate);
    let err = propagate.curate_messages(&input, &ctx()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "summarizer `broken` failed: the summarizing function returned an error"
    );
    let cause = std::error::Error::source(&err).map(ToString::to_string);
    assert_eq!(cause.as_deref(), Some("model unavailable"));
}

#[test]
fn long_summaries_are_cut_and_reported() {
    let input = agent(20);
    let wordy = FnSummarizer::new("wordy", 1, |_, _| Ok("word ".repeat(1_000)));
    let sink = MemorySink::default();
    let summarize =
        Summarize::new(wordy).with_threshold(Threshold::Messages(10)).with_max_summary_chars(100);
    let view = summarize.curate_messages(&input, &ctx().with_events(&sink)).unwrap();
    let body = view[2].text().lines().skip(1).collect::<Vec<_>>().join("\n");
    assert_eq!(body.chars().count(), 100);
    assert!(
        sink.events()
            .iter()
            .any(|e| matches!(e, Event::SummaryTruncated(t) if t.original_chars == 5_000))
    );
}

/// Replays a history of about 1,000 messages as an agent loop would, curating before every
/// assistant message.
fn replay(messages: &[Message], summarize: &dyn HistoryManager) -> usize {
    let mut history = History::new();
    let mut views = 0;
    for message in messages {
        if message.role() == Role::Assistant {
            let view = summarize.curate(View::full(&history), &ctx()).unwrap();
            validate::openai(&view.messages()).unwrap();
            views += 1;
        }
        history.push(message.clone());
    }
    views
}

#[test]
fn each_fold_is_summarized_once_and_a_second_replay_calls_nothing() {
    let messages = curator_testkit::synthetic::agent_history(1_000, 3);
    let calls = Arc::new(AtomicUsize::new(0));
    let store = Arc::new(MemorySummaryStore::default());
    let build = |calls: &Arc<AtomicUsize>| {
        Summarize::new(counting(calls.clone()))
            .with_threshold(Threshold::Messages(100))
            .with_keep_recent(20)
            .with_store(store.clone())
            .then(TokenBudget::new(200_000))
    };
    let views = replay(&messages, &build(&calls));
    let folds = store.len();
    assert!(views > 300 && folds > 10, "{views} views, {folds} folds");
    assert_eq!(calls.load(Ordering::Relaxed), folds, "one summarizer call per folded chunk");
    // Same store, new strategy (as after a restart): every summary is found.
    let again = Arc::new(AtomicUsize::new(0));
    replay(&messages, &build(&again));
    assert_eq!(again.load(Ordering::Relaxed), 0);
}

#[test]
fn the_extractive_summary_attributes_user_words_and_is_bounded() {
    let messages = [
        Message::user("Please book flight UA 12."),
        Message::assistant_with_calls(
            None,
            vec![ToolCall::new("1", "book", format!("{{\"flight\": \"{}\"}}", "x".repeat(200)))],
        ),
        Message::tool_error("1", "sold out\ndetails follow"),
        Message::user("Then try UA 14."),
        Message::assistant("Booked UA 14."),
    ];
    let refs: Vec<&Message> = messages.iter().collect();
    let summary = Extractive::new(10_000).summarize(None, &refs).unwrap();
    assert!(
        summary.starts_with("User asked: Please book flight UA 12.\nUser said: Then try UA 14."),
        "{summary}"
    );
    assert!(summary.contains("Errors: sold out"), "{summary}");
    assert!(summary.contains("book({\"flight\": \"xxx"), "{summary}");
    assert!(summary.contains("…)"), "arguments are shortened: {summary}");
    let rolled =
        Extractive::new(10_000).summarize(Some("User asked: earlier things."), &refs[3..]).unwrap();
    assert!(
        rolled.starts_with("User asked: earlier things.\nUser said: Then try UA 14."),
        "{rolled}"
    );
    assert_eq!(Extractive::new(20).summarize(None, &refs).unwrap().chars().count(), 20);
    // Deterministic.
    assert_eq!(
        Extractive::default().summarize(None, &refs).unwrap(),
        Extractive::default().summarize(None, &refs).unwrap()
    );
}

#[test]
fn summaries_persist_through_any_store() {
    struct Counting(MemorySummaryStore, AtomicUsize);
    impl SummaryStore for Counting {
        fn get(&self, key: u64) -> Option<String> {
            self.1.fetch_add(1, Ordering::Relaxed);
            self.0.get(key)
        }
        fn put(&self, key: u64, summary: &str) {
            self.0.put(key, summary);
        }
    }
    let store = Arc::new(Counting(MemorySummaryStore::default(), AtomicUsize::new(0)));
    let summarize = Summarize::new(Extractive::default())
        .with_threshold(Threshold::Messages(10))
        .with_store(store.clone());
    summarize.curate_messages(&agent(20), &ctx()).unwrap();
    assert!(store.1.load(Ordering::Relaxed) > 0);
    assert!(!store.0.is_empty());
}

#[test]
fn a_redacting_pipeline_never_receives_a_summary_made_without_redaction() {
    use curator_strategies::Redactor;

    let secret = "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCD";
    let mut input = vec![Message::system("s"), Message::user("deploy")];
    for i in 0..20 {
        input.push(Message::assistant(format!("step {i}: using key {secret}")));
        input.push(Message::user(format!("ok {i}")));
    }
    let store: Arc<dyn SummaryStore> = Arc::new(MemorySummaryStore::default());
    let summarize = || {
        Summarize::new(Extractive::default())
            .with_threshold(Threshold::Messages(10))
            .with_keep_recent(4)
            .with_store(Arc::clone(&store))
    };
    // A pipeline without redaction summarizes first, into the shared store.
    let plain = summarize().curate_messages(&input, &ctx()).unwrap();
    assert!(plain.iter().any(|m| m.text().contains(secret)), "the plain summary quotes the key");
    // The redacting pipeline must not reuse that summary.
    let redacting = Redactor::new().then(summarize());
    let view = redacting.curate_messages(&input, &ctx()).unwrap();
    assert!(view.len() < input.len(), "it folded");
    for message in &view {
        assert!(!message.text().contains(secret), "secret leaked: {}", message.text());
    }
}
