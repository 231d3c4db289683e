//! `TokenBudget`: the system message plus the newest units that fit a token budget.

use std::borrow::Cow;
use std::sync::Arc;

use curator_model::{Content, Message, Role};

use crate::trim::{Take, keep_newest};
use crate::{
    CharEstimate, CurationContext, Error, HistoryManager, Result, TokenCounter, Unit, View,
};

/// The note that ends a message shortened to fit the budget.
const SHORTENED: &str = "\n[… shortened to fit the token budget]";

/// Keeps the leading system messages, the task, and the newest units whose tokens, with the
/// reply priming, fit `max_tokens - reserve` under its counter.
///
/// `reserve` holds back tokens for what the provider counts against the same window but is
/// not in the messages: the tool schemas and the reply. The kept units are contiguous (the
/// newest ones); an older unit is never kept after a newer one was dropped. When even the
/// newest unit does not fit, its tool results (or its text) are shortened to fit rather than
/// returning nothing; when the task does not fit beside the system messages, the task is
/// shortened. The budget is a hard bound: [`CurationContext::preserve_last_n`] does not
/// override it.
///
/// Token counts come from the [`History`](crate::History)'s cache, so over an already counted
/// history a call costs O(kept).
///
/// # Errors
///
/// [`Error::BudgetTooSmall`] when the system messages (and the reply priming) alone exceed
/// the budget, or when nothing is pinned and not even the newest unit fits, shortened, so
/// that the view would be empty.
///
/// # Examples
///
/// ```
/// use curator_model::Message;
/// use curator_strategies::{CharEstimate, CurationContext, HistoryManagerExt, TokenBudget, TokenCounter};
///
/// let messages = vec![
///     Message::system("You are terse."),
///     Message::user("task"),
///     Message::assistant("x".repeat(400)),
///     Message::user("and?"),
///     Message::assistant("done"),
/// ];
/// let budget = TokenBudget::new(40).with_counter(CharEstimate::default());
/// let view = budget.curate_messages(&messages, &CurationContext::default())?;
/// assert_eq!(view.len(), 4); // the 400-character answer did not fit
/// let tokens: u64 = view.iter().map(|m| CharEstimate::default().count_message(m)).sum::<u64>() + 3;
/// assert!(tokens <= 40);
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct TokenBudget {
    max_tokens: u64,
    reserve: u64,
    counter: Arc<dyn TokenCounter>,
}

impl TokenBudget {
    /// A budget of `max_tokens`, no reserve, counted with [`CharEstimate`].
    pub fn new(max_tokens: u64) -> Self {
        Self { max_tokens, reserve: 0, counter: Arc::new(CharEstimate::default()) }
    }

    /// Holds back `reserve` tokens for tool schemas and the reply.
    #[must_use]
    pub fn with_reserve(mut self, reserve: u64) -> Self {
        self.reserve = reserve;
        self
    }

    /// Counts with `counter`.
    #[must_use]
    pub fn with_counter(mut self, counter: impl TokenCounter + 'static) -> Self {
        self.counter = Arc::new(counter);
        self
    }

    /// Counts with a shared counter.
    #[must_use]
    pub fn with_shared_counter(mut self, counter: Arc<dyn TokenCounter>) -> Self {
        self.counter = counter;
        self
    }

    /// Tokens available to messages: `max_tokens - reserve`.
    pub fn available(&self) -> u64 {
        self.max_tokens.saturating_sub(self.reserve)
    }

    /// The counter.
    pub fn counter(&self) -> &dyn TokenCounter {
        &*self.counter
    }
}

