//! A provider request as a prompt cache reads it: blocks in order, each with its tokens, and
//! the cache breakpoints it carries.

use std::borrow::Borrow;
use std::hash::{DefaultHasher, Hash, Hasher};

use curator_model::{Content, Message, Role};

use crate::TokenCounter;

/// One stretch of a request's prefix: the tool definitions, or one message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Block {
    /// What the block holds, as a hash of its exact content: equal keys are equal blocks.
    pub key: u64,
    /// Its tokens.
    pub tokens: u64,
    /// How many of the provider's content blocks it is (Anthropic's lookback counts them):
    /// one per text, image or thinking part and one per tool call, at least one.
    pub parts: u32,
}

impl Block {
    /// The block of one message, counted by `counter`.
    pub fn of_message(message: &Message, counter: &dyn TokenCounter) -> Block {
        let mut hasher = DefaultHasher::new();
        // Every field a provider reads; the serialised form covers them all, byte for byte.
        match serde_json::to_vec(message) {
            Ok(bytes) => bytes.hash(&mut hasher),
            Err(_) => format!("{message:?}").hash(&mut hasher),
        }
        let content_parts = match message.content() {
            None => 0,
            Some(Content::Text(text)) => u32::from(!text.is_empty()),
            Some(Content::Parts(parts)) => parts.len() as u32,
        };
        let parts = (content_parts + message.tool_calls().len() as u32).max(1);
        Block { key: hasher.finish(), tokens: counter.count_message(message), parts }
    }

    /// The block of the tool definitions sent with a request (`tools`, as sent), counted by
    /// `counter` as their compact JSON text.
    pub fn of_tools(tools: &serde_json::Value, counter: &dyn TokenCounter) -> Block {
        let text = tools.to_string();
        let mut hasher = DefaultHasher::new();
        ("tools", &text).hash(&mut hasher);
        let parts = tools.as_array().map_or(1, |a| a.len().max(1) as u32);
        Block { key: hasher.finish(), tokens: counter.count_text(&text), parts }
    }
}

/// The blocks of a request up to one of them: a hash of their keys in order, their tokens
/// and their content parts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Prefix {
    pub(crate) hash: u64,
    pub(crate) tokens: u64,
    pub(crate) parts: u64,
}

impl Prefix {
    /// The prefix that adds `block` to this one.
    fn then(self, block: Block) -> Prefix {
        let mut hasher = crate::fx::FxHasher::default();
        (self.hash, block.key).hash(&mut hasher);
        Prefix {
            hash: hasher.finish(),
            tokens: self.tokens + block.tokens,
            parts: self.parts + u64::from(block.parts),
        }
    }

    /// The prefix of no block.
    const START: Prefix = Prefix { hash: 0x9e37_79b9_7f4a_7c15, tokens: 0, parts: 0 };
}

/// Where a request ends: how many blocks it has and what they hash to, so that a later
/// request of the conversation can tell whether it extends it without keeping it.
///
/// # Examples
///
/// ```
/// use curator::model::Message;
/// use curator::strategies::CharEstimate;
/// use curator::strategies::bill::Request;
///
/// let counter = CharEstimate::default();
/// let first = Request::from_messages(&[Message::user("Hi")], &counter);
/// let second = Request::from_messages(&[Message::user("Hi"), Message::assistant("Hello")], &counter);
/// assert!(second.extends(first.end()));
/// assert!(!first.extends(second.end()));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RequestEnd {
    len: usize,
    hash: u64,
}

/// A request's input as a prompt cache reads it: its blocks in the order the provider reads
/// them (tools, system, messages), and the blocks that carry a cache breakpoint (Anthropic's
/// `cache_control`; OpenAI ignores them).
///
/// # Examples
///
/// ```
/// use curator::model::Message;
/// use curator::strategies::CharEstimate;
/// use curator::strategies::bill::Request;
///
/// let messages = vec![Message::system("Be brief."), Message::user("Hi"), Message::assistant("Hello")];
/// let request = Request::from_messages(&messages, &CharEstimate::default()).with_curator_breakpoints(None);
/// assert_eq!(request.blocks().len(), 3);
/// assert_eq!(request.breakpoints(), [1, 2]);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Request {
    blocks: Vec<Block>,
    /// For each block, the prefix that ends with it (kept as blocks are added, so that a
    /// biller reads a growing request in the time of what was appended).
    prefixes: Vec<Prefix>,
    breakpoints: Vec<usize>,
    /// Index of the block that ends the head (leading system messages and the task).
    head_end: Option<usize>,
    /// Whether the messages pushed so far are all head (system messages, then the task).
    head_open: bool,
    /// Index of the block that ends a compaction's opening: the one before curator's note
    /// of what the compaction left out.
    boundary: Option<usize>,
}

