//! `HistoryManagerExt`: the combinators and conveniences every manager gets.

use curator_model::Message;

use crate::{CurationContext, Error, History, HistoryManager, Observed, Result, Then, View, guard};

/// Combinators and conveniences for every [`HistoryManager`].
pub trait HistoryManagerExt: HistoryManager + Sized {
    /// Runs `next` on what `self` returns.
    fn then<B: HistoryManager>(self, next: B) -> Then<Self, B> {
        Then::new(self, next)
    }

    /// Wraps the manager in [`Observed`], which reports each curate call.
    fn observed(self) -> Observed<Self> {
        Observed::new(self)
    }

    /// Curates the whole of `history` and checks what curation never loses: the view keeps
    /// every system message unchanged and in place (unless
    /// [`shorten_system`](CurationContext::shorten_system)), the task and the newest unit
    /// ([`View::present`], shortened at most), and sends no call left unanswered. This is
    /// the entry point of a pipeline; [`curate`](HistoryManager::curate) is the step that
    /// pipelines compose.
    ///
    /// # Errors
    ///
    /// As [`HistoryManager::curate`], and [`Error::Lost`](crate::Error::Lost) when the view
    /// lost one of them (a custom strategy's defect: the built-in ones keep them or return
    /// [`BudgetTooSmall`](crate::Error::BudgetTooSmall)).
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::model::{Message, ToolCall};
    /// use curator::strategies::{CurationContext, History, HistoryManagerExt, ToolResultTruncator};
    ///
    /// let history = History::from(vec![
    ///     Message::user("go"),
    ///     Message::assistant_with_calls(None, vec![ToolCall::new("c1", "ls", "{}")]),
    /// ]);
    /// // The call has no result yet: it is not sent, whatever the strategy.
    /// let view = ToolResultTruncator::new(100)?.curate_history(&history, &CurationContext::default())?;
    /// assert_eq!(view.len(), 1);
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn curate_history<'h>(
        &self,
        history: &'h History<'h>,
        ctx: &CurationContext<'_>,
    ) -> Result<View<'h>> {
        let view = self.curate(View::full(history), ctx)?;
        guard::check(history, view, ctx).map_err(|loss| Error::Lost {
            strategy: self.name().into_owned(),
            what: loss.what,
            position: loss.position,
        })
    }

    /// Curates a plain message list and returns the view's messages (each kept message is
    /// cloned once, for the caller). Agent loops that curate every iteration keep a
    /// [`History`] instead, so that token counts and transformations are cached.
    ///
    /// # Errors
    ///
    /// As [`curate_history`](HistoryManagerExt::curate_history).
    fn curate_messages(
        &self,
        messages: &[Message],
        ctx: &CurationContext<'_>,
    ) -> Result<Vec<Message>> {
        let history = History::from(messages);
        Ok(self.curate_history(&history, ctx)?.to_messages())
    }
}

impl<T: HistoryManager> HistoryManagerExt for T {}