impl HistoryManager for TokenBudget {
    fn curate<'h>(&self, view: View<'h>, ctx: &CurationContext<'_>) -> Result<View<'h>> {
        let counter = &*self.counter;
        let available = self.available();
        let head = view.head(ctx);
        let mut used = counter.reply_priming();
        let mut task = None;
        {
            let tally = view.tally(counter);
            for &index in head.pinned() {
                if view.structure(index).role() == Role::System {
                    used += tally.message(index);
                } else {
                    task = Some(index);
                }
            }
        }
        if used > available {
            return Err(Error::BudgetTooSmall { needed: used, available });
        }
        // The task, shortened when it does not fit beside the system messages, dropped when
        // not even that fits.
        let mut view = view;
        let mut drop_task = false;
        if let Some(index) = task {
            let tokens = view.tally(counter).message(index);
            if used + tokens <= available {
                used += tokens;
            } else if let Some(message) = shorten(&view.message(index), available - used, counter) {
                used += counter.count_message(&message);
                view = {
                    let mut edit = view.edit();
                    edit.keep(0..index).replace(index, message).keep(index + 1..view.len());
                    edit.finish()
                };
            } else {
                drop_task = true;
            }
        }
        let head = view.head(&ctx.with_preserve_task(ctx.preserve_task && !drop_task));
        let tally = view.tally(counter);
        let newest = view.units_rev(head.len()).next().map(|unit| tally.range(unit.range()));
        let mut first = true;
        let kept = keep_newest(&view, &head, false, |unit| {
            let tokens = tally.range(unit.range());
            if used + tokens <= available {
                used += tokens;
                first = false;
                Take::Keep
            } else if std::mem::replace(&mut first, false) {
                shorten_unit(&view, unit, available - used, counter)
                    .map_or(Take::Stop, Take::KeepAs)
            } else {
                Take::Stop
            }
        });
        drop(tally);
        let input_was_empty = view.is_empty();
        let kept = kept.unwrap_or_else(|| view.repaired());
        if kept.is_empty() && !input_was_empty {
            // Nothing pinned, and not even the newest unit fits shortened: an empty request
            // would be refused, so say what the budget lacks.
            let needed = used + newest.unwrap_or(0);
            return Err(Error::BudgetTooSmall { needed, available });
        }
        Ok(kept)
    }

    fn name(&self) -> Cow<'_, str> {
        Cow::Borrowed("token_budget")
    }
}

/// A copy of `message` whose text is cut so that the whole message costs at most `budget`
/// tokens, ending with a note saying so; `None` when not even the framing fits.
fn shorten(message: &Message, budget: u64, counter: &dyn TokenCounter) -> Option<Message> {
    let bare = message.clone_with_content(Some(Content::Text(String::new())));
    let framing = counter.count_message(&bare);
    let note = counter.count_text(SHORTENED);
    let room = budget.checked_sub(framing + note)?;
    let text = message.text();
    let mut keep = counter.truncate_text(&text, room).to_owned();
    keep.push_str(SHORTENED);
    let mut shortened = bare.with_content(Some(Content::Text(keep)));
    // Token counts of a text and its prefix plus a note need not add up exactly under a BPE
    // counter; shave characters until the message fits.
    while counter.count_message(&shortened) > budget {
        let text = shortened.text();
        let body = text.strip_suffix(SHORTENED).unwrap_or(&text);
        let mut chars = body.chars();
        chars.next_back()?;
        let cut = format!("{}{SHORTENED}", chars.as_str());
        shortened = shortened.with_content(Some(Content::Text(cut)));
    }
    Some(shortened)
}

/// The newest unit, shortened to fit `budget`: its tool results share what the assistant
/// message leaves; a unit without results has its one message shortened. Returns the
/// replacements (view index, message).
fn shorten_unit(
    view: &View<'_>,
    unit: Unit,
    budget: u64,
    counter: &dyn TokenCounter,
) -> Option<Vec<(usize, Message)>> {
    let results: Vec<usize> =
        unit.range().filter(|&i| view.structure(i).role() == Role::Tool).collect();
    if results.is_empty() {
        if unit.len() != 1 {
            return None;
        }
        let message = shorten(&view.message(unit.start()), budget, counter)?;
        return Some(vec![(unit.start(), message)]);
    }
    let fixed: u64 = unit
        .range()
        .filter(|&i| view.structure(i).role() != Role::Tool)
        .map(|i| counter.count_message(&view.message(i)))
        .sum();
    let share = budget.checked_sub(fixed)? / results.len() as u64;
    let mut replacements = Vec::new();
    for index in results {
        let message = view.message(index);
        if counter.count_message(&message) > share {
            replacements.push((index, shorten(&message, share, counter)?));
        }
    }
    Some(replacements)
}
