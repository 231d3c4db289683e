//! `TokenBudget`: what fits, what is shortened, what is an error.

use curator_model::{Message, ToolCall, validate};
use curator_strategies::{
    CharEstimate, CurationContext, Error, History, HistoryManager, HistoryManagerExt, TokenBudget,
    TokenCounter, View,
};

fn tokens(messages: &[Message]) -> u64 {
    let c = CharEstimate::default();
    messages.iter().map(|m| c.count_message(m)).sum::<u64>() + c.reply_priming()
}

#[test]
fn a_system_message_over_the_budget_is_refused_unless_it_may_be_shortened() {
    let input = vec![
        Message::system(format!("RULES START {} RULES END", "x".repeat(400))),
        Message::user("task"),
    ];
    // By default a system message is sent whole: 50 tokens cannot hold it.
    let err =
        TokenBudget::new(50).curate_messages(&input, &CurationContext::default()).unwrap_err();
    let Error::BudgetTooSmall(shortfall) = &err else { panic!("{err}") };
    assert_eq!(shortfall.system, CharEstimate::default().count_message(&input[0]));
    assert!(err.to_string().contains(&format!("system messages {}", shortfall.system)), "{err}");
    // With `shorten_system`, 50 tokens: it is cut, keeping its beginning and its end.
    let shorten = CurationContext::default().with_shorten_system(true);
    let view = TokenBudget::new(50).curate_messages(&input, &shorten).unwrap();
    assert!(tokens(&view) <= 50, "{}", tokens(&view));
    assert!(view[0].text().starts_with("RULES START") && view[0].text().ends_with("RULES END"));
    assert_eq!(view[1], input[1]);
    // 15 tokens cannot hold even its note: a typed error says what does not fit.
    let err = TokenBudget::new(15).curate_messages(&input, &shorten).unwrap_err();
    assert!(
        matches!(&err, Error::BudgetTooSmall(s) if s.max_tokens == 15 && s.needed() > 15),
        "{err}"
    );
    assert!(err.to_string().starts_with("token budget of 15 tokens cannot hold"), "{err}");
    // The reserve counts against the budget too.
    let small = vec![Message::system("be brief"), Message::user("task")];
    assert!(TokenBudget::new(20).curate_messages(&small, &CurationContext::default()).is_ok());
    assert!(
        TokenBudget::new(20)
            .with_reserve(15)
            .curate_messages(&small, &CurationContext::default())
            .is_err()
    );
}

#[test]
fn with_no_system_message_the_error_names_what_does_not_fit() {
    let input = vec![Message::user("task"), Message::assistant("x".repeat(40))];
    let err = TokenBudget::new(5).curate_messages(&input, &CurationContext::default()).unwrap_err();
    assert!(!err.to_string().contains("system"), "{err}");
    assert!(err.to_string().contains("the task"), "{err}");
}

#[test]
fn the_newest_unit_is_shortened_rather_than_dropped() {
    let input = vec![
        Message::system("sys"),
        Message::user("task"),
        Message::assistant_with_calls(
            None,
            vec![ToolCall::new("a", "cat", "{}"), ToolCall::new("b", "cat", "{}")],
        ),
        Message::tool_result("a", "é".repeat(2_000)),
        Message::tool_result("b", "😀".repeat(2_000)),
    ];
    let view = TokenBudget::new(300).curate_messages(&input, &CurationContext::default()).unwrap();
    assert_eq!(view.len(), 5);
    assert!(tokens(&view) <= 300, "{} tokens", tokens(&view));
    // Each result keeps its beginning and its end, with a note of what was cut between.
    for (k, c) in [(3, "é"), (4, "😀")] {
        let text = view[k].text();
        assert!(text.starts_with(&c.repeat(3)) && text.ends_with(&c.repeat(3)), "{text}");
        assert!(text.contains("tokens cut by curator to fit the token budget"), "{text}");
    }
    validate::openai(&view).unwrap();
}

#[test]
fn an_oversized_task_is_shortened() {
    let input =
        vec![Message::system("sys"), Message::user("t".repeat(2_000)), Message::assistant("ok")];
    let view = TokenBudget::new(100).curate_messages(&input, &CurationContext::default()).unwrap();
    assert!(tokens(&view) <= 100);
    assert!(view[1].text().starts_with("ttt"));
}

