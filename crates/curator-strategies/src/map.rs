//! Per-message transformations that a view applies lazily.

use std::fmt;

use curator_model::Message;

use crate::History;

/// A pure, per-message transformation of a [`View`](crate::View), applied lazily: only to
/// the messages that are still in the view when they are read, and (when it has a
/// [`memo_key`](MessageMap::memo_key)) at most once per history position.
///
/// Transforming strategies such as [`ToolResultTruncator`](crate::ToolResultTruncator) and
/// [`Redactor`](crate::Redactor) are maps, so a truncation followed by a token budget costs
/// what the budget keeps, not what the history holds.
///
/// A map changes content only: it must keep the role, the tool calls' ids and the id of the
/// answered call, so that coherence can be decided without running it.
///
/// # Examples
///
/// ```
/// use curator::model::{Content, Message};
/// use curator::strategies::{History, MessageMap, View};
///
/// #[derive(Debug)]
/// struct Shout;
/// impl MessageMap for Shout {
///     fn map(&self, message: &Message, _pos: Option<usize>, _history: &History<'_>) -> Option<Message> {
///         let loud = message.text().to_uppercase();
///         Some(message.clone().with_content(Some(Content::Text(loud))))
///     }
/// }
///
/// let messages = vec![Message::user("hi")];
/// let history = History::from(&messages);
/// let view = View::full(&history).with_map(std::sync::Arc::new(Shout));
/// assert_eq!(view.to_messages()[0].text(), "HI");
/// ```
pub trait MessageMap: Send + Sync + fmt::Debug {
    /// Transforms one message; `None` leaves it unchanged. `pos` is the message's position
    /// in `history`, or `None` for a message that is not in the history (a summary).
    fn map(&self, message: &Message, pos: Option<usize>, history: &History<'_>) -> Option<Message>;

    /// A key for the result at history position `pos`, such that two maps giving equal keys
    /// give equal results for equal input there, so that results can be memoised per position
    /// across curate calls; `None` (the default) never memoises.
    fn memo_key(&self, pos: usize) -> Option<u64> {
        let _ = pos;
        None
    }

    /// Whether the map surely leaves `message` (a history message) unchanged, told without
    /// transforming it (by its role or its length, say): views then read its token count
    /// from the history's cache instead of the memo. `false` (the default) means "maybe not";
    /// answering `true` for a message the map would change is a bug.
    ///
    /// # Examples
    ///
    /// A map that changes only user messages says so, and views skip it for the others:
    ///
    /// ```
    /// use curator::model::{Content, Message, Role};
    /// use curator::strategies::{History, MessageMap};
    ///
    /// #[derive(Debug)]
    /// struct ShoutAtUsers;
    /// impl MessageMap for ShoutAtUsers {
    ///     fn map(&self, message: &Message, _pos: Option<usize>, _history: &History<'_>) -> Option<Message> {
    ///         (message.role() == Role::User)
    ///             .then(|| message.clone().with_content(Some(Content::Text(message.text().to_uppercase()))))
    ///     }
    ///     fn leaves_unchanged(&self, message: &Message) -> bool {
    ///         message.role() != Role::User
    ///     }
    /// }
    ///
    /// assert!(ShoutAtUsers.leaves_unchanged(&Message::assistant("hi")));
    /// assert!(!ShoutAtUsers.leaves_unchanged(&Message::user("hi")));
    /// ```
    fn leaves_unchanged(&self, message: &Message) -> bool {
        let _ = message;
        false
    }

    /// A key for the map's [`leaves_unchanged`](MessageMap::leaves_unchanged) answers, such
    /// that two maps giving equal keys answer alike for every message. A history then asks
    /// once per message and remembers the positions the map may change, and a view's token
    /// sums skip the others by binary search instead of asking message by message. `None`
    /// (the default) asks on each read.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::model::{Message, Role};
    /// use curator::strategies::{History, MessageMap};
    ///
    /// #[derive(Debug)]
    /// struct DropUserText;
    /// impl MessageMap for DropUserText {
    ///     fn map(&self, message: &Message, _pos: Option<usize>, _history: &History<'_>) -> Option<Message> {
    ///         (message.role() == Role::User).then(|| message.clone().with_content(None))
    ///     }
    ///     fn leaves_unchanged(&self, message: &Message) -> bool {
    ///         message.role() != Role::User
    ///     }
    ///     // Its answers depend on nothing but the message: one key for every instance.
    ///     fn unchanged_key(&self) -> Option<u64> {
    ///         Some(0x6472_6f70)
    ///     }
    /// }
    ///
    /// assert_eq!(DropUserText.unchanged_key(), Some(0x6472_6f70));
    /// ```
    fn unchanged_key(&self) -> Option<u64> {
        None
    }

    /// Whether the map may change system messages: `false` by default, so that curation
    /// refuses a view whose system message a map edited ([`Error::Lost`](crate::Error::Lost),
    /// "edited the system message"), as it refuses a replaced one. Redaction says `true`: a
    /// secret in a system prompt is redacted rather than sent.
    fn edits_system(&self) -> bool {
        false
    }
}

/// Combines memo keys into the key of a chain (FNV-1a style mixing, stable across runs).
pub(crate) fn chain_key(previous: Option<u64>, next: Option<u64>) -> Option<u64> {
    let (previous, next) = (previous?, next?);
    let mut h = previous ^ 0xcbf2_9ce4_8422_2325;
    for byte in next.to_le_bytes() {
        h ^= u64::from(byte);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    Some(h)
}

/// A stable 64-bit hash of byte strings (FNV-1a, each part followed by a byte no UTF-8 text
/// holds), for memo keys derived from options: the same on every platform, in every process
/// and build (the standard hasher promises neither), so summaries memoised under it are
/// found again by the next process.
///
/// # Examples
///
/// ```
/// use curator::strategies::stable_hash;
///
/// assert_eq!(stable_hash(&[b"a", b"bc"]), stable_hash(&[b"a", b"bc"]));
/// assert_ne!(stable_hash(&[b"a", b"bc"]), stable_hash(&[b"ab", b"c"]));
/// ```
pub fn stable_hash(parts: &[&[u8]]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for byte in part.iter().chain(&[0xff]) {
            h ^= u64::from(*byte);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}