impl Request {
    /// An empty request.
    pub fn new() -> Self {
        Request { head_open: true, ..Self::default() }
    }

    /// The request of `messages`, each one block, counted by `counter`; no breakpoint.
    pub fn from_messages<M: Borrow<Message>>(messages: &[M], counter: &dyn TokenCounter) -> Self {
        let mut request = Request::new();
        for message in messages {
            let message = message.borrow();
            if crate::RelevanceBudget::is_note(message) {
                request.mark_boundary();
            }
            request.push_message(Block::of_message(message, counter), message.role());
        }
        request
    }

    /// Appends the block of a message of role `role` (which tells where the head ends:
    /// the leading system messages and the first user message).
    pub fn push_message(&mut self, block: Block, role: Role) {
        if self.head_open {
            match role {
                Role::System => self.head_end = Some(self.blocks.len()),
                Role::User => {
                    self.head_end = Some(self.blocks.len());
                    self.head_open = false;
                }
                _ => self.head_open = false,
            }
        }
        self.add(block);
    }

    /// Marks the blocks pushed so far as a compaction's opening: the next block is curator's
    /// note of what the compaction left out ([`RelevanceBudget::is_note`](crate::RelevanceBudget::is_note)).
    /// [`from_messages`](Self::from_messages) marks it itself.
    pub fn mark_boundary(&mut self) {
        self.boundary = self.blocks.len().checked_sub(1);
    }

    /// The same request with the tool definitions `tools` first (they open the prefix).
    #[must_use]
    pub fn with_tools(mut self, tools: Block) -> Self {
        self.blocks.insert(0, tools);
        let mut prefix = Prefix::START;
        self.prefixes = self
            .blocks
            .iter()
            .map(|&block| {
                prefix = prefix.then(block);
                prefix
            })
            .collect();
        self.breakpoints.iter_mut().for_each(|b| *b += 1);
        self.head_end = Some(self.head_end.map_or(0, |h| h + 1));
        self.boundary = self.boundary.map(|b| b + 1);
        self
    }

    /// Appends a block that is not a message's. Before any message (the tool definitions,
    /// which open a request) the head stays open, and ends with the system messages and the
    /// task pushed after it; after a message, the head is over.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::model::{Message, Role};
    /// use curator::strategies::CharEstimate;
    /// use curator::strategies::bill::{Block, Request};
    ///
    /// let counter = CharEstimate::default();
    /// let tools = serde_json::json!([{"name": "ls", "input_schema": {"type": "object"}}]);
    /// let mut request = Request::new();
    /// request.push(Block::of_tools(&tools, &counter));
    /// for message in [Message::system("Be brief."), Message::user("Hi"), Message::assistant("Hello")] {
    ///     request.push_message(Block::of_message(&message, &counter), message.role());
    /// }
    /// request.set_curator_breakpoints(None);
    /// // The head (tools, system, task) ends on block 2; the newest is block 3.
    /// assert_eq!(request.breakpoints(), [2, 3]);
    /// ```
    pub fn push(&mut self, block: Block) {
        if !self.blocks.is_empty() {
            self.head_open = false;
        }
        self.add(block);
    }

    /// Puts a cache breakpoint on block `index` (ignored past the end).
    #[must_use]
    pub fn with_breakpoint(mut self, index: usize) -> Self {
        self.add_breakpoint(index);
        self
    }

    /// The breakpoints curator's Anthropic requests carry: on the block that ends the head
    /// (tools, system messages and the task, which every view of a conversation opens
    /// with), on the block that ends a compaction's opening (before curator's note: the
    /// next compaction keeps the same opening and reads it back), on the newest block, and,
    /// when `previous` (the conversation's last request) is a prefix of this one, on its
    /// newest block, so that what it wrote is read back however many blocks were appended
    /// since. At most four, Anthropic's limit.
    #[must_use]
    pub fn with_curator_breakpoints(mut self, previous: Option<&Request>) -> Self {
        self.add_curator_breakpoints(previous.and_then(Request::end));
        self
    }

