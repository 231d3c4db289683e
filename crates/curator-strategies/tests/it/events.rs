//! Observability: events through a sink, from any manager.

use curator_model::Message;
use curator_strategies::{
    CharEstimate, CurationContext, Event, EventSink, HistoryManagerExt, MemorySink, Observed,
    SlidingWindow, TokenBudget,
};

#[test]
fn observed_reports_counts_tokens_and_names() {
    let sink = MemorySink::default();
    let messages: Vec<Message> = std::iter::once(Message::system("s"))
        .chain((0..10).map(|i| Message::user(format!("message {i}"))))
        .collect();
    let manager = Observed::new(SlidingWindow::new(3).then(TokenBudget::new(1_000)))
        .with_counter(CharEstimate::default());
    let ctx = CurationContext::default().with_prompt_name("agent").with_events(&sink);
    let view = manager.curate_messages(&messages, &ctx).unwrap();
    let events = sink.events();
    assert_eq!(events.len(), 1);
    let Event::HistoryCurated(e) = &events[0] else { panic!("unexpected event") };
    assert_eq!(e.prompt_name.as_deref(), Some("agent"));
    assert_eq!(e.strategy, "sliding_window -> token_budget");
    assert_eq!((e.original_count, e.curated_count), (11, view.len()));
    assert!(e.original_tokens.unwrap() > e.curated_tokens.unwrap());
    // Events serialise for logs and traces.
    let json = serde_json::to_value(&events[0]).unwrap();
    assert_eq!(json["event"], "history_curated");
}

#[test]
fn an_own_sink_wins_and_closures_are_sinks() {
    let seen = std::sync::Arc::new(std::sync::Mutex::new(0));
    let counter = seen.clone();
    let sink: std::sync::Arc<dyn EventSink> =
        std::sync::Arc::new(move |_: &Event| *counter.lock().unwrap() += 1);
    let context_sink = MemorySink::default();
    let manager = SlidingWindow::new(1).observed().with_sink(sink);
    manager
        .curate_messages(
            &[Message::user("a")],
            &CurationContext::default().with_events(&context_sink),
        )
        .unwrap();
    assert_eq!(*seen.lock().unwrap(), 1);
    assert!(context_sink.events().is_empty());
}
