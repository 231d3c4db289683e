//! `TokenBudget`: the system message plus the newest units that fit a token budget.

use std::borrow::Cow;
use std::sync::Arc;

use curator_model::{Content, Message, Role};

use crate::trim::{Take, keep_newest};
use crate::view::{Item, Unit};
use crate::{CharEstimate, CurationContext, Error, HistoryManager, Result, TokenCounter, View};

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
/// let tokens: usize = view.iter().map(|m| CharEstimate::default().count_message(m)).sum::<usize>() + 3;
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
        let counts = view.history().counts(counter);
        let pinned = view.pinned(ctx.preserve_system, ctx.preserve_task);
        let mut used = counter.reply_priming() as u64;
        let mut task = None;
        for &slot in &pinned.slots {
            if view.structure(slot).role() == Role::System {
                used += view.slot_tokens(slot, counter, &counts);
            } else {
                task = Some(slot);
            }
        }
        if used > available {
            return Err(Error::BudgetTooSmall { needed: used, available });
        }
        // The task, shortened when it does not fit beside the system messages, dropped when
        // not even that fits.
        let mut view = view;
        let mut drop_task = false;
        if let Some(slot) = task {
            let tokens = view.slot_tokens(slot, counter, &counts);
            if used + tokens <= available {
                used += tokens;
            } else if let Some(message) = shorten(&view.message(slot), available - used, counter) {
                used += counter.count_message(&message) as u64;
                view = view.replace_slot(slot, message);
            } else {
                drop_task = true;
            }
        }
        let mut pinned = view.pinned(ctx.preserve_system, ctx.preserve_task && !drop_task);
        if drop_task {
            pinned.slots.retain(|s| view.structure(*s).role() == Role::System);
        }
        let used = std::cell::Cell::new(used);
        let mut first = true;
        let newest = view.units_rev(pinned.head_len).next().map(|unit| {
            view.between(unit.first, unit.last)
                .map(|s| view.slot_tokens(s, counter, &counts))
                .sum::<u64>()
        });
        let input_was_empty = view.is_empty();
        let kept = keep_newest(
            view,
            &pinned,
            false,
            |view, unit| {
                let tokens: u64 = view
                    .between(unit.first, unit.last)
                    .map(|s| view.slot_tokens(s, counter, &counts))
                    .sum();
                if used.get() + tokens <= available {
                    used.set(used.get() + tokens);
                    first = false;
                    Take::Keep
                } else if std::mem::replace(&mut first, false) {
                    shorten_unit(view, unit, available - used.get(), counter)
                        .map_or(Take::Stop, Take::KeepAs)
                } else {
                    Take::Stop
                }
            },
            // Every unit fit, and the head is pinned (counted above): the whole view fits.
            |_| true,
        );
        if kept.is_empty() && !input_was_empty {
            // Nothing pinned, and not even the newest unit fits shortened: an empty request
            // would be refused, so say what the budget lacks.
            let needed = used.get() + newest.unwrap_or(0);
            return Err(Error::BudgetTooSmall { needed, available });
        }
        Ok(kept)
    }

    fn name(&self) -> Cow<'_, str> {
        Cow::Borrowed("truncate_tokens")
    }
}

/// A copy of `message` whose text is cut so that the whole message costs at most `budget`
/// tokens, ending with a note saying so; `None` when not even the framing fits.
fn shorten(message: &Message, budget: u64, counter: &dyn TokenCounter) -> Option<Message> {
    let bare = message.clone_with_content(Some(Content::Text(String::new())));
    let framing = counter.count_message(&bare) as u64;
    let note = counter.count_text(SHORTENED) as u64;
    let room = usize::try_from(budget.checked_sub(framing + note)?).unwrap_or(usize::MAX);
    let text = message.text();
    let mut keep = counter.truncate_text(&text, room).to_owned();
    keep.push_str(SHORTENED);
    let mut shortened = bare.with_content(Some(Content::Text(keep)));
    // Token counts of a text and its prefix plus a note need not add up exactly under a BPE
    // counter; shave characters until the message fits.
    while counter.count_message(&shortened) as u64 > budget {
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
/// message leaves; a unit without results has its one message shortened.
fn shorten_unit(
    view: &View<'_>,
    unit: Unit,
    budget: u64,
    counter: &dyn TokenCounter,
) -> Option<Vec<Item>> {
    let slots: Vec<_> = view.between(unit.first, unit.last).collect();
    let results: Vec<_> =
        slots.iter().filter(|s| view.structure(**s).role() == Role::Tool).copied().collect();
    if results.is_empty() {
        let [only] = slots.as_slice() else { return None };
        let message = shorten(&view.message(*only), budget, counter)?;
        return Some(vec![view.owned_item(*only, message)]);
    }
    let fixed: u64 = slots
        .iter()
        .filter(|s| view.structure(**s).role() != Role::Tool)
        .map(|s| counter.count_message(&view.message(*s)) as u64)
        .sum();
    let share = budget.checked_sub(fixed)? / results.len() as u64;
    let mut items = Vec::with_capacity(slots.len());
    for slot in slots {
        let message = view.message(slot);
        if view.structure(slot).role() != Role::Tool
            || counter.count_message(&message) as u64 <= share
        {
            items.push(view.slot_item(slot));
        } else {
            items.push(view.owned_item(slot, shorten(&message, share, counter)?));
        }
    }
    Some(items)
}