    /// As [`with_curator_breakpoints`](Request::with_curator_breakpoints), in place, with
    /// the conversation's last request given by where it ended: a request that grows by
    /// appends (sending the whole history each call) is marked without being copied. Any
    /// breakpoint set before is replaced.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::model::{Message, Role};
    /// use curator::strategies::CharEstimate;
    /// use curator::strategies::bill::{Block, Request};
    ///
    /// let counter = CharEstimate::default();
    /// let mut request = Request::from_messages(&[Message::system("Be brief."), Message::user("Hi")], &counter);
    /// request.set_curator_breakpoints(None);
    /// let before = request.end();
    /// let reply = Message::assistant("Hello");
    /// request.push_message(Block::of_message(&reply, &counter), Role::Assistant);
    /// request.set_curator_breakpoints(before);
    /// assert_eq!(request.breakpoints(), [1, 2]);
    /// ```
    pub fn set_curator_breakpoints(&mut self, previous: Option<RequestEnd>) {
        self.breakpoints.clear();
        self.add_curator_breakpoints(previous);
    }

    fn add_curator_breakpoints(&mut self, previous: Option<RequestEnd>) {
        let Some(last) = self.blocks.len().checked_sub(1) else { return };
        if let Some(head) = self.head_end {
            self.add_breakpoint(head);
        }
        if let Some(boundary) = self.boundary {
            self.add_breakpoint(boundary);
        }
        if let Some(previous) = previous
            && self.extends(Some(previous))
            && let Some(end) = previous.len.checked_sub(1)
        {
            self.add_breakpoint(end);
        }
        self.add_breakpoint(last);
    }

    /// Where this request ends (`None` for a request of no block).
    pub fn end(&self) -> Option<RequestEnd> {
        self.prefixes.last().map(|p| RequestEnd { len: self.prefixes.len(), hash: p.hash })
    }

    /// Whether this request begins with the request that ended at `previous`, block for block
    /// (by the hash of their keys, in constant time).
    pub fn extends(&self, previous: Option<RequestEnd>) -> bool {
        previous.is_some_and(|p| {
            p.len <= self.prefixes.len()
                && p.len.checked_sub(1).is_some_and(|i| self.prefixes[i].hash == p.hash)
        })
    }

    /// The prefix ending at each block.
    pub(crate) fn prefixes(&self) -> &[Prefix] {
        &self.prefixes
    }

    fn add(&mut self, block: Block) {
        let before = self.prefixes.last().copied().unwrap_or(Prefix::START);
        self.prefixes.push(before.then(block));
        self.blocks.push(block);
    }

    fn add_breakpoint(&mut self, index: usize) {
        if index < self.blocks.len() && !self.breakpoints.contains(&index) {
            self.breakpoints.push(index);
            self.breakpoints.sort_unstable();
        }
    }

    /// The blocks, in order.
    pub fn blocks(&self) -> &[Block] {
        &self.blocks
    }

    /// The blocks that carry a breakpoint, rising.
    pub fn breakpoints(&self) -> &[usize] {
        &self.breakpoints
    }

    /// Every input token of the request.
    pub fn tokens(&self) -> u64 {
        self.prefixes.last().map_or(0, |p| p.tokens)
    }
}

#[cfg(test)]
mod tests {
    use curator_model::Message;

    use super::*;
    use crate::CharEstimate;

    #[test]
    fn the_block_before_a_compaction_note_carries_a_breakpoint() {
        let note = Message::user(
            "[curator left out 3 earlier messages to fit the context; ask for what you need again.]",
        );
        assert!(crate::RelevanceBudget::is_note(&note));
        let messages = vec![
            Message::system("s"),
            Message::user("task"),
            Message::assistant("opening"),
            note,
            Message::assistant("kept"),
            Message::user("newest"),
        ];
        let request = Request::from_messages(&messages, &CharEstimate::default())
            .with_curator_breakpoints(None);
        // The head's end, the opening's end, the newest.
        assert_eq!(request.breakpoints(), [1, 2, 5]);
        let tools = Block::of_tools(&serde_json::json!([{"name": "t"}]), &CharEstimate::default());
        let request = Request::from_messages(&messages, &CharEstimate::default())
            .with_tools(tools)
            .with_curator_breakpoints(None);
        assert_eq!(request.breakpoints(), [2, 3, 6]);
    }
}