#[test]
fn preserve_last_n_larger_than_the_budget_allows_still_fits() {
    let mut input = vec![Message::system("sys"), Message::user("task")];
    for i in 0..20 {
        input.push(Message::assistant(format!("answer {i} {}", "x".repeat(100))));
        input.push(Message::user(format!("question {i}")));
    }
    let ctx = CurationContext::default().with_preserve_last_n(30);
    let view = TokenBudget::new(200).curate_messages(&input, &ctx).unwrap();
    assert!(tokens(&view) <= 200);
    assert!(view.len() < 30);
}

#[test]
fn kept_units_are_the_newest_and_contiguous() {
    let input = vec![
        Message::system("sys"),
        Message::user("task"),
        Message::assistant("a"),
        Message::user("big ".repeat(200)),
        Message::assistant("b"),
        Message::user("c"),
    ];
    let view = TokenBudget::new(60).curate_messages(&input, &CurationContext::default()).unwrap();
    // The big message does not fit, so the short answer before it is not kept either.
    assert_eq!(view, [&input[..2], &input[4..]].concat());
}

#[test]
fn counts_are_cached_as_the_history_grows() {
    #[derive(Debug, Default)]
    struct Counting(std::sync::atomic::AtomicUsize);
    impl TokenCounter for Counting {
        fn cache_key(&self) -> u64 {
            7
        }
        fn count_text(&self, text: &str) -> u64 {
            self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            text.len() as u64 / 4
        }
    }
    let counter = std::sync::Arc::new(Counting::default());
    let budget = TokenBudget::new(1_000).with_counter(counter.clone());
    let mut history = History::new();
    history.push(Message::system("sys"));
    history.push(Message::user("task"));
    let mut calls_per_message = Vec::new();
    for i in 0..50 {
        history.push(Message::assistant(format!("step {i}")));
        let before = counter.0.load(std::sync::atomic::Ordering::Relaxed);
        budget.curate(View::full(&history), &CurationContext::default()).unwrap();
        calls_per_message.push(counter.0.load(std::sync::atomic::Ordering::Relaxed) - before);
    }
    // After the first call, each iteration counts only the one new message (role + text).
    assert!(calls_per_message[1..].iter().all(|&n| n == 2), "{calls_per_message:?}");
}

/// A counter that adds up the bytes it is asked to read, to see how often shortening reads
/// a long text.
#[derive(Debug, Default)]
struct Metered {
    inner: CharEstimate,
    read: std::sync::atomic::AtomicUsize,
}

impl Metered {
    fn read(&self) -> usize {
        self.read.load(std::sync::atomic::Ordering::Relaxed)
    }
    fn add(&self, n: usize) {
        self.read.fetch_add(n, std::sync::atomic::Ordering::Relaxed);
    }
}

#[derive(Debug, Clone)]
struct Meter(std::sync::Arc<Metered>);

impl TokenCounter for Meter {
    fn cache_key(&self) -> u64 {
        self.0.inner.cache_key()
    }
    fn count_text(&self, text: &str) -> u64 {
        self.0.add(text.len());
        self.0.inner.count_text(text)
    }
    // The cuts are the trait's own searches, over the counts metered above.
}

#[test]
fn shortening_a_long_text_reads_it_a_few_times_only() {
    for len in [1_000_000, 4_000_000] {
        let meter = Meter(std::sync::Arc::new(Metered::default()));
        let input = vec![Message::system("sys"), Message::user("=".repeat(len))];
        let view = TokenBudget::new(2_000)
            .with_counter(meter.clone())
            .curate_messages(&input, &CurationContext::default())
            .unwrap();
        assert!(tokens(&view) <= 2_000);
        assert!(view[1].text().starts_with("===="), "{}", &view[1].text()[..40]);
        // Linear: a handful of whole readings, not one per step of a search over the text.
        let whole_readings = meter.0.read() / len;
        assert!(whole_readings <= 6, "{len} bytes read {whole_readings} times over");
    }
}
