//! The `HistoryManager` trait, its extension methods and composition.

use std::borrow::Cow;
use std::sync::Arc;

use crate::{CurationContext, Result, View};

/// Curates a conversation into the view sent to the provider.
///
/// A manager takes the current [`View`] (the whole history, or what earlier strategies left)
/// and returns the next one. **Contract**, which every built-in strategy keeps and tests
/// check for all inputs: it keeps the leading system messages when
/// [`preserve_system`](CurationContext::preserve_system) is set and the task when
/// [`preserve_task`](CurationContext::preserve_task) is set; it keeps tool calls and their
/// results together (see [`coherence`](crate::coherence)); it never changes the history; it is
/// deterministic; and it does not clone messages it keeps unchanged (the view holds positions).
///
/// # Order
///
/// Compositions run left to right: in `a.then(b)`, `b` curates what `a` returned. Put
/// transformations that shrink messages (truncation, clearing, redaction) before bounds that
/// count what is left (windows, turns, budgets).
///
/// # Examples
///
/// ```
/// use curator::model::Message;
/// use curator::strategies::{CurationContext, HistoryManagerExt, SlidingWindow, ToolResultTruncator};
///
/// let pipeline = ToolResultTruncator::new(1000)?.then(SlidingWindow::new(50));
/// let messages = vec![Message::system("s"), Message::user("task"), Message::assistant("ok")];
/// let view = pipeline.curate_messages(&messages, &CurationContext::default())?;
/// assert_eq!(view, messages);
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait HistoryManager: Send + Sync {
    /// Builds the next view from `view`.
    ///
    /// # Errors
    ///
    /// A strategy's own error, such as [`Error::BudgetTooSmall`](crate::Error::BudgetTooSmall).
    fn curate<'h>(&self, view: View<'h>, ctx: &CurationContext<'_>) -> Result<View<'h>>;

    /// The strategy's name, as used in configuration and events.
    fn name(&self) -> Cow<'_, str> {
        Cow::Borrowed("custom")
    }
}

/// Two managers in a row; see [`HistoryManagerExt::then`](crate::HistoryManagerExt::then).
#[derive(Clone, Debug)]
pub struct Then<A, B> {
    first: A,
    second: B,
}

impl<A, B> Then<A, B> {
    pub(crate) const fn new(first: A, second: B) -> Self {
        Self { first, second }
    }
}

impl<A: HistoryManager, B: HistoryManager> HistoryManager for Then<A, B> {
    fn curate<'h>(&self, view: View<'h>, ctx: &CurationContext<'_>) -> Result<View<'h>> {
        let view = self.first.curate(view, ctx)?;
        self.second.curate(view, ctx)
    }

    fn name(&self) -> Cow<'_, str> {
        Cow::Owned(format!("{} -> {}", self.first.name(), self.second.name()))
    }
}

/// Any number of managers in a row, for pipelines built at run time (from configuration):
/// each curates what the one before returned; an empty list passes the view through.
///
/// # Examples
///
/// ```
/// use curator::strategies::{HistoryManager, Passthrough, SlidingWindow};
///
/// let pipeline: Vec<Box<dyn HistoryManager>> = vec![Box::new(Passthrough), Box::new(SlidingWindow::new(10))];
/// assert_eq!(pipeline.name(), "passthrough -> sliding_window");
/// ```
impl HistoryManager for Vec<Box<dyn HistoryManager>> {
    fn curate<'h>(&self, mut view: View<'h>, ctx: &CurationContext<'_>) -> Result<View<'h>> {
        for manager in self {
            view = manager.curate(view, ctx)?;
        }
        Ok(view)
    }

    fn name(&self) -> Cow<'_, str> {
        if self.is_empty() {
            return Cow::Borrowed("passthrough");
        }
        Cow::Owned(self.iter().map(|m| m.name().into_owned()).collect::<Vec<_>>().join(" -> "))
    }
}

impl<T: HistoryManager + ?Sized> HistoryManager for &T {
    fn curate<'h>(&self, view: View<'h>, ctx: &CurationContext<'_>) -> Result<View<'h>> {
        (**self).curate(view, ctx)
    }

    fn name(&self) -> Cow<'_, str> {
        (**self).name()
    }
}

impl<T: HistoryManager + ?Sized> HistoryManager for Box<T> {
    fn curate<'h>(&self, view: View<'h>, ctx: &CurationContext<'_>) -> Result<View<'h>> {
        (**self).curate(view, ctx)
    }

    fn name(&self) -> Cow<'_, str> {
        (**self).name()
    }
}

impl<T: HistoryManager + ?Sized> HistoryManager for Arc<T> {
    fn curate<'h>(&self, view: View<'h>, ctx: &CurationContext<'_>) -> Result<View<'h>> {
        (**self).curate(view, ctx)
    }

    fn name(&self) -> Cow<'_, str> {
        (**self).name()
    }
}

/// A step that can be switched off at run time: `None` passes the view through.
impl<T: HistoryManager> HistoryManager for Option<T> {
    fn curate<'h>(&self, view: View<'h>, ctx: &CurationContext<'_>) -> Result<View<'h>> {
        match self {
            Some(manager) => manager.curate(view, ctx),
            None => Ok(view),
        }
    }

    fn name(&self) -> Cow<'_, str> {
        self.as_ref().map_or(Cow::Borrowed("passthrough"), HistoryManager::name)
    }
}

/// Returns the view unchanged: the identity of composition.
///
/// # Examples
///
/// ```
/// use curator::model::Message;
/// use curator::strategies::{CurationContext, HistoryManagerExt, Passthrough};
///
/// let messages = vec![Message::user("hi")];
/// assert_eq!(Passthrough.curate_messages(&messages, &CurationContext::default())?, messages);
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Passthrough;

impl HistoryManager for Passthrough {
    fn curate<'h>(&self, view: View<'h>, _ctx: &CurationContext<'_>) -> Result<View<'h>> {
        Ok(view)
    }

    fn name(&self) -> Cow<'_, str> {
        Cow::Borrowed("passthrough")
    }
}
