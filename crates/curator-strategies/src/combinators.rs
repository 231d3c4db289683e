//! `HistoryManagerExt`: the combinators and conveniences every manager gets.

use curator_model::Message;

use crate::{CurationContext, History, HistoryManager, Observed, Result, Then, View};

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

    /// Curates a plain message list and returns the view's messages (each kept message is
    /// cloned once, for the caller). Agent loops that curate every iteration keep a
    /// [`History`] instead, so that token counts and transformations are cached.
    ///
    /// # Errors
    ///
    /// As [`HistoryManager::curate`].
    fn curate_messages(
        &self,
        messages: &[Message],
        ctx: &CurationContext<'_>,
    ) -> Result<Vec<Message>> {
        let history = History::from(messages);
        Ok(self.curate(View::full(&history), ctx)?.to_messages())
    }
}

impl<T: HistoryManager> HistoryManagerExt for T {}
