//! A view's token sums under message maps: the prefix sums corrected at the positions a map
//! names (its `unchanged_key`) equal the sum of each message's count, whatever the maps, the
//! edits and the history's growth.

use std::sync::Arc;

use curator_model::{Content, Message, Role};
use curator_strategies::{CharEstimate, History, MessageMap, View};
use proptest::prelude::*;

/// Cuts tool-result texts to `max` characters; says which it leaves, under a key or not.
#[derive(Debug)]
struct Cut {
    max: usize,
    keyed: bool,
}

impl MessageMap for Cut {
    fn map(
        &self,
        message: &Message,
        _pos: Option<usize>,
        _history: &History<'_>,
    ) -> Option<Message> {
        let text = message.text();
        (message.role() == Role::Tool && text.chars().count() > self.max).then(|| {
            let cut: String = text.chars().take(self.max).collect();
            message.clone().with_content(Some(Content::Text(cut)))
        })
    }

    fn memo_key(&self, _pos: usize) -> Option<u64> {
        Some(self.max as u64)
    }

    fn leaves_unchanged(&self, message: &Message) -> bool {
        message.role() != Role::Tool || message.text().len() <= self.max
    }

    fn unchanged_key(&self) -> Option<u64> {
        self.keyed.then_some(0x1000 + self.max as u64)
    }
}

/// Upper-cases user messages; says nothing of what it leaves.
#[derive(Debug)]
struct Shout;

impl MessageMap for Shout {
    fn map(
        &self,
        message: &Message,
        _pos: Option<usize>,
        _history: &History<'_>,
    ) -> Option<Message> {
        (message.role() == Role::User).then(|| {
            message.clone().with_content(Some(Content::Text(message.text().to_uppercase())))
        })
    }
}

fn message() -> impl Strategy<Value = Message> {
    prop_oneof![
        "[a-zß ]{0,40}".prop_map(Message::user),
        "[a-z ]{0,40}".prop_map(Message::assistant),
        ("[a-zé\n ]{0,300}").prop_map(|t| Message::tool_result("c", t)),
    ]
}

fn view_of<'h>(history: &'h History<'_>, maps: &[(usize, usize)]) -> View<'h> {
    let mut view = View::full(history);
    for &(kind, max) in maps {
        let map: Arc<dyn MessageMap> = match kind {
            0 => Arc::new(Shout),
            1 => Arc::new(Cut { max, keyed: false }),
            _ => Arc::new(Cut { max, keyed: true }),
        };
        view = view.with_map(map);
    }
    view
}

fn check(view: &View<'_>, ranges: &[(usize, usize)], limit: u64) -> Result<(), TestCaseError> {
    let counter = CharEstimate::default();
    let tally = view.tally(&counter);
    for &(a, b) in ranges {
        let (a, b) = (a % (view.len() + 1), b % (view.len() + 1));
        let range = a.min(b)..a.max(b);
        let each: u64 = range.clone().map(|i| tally.message(i)).sum();
        prop_assert_eq!(tally.range(range.clone()), each, "range {:?}", range);
        let within = tally.range_within(range.clone(), limit);
        prop_assert_eq!(
            within,
            (each <= limit).then_some(each),
            "range {:?} within {}",
            range,
            limit
        );
    }
    Ok(())
}

proptest! {
    #[test]
    fn sums_under_maps_are_the_sums_of_the_messages(
        messages in proptest::collection::vec(message(), 1..160),
        more in proptest::collection::vec(message(), 0..80),
        maps in proptest::collection::vec((0usize..4, 0usize..120), 0..4),
        ranges in proptest::collection::vec((0usize..400, 0usize..400), 1..12),
        limit in 0u64..600,
        edit in any::<bool>(),
    ) {
        let mut history = History::from(messages);
        // Once, then again after the history grew (the remembered positions extend).
        for round in 0..2 {
            let view = view_of(&history, &maps);
            check(&view, &ranges, limit)?;
            if edit && view.len() > 2 {
                // Runs apart, and a message outside the history between them.
                let mut e = view.edit();
                e.keep(0..1).insert(Message::user("a note between")).keep(2..view.len());
                check(&e.finish(), &ranges, limit)?;
            }
            if round == 0 {
                for m in more.clone() {
                    history.push(m);
                }
            }
        }
    }
}

/// Upper-cases user messages, counting its runs; memoisable.
#[derive(Debug)]
struct CountedShout(std::sync::atomic::AtomicUsize);

impl MessageMap for CountedShout {
    fn map(&self, message: &Message, pos: Option<usize>, history: &History<'_>) -> Option<Message> {
        self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Shout.map(message, pos, history)
    }

    fn memo_key(&self, _pos: usize) -> Option<u64> {
        Some(7)
    }
}

/// A chain one memoisable map longer than a chain already read runs only its last map
/// (a compaction cuts messages the redaction before it already read), and reads what the
/// maps applied one after the other make, by message and by token count.
#[test]
fn a_longer_chain_runs_only_the_maps_after_the_memoised_ones() {
    let messages: Vec<Message> = (0..40)
        .map(|n| match n % 3 {
            0 => Message::user(format!("question {n}")),
            1 => Message::assistant(format!("answer {n}")),
            _ => Message::tool_result("c", format!("result {n} ").repeat(10)),
        })
        .collect();
    let history = History::from(messages.clone());
    let shout = Arc::new(CountedShout(std::sync::atomic::AtomicUsize::new(0)));
    let runs = || shout.0.load(std::sync::atomic::Ordering::SeqCst);
    let first = View::full(&history).with_map(Arc::clone(&shout) as Arc<dyn MessageMap>);
    let shouted = first.to_messages();
    assert_eq!(runs(), messages.len(), "once per message");
    let cut: Arc<dyn MessageMap> = Arc::new(Cut { max: 20, keyed: false });
    let long = View::full(&history)
        .with_map(Arc::clone(&shout) as Arc<dyn MessageMap>)
        .with_map(Arc::clone(&cut));
    let counted = long.tokens(&CharEstimate::default());
    let read = long.to_messages();
    assert_eq!(runs(), messages.len(), "the longer chain reads the shorter one's memo");
    let expected: Vec<Message> =
        shouted.iter().map(|m| cut.map(m, None, &history).unwrap_or_else(|| m.clone())).collect();
    assert_eq!(read, expected);
    let view_of_expected = History::from(expected);
    assert_eq!(counted, View::full(&view_of_expected).tokens(&CharEstimate::default()));
}
