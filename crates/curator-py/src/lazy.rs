//! A token budget that reads only what it may keep.
//!
//! A lone [`TokenBudget`](curator::strategies::TokenBudget) keeps the pinned head (every
//! system message and the task) and the newest units that fit, contiguous; nothing older than
//! the first unit that does not fit can be kept. So a list of Python messages need not be
//! read whole: [`subset`] reads every message's role (to find the system messages and the
//! task), then whole messages newest first, only until what it read passes the budget on its
//! own and it stands on a unit's first message. Curating that subset gives the view curating
//! the whole list gives (the property test below checks it on generated histories), at a
//! cost that grows with what is kept, not with the history.
//!
//! What is not read is not checked either: a malformed message the budget leaves out raises
//! nothing, as with LangChain's `trim_messages`.

use curator::model::{Message, Role};
use curator::strategies::{
    CurationContext, History, HistoryManager, HistoryManagerExt, StrategyConfig, TokenCounter,
    Tokenizer, View,
};

use crate::error::Failure;

/// A list of messages that can tell a message's role without reading the message.
pub(crate) trait Lazy {
    /// Number of messages.
    fn len(&self) -> usize;
    /// The role of message `index`, read cheaply.
    ///
    /// # Errors
    ///
    /// When the message has no role curator knows.
    fn role(&mut self, index: usize) -> Result<Role, Failure>;
    /// Message `index`, read whole.
    ///
    /// # Errors
    ///
    /// When the message cannot be read.
    fn message(&mut self, index: usize) -> Result<Message, Failure>;
}

/// Units at the end of a list read before counting: the most the budget's present spans.
const PRESENT_UNITS: usize = 3;

/// The budget of a pipeline a lazy read serves, a lone token budget: its `max_tokens` and
/// tokenizer; else `None`.
pub(crate) fn budget_of(config: &StrategyConfig) -> Option<(u64, Tokenizer)> {
    match config {
        StrategyConfig::TokenBudget { max_tokens, tokenizer, .. } => {
            Some((*max_tokens, *tokenizer))
        }
        _ => None,
    }
}

/// The messages a lone token budget of `max_tokens`, counting with `counter`, may keep, with
/// their positions in the list, in order.
///
/// # Errors
///
/// The first message that cannot be read (its role, or whole when it is read).
pub(crate) fn subset(
    list: &mut impl Lazy,
    max_tokens: u64,
    counter: &dyn TokenCounter,
) -> Result<Vec<(usize, Message)>, Failure> {
    subset_counted(list, max_tokens, &mut |_, message| counter.count_message(message))
}

/// [`subset`] with each message's tokens given by `count` (its position and the message).
///
/// # Errors
///
/// As [`subset`].
pub(crate) fn subset_counted(
    list: &mut impl Lazy,
    max_tokens: u64,
    count: &mut dyn FnMut(usize, &Message) -> u64,
) -> Result<Vec<(usize, Message)>, Failure> {
    let n = list.len();
    let mut roles = Vec::with_capacity(n);
    for index in 0..n {
        roles.push(list.role(index)?);
    }
    // The head: everything up to the task (the first user message before any assistant
    // message), or up to the first assistant message when there is no task.
    let mut head_end = n;
    for (index, role) in roles.iter().enumerate() {
        match role {
            Role::User => {
                head_end = index + 1;
                break;
            }
            Role::Assistant => {
                head_end = index;
                break;
            }
            _ => {}
        }
    }
    // Newest first, until the units read past the present pass the budget on their own and
    // the oldest message read begins a unit (a user or system message closes every call
    // before it; an assistant message not right after another does too, and is not joined
    // to it). The present, which the budget keeps (shortened if need be) whatever it costs,
    // is at most three units: an assistant message of calls still pending at the end, the
    // newest unit, and the results a user message right after them refers to.
    let mut suffix = Vec::new();
    let mut tokens = 0_u64;
    let mut present_units = PRESENT_UNITS;
    let mut start = n;
    while start > head_end {
        start -= 1;
        let message = list.message(start)?;
        if present_units == 0 {
            tokens = tokens.saturating_add(count(start, &message));
        }
        suffix.push((start, message));
        let begins_unit = match roles[start] {
            Role::User | Role::System => true,
            Role::Assistant => start == 0 || roles[start - 1] != Role::Assistant,
            Role::Tool => false,
        };
        if begins_unit {
            if present_units > 0 {
                present_units -= 1;
            } else if tokens > max_tokens {
                break;
            }
        }
    }
    let mut out = Vec::with_capacity(head_end + suffix.len() + 4);
    for index in 0..head_end.min(start) {
        out.push((index, list.message(index)?));
    }
    // The system messages between the head and what was read are pinned too.
    for (index, role) in roles.iter().enumerate().take(start).skip(head_end) {
        if *role == Role::System {
            out.push((index, list.message(index)?));
        }
    }
    out.extend(suffix.into_iter().rev());
    Ok(out)
}

