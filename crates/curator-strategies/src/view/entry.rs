//! The messages a view hands out: borrowed from the history, or shared when transformed.

use std::ops::Deref;
use std::sync::Arc;

use curator_model::Message;

/// A message of a view, borrowed from the history or shared when transformed.
///
/// # Examples
///
/// ```
/// use curator::model::Message;
/// use curator::strategies::{History, View};
///
/// let messages = vec![Message::user("hi")];
/// let history = History::from(&messages);
/// let view = View::full(&history);
/// assert!(view.message(0).is_borrowed());
/// ```
#[derive(Clone, Debug)]
pub enum MessageRef<'h> {
    /// The history's own message.
    Borrowed(&'h Message),
    /// A transformed copy.
    Shared(Arc<Message>),
}

impl Deref for MessageRef<'_> {
    type Target = Message;

    fn deref(&self) -> &Message {
        match self {
            MessageRef::Borrowed(m) => m,
            MessageRef::Shared(m) => m,
        }
    }
}

impl std::borrow::Borrow<Message> for MessageRef<'_> {
    fn borrow(&self) -> &Message {
        self
    }
}

impl AsRef<Message> for MessageRef<'_> {
    fn as_ref(&self) -> &Message {
        self
    }
}

impl PartialEq<Message> for MessageRef<'_> {
    fn eq(&self, other: &Message) -> bool {
        **self == *other
    }
}

impl MessageRef<'_> {
    /// Whether this is the history's own message, unchanged.
    pub fn is_borrowed(&self) -> bool {
        matches!(self, MessageRef::Borrowed(_))
    }
}

/// One message of a view with its history position.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ViewEntry<'h> {
    /// Position in the history, or `None` for a message that is not in it (a summary).
    pub pos: Option<usize>,
    /// The message as the view shows it.
    pub message: MessageRef<'h>,
}