/// One message of a curated view: a position of the list kept unchanged, a message of the
/// list a strategy changed (shortened, or without calls whose results never came), or a
/// message a strategy made.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Kept {
    /// A message of the list, kept unchanged, by position.
    Position(usize),
    /// A message of the list, by position, as a strategy changed it.
    Changed(usize, Message),
    /// A message a strategy made (a note).
    Message(Message),
}

impl Kept {
    /// A view's `message`, read from history position `pos` (when it was), of a list whose
    /// history position `p` is the list's `position(p)`.
    pub(crate) fn of(
        pos: Option<usize>,
        message: &curator::strategies::MessageRef<'_>,
        position: impl Fn(usize) -> Option<usize>,
    ) -> Kept {
        match pos.and_then(position) {
            Some(position) if message.is_borrowed() => Kept::Position(position),
            Some(position) => Kept::Changed(position, Message::clone(message)),
            None => Kept::Message(Message::clone(message)),
        }
    }
}

/// Curates `messages` (a subset of a list, with their positions in it) with `pipeline`, and
/// says for each message of the view where it comes from.
///
/// # Errors
///
/// What the pipeline raises.
pub(crate) fn curate_subset(
    messages: Vec<(usize, Message)>,
    pipeline: &dyn HistoryManager,
) -> Result<Curated, Failure> {
    curate_subset_with(messages, |history| {
        Ok(pipeline.curate_history(history, &CurationContext::default())?)
    })
}

/// [`curate_subset`] with the view made by `curate`, which is given the subset's history.
///
/// # Errors
///
/// What `curate` returns.
pub(crate) fn curate_subset_with(
    messages: Vec<(usize, Message)>,
    curate: impl for<'h> FnOnce(&'h History<'static>) -> Result<View<'h>, Failure>,
) -> Result<Curated, Failure> {
    let (positions, messages): (Vec<usize>, Vec<Message>) = messages.into_iter().unzip();
    let history = History::from(messages);
    let view = curate(&history)?;
    let kept = view
        .iter()
        .map(|entry| Kept::of(entry.pos, &entry.message, |p| positions.get(p).copied()))
        .collect();
    let unsendable =
        history.unsendable().into_iter().filter_map(|p| positions.get(p).copied()).collect();
    Ok(Curated { kept, unsendable })
}

/// A curated view, and what of the input no view could send.
#[derive(Debug)]
pub(crate) struct Curated {
    /// Each message of the view.
    pub(crate) kept: Vec<Kept>,
    /// Positions of the messages read that no provider takes (see
    /// [`History::unsendable`]), left out of every view.
    pub(crate) unsendable: Vec<usize>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use curator::strategies::CharEstimate;
    use proptest::prelude::*;

    /// A list held in memory, counting how many messages were read whole.
    struct Listed {
        messages: Vec<Message>,
        read: usize,
    }

    impl Lazy for Listed {
        fn len(&self) -> usize {
            self.messages.len()
        }
        fn role(&mut self, index: usize) -> Result<Role, Failure> {
            Ok(self.messages[index].role())
        }
        fn message(&mut self, index: usize) -> Result<Message, Failure> {
            self.read += 1;
            Ok(self.messages[index].clone())
        }
    }

    fn whole(messages: &[Message], pipeline: &dyn HistoryManager) -> Result<Curated, Failure> {
        curate_subset(messages.iter().cloned().enumerate().collect(), pipeline)
    }

    fn lazily(
        messages: &[Message],
        max_tokens: u64,
        tokenizer: Tokenizer,
        pipeline: &dyn HistoryManager,
    ) -> (Result<Curated, Failure>, usize) {
        let mut list = Listed { messages: messages.to_vec(), read: 0 };
        let counter = tokenizer.counter().unwrap();
        let subset = subset(&mut list, max_tokens, &*counter).unwrap();
        (curate_subset(subset, pipeline), list.read)
    }

    fn budget(max_tokens: u64, tokenizer: Tokenizer) -> Box<dyn HistoryManager> {
        budget_of_kind(max_tokens, tokenizer, true)
    }

    fn budget_of_kind(
        max_tokens: u64,
        tokenizer: Tokenizer,
        shorten: bool,
    ) -> Box<dyn HistoryManager> {
        StrategyConfig::TokenBudget { max_tokens, reserve: 0, tokenizer, head_share: 0.5, shorten }
            .build()
            .unwrap()
    }

    #[track_caller]
    fn same(whole: Result<Curated, Failure>, lazy: Result<Curated, Failure>) {
        match (whole, lazy) {
            (Ok(whole), Ok(lazy)) => assert_eq!(whole.kept, lazy.kept),
            (Err(whole), Err(lazy)) => assert_eq!(whole.kind(), lazy.kind()),
            (whole, lazy) => panic!("whole {whole:?}, lazily {lazy:?}"),
        }
    }

    #[test]
    fn a_long_history_is_read_only_as_far_as_the_budget_reaches() {
        let messages = curator_testkit::synthetic::agent_history(10_000, 42);
        let pipeline = budget(4_000, Tokenizer::Estimate);
        let (lazy, read) = lazily(&messages, 4_000, Tokenizer::Estimate, &*pipeline);
        same(whole(&messages, &*pipeline), lazy);
        assert!(read < 200, "read {read} of 10,000 messages");
        assert!(CharEstimate::default().count_message(&messages[0]) > 0);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// Curating what `subset` reads gives the view curating the whole list gives: the
        /// same messages kept unchanged (by position), the same ones changed, the same
        /// error.
        #[test]
        fn the_subset_curates_like_the_whole(
            messages in curator_testkit::arb::history_with(40, true),
            max_tokens in 20_u64..3_000,
            exact in any::<bool>(),
            shorten in any::<bool>(),
        ) {
            let tokenizer = if exact { Tokenizer::O200k } else { Tokenizer::Estimate };
            let pipeline = budget_of_kind(max_tokens, tokenizer, shorten);
            let (lazy, _) = lazily(&messages, max_tokens, tokenizer, &*pipeline);
            same(whole(&messages, &*pipeline), lazy);
        }

        #[test]
        fn synthetic_agent_histories_curate_alike(
            len in 2_usize..400,
            seed in any::<u64>(),
            max_tokens in 50_u64..6_000,
            late_system in proptest::option::of(2_usize..400),
        ) {
            let mut messages = curator_testkit::synthetic::agent_history(len, seed);
            // A system message late in the conversation, which the budget keeps wherever it
            // stands (between two messages, so no call is parted from its result).
            if let Some(at) = late_system {
                let at = at.min(messages.len());
                if messages.get(at).is_none_or(|m| m.role() != Role::Tool) {
                    messages.insert(at, Message::system("From now on, answer in French."));
                }
            }
            let pipeline = budget(max_tokens, Tokenizer::Estimate);
            let (lazy, _) = lazily(&messages, max_tokens, Tokenizer::Estimate, &*pipeline);
            same(whole(&messages, &*pipeline), lazy);
        }
    }
}
