//! The provider-neutral message that strategies work on.

use std::borrow::Cow;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::{Content, ProviderFields, Role, ToolCall};

/// One message of a conversation, in no provider's format.
///
/// The fields are private so that a message cannot be built in a state no provider accepts:
/// only an assistant message carries tool calls, and only a tool message (which always has
/// the id of the call it answers) carries a call id and an error mark. Build messages with
/// [`Message::system`], [`Message::user`], [`Message::assistant`],
/// [`Message::assistant_with_calls`], [`Message::tool_result`] and [`Message::tool_error`],
/// or read them with [`crate::formats`].
///
/// Content is optional (`null`) as providers allow for an assistant message that only calls
/// tools. Whether the content field was absent rather than `null` in the source is kept too,
/// so that a conversion writes back exactly what it read.
///
/// Its serde form (what stores and snapshots keep) is read strictly: a field it does not
/// define is an error naming the field, never dropped. Fields of a provider that curator does
/// not model are kept under `extra` ([`ProviderFields`]), on the message, its tool calls and
/// its content parts.
///
/// # Examples
///
/// ```
/// use curator::model::{Message, Role, ToolCall};
///
/// let call = ToolCall::new("call_1", "ls", "{}");
/// let reply = Message::assistant_with_calls(None, vec![call]);
/// assert_eq!(reply.role(), Role::Assistant);
/// assert!(reply.content().is_none());
///
/// let result = Message::tool_result("call_1", "a.txt\nb.txt").with_name("ls");
/// assert_eq!(result.tool_call_id(), Some("call_1"));
/// assert_eq!(result.text(), "a.txt\nb.txt");
///
/// let json = serde_json::to_string(&result)?;
/// let back: Message = serde_json::from_str(&json)?;
/// assert_eq!(back, result);
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Message {
    role: Role,
    content: Option<Content>,
    /// The source had no content field at all (as opposed to `null`).
    content_omitted: bool,
    tool_calls: Vec<ToolCall>,
    tool_call_id: Option<String>,
    name: Option<String>,
    /// `Some(false)` when the source said `is_error: false` explicitly.
    is_error: Option<bool>,
    extra: Option<ProviderFields>,
    /// Anthropic: the message began a wire message of its own although the message before
    /// it is on the same side, so writing keeps the two apart instead of merging them.
    starts_turn: bool,
}

impl Message {
    const fn with_role(role: Role, content: Option<Content>) -> Self {
        Self {
            role,
            content,
            content_omitted: false,
            tool_calls: Vec::new(),
            tool_call_id: None,
            name: None,
            is_error: None,
            extra: None,
            starts_turn: false,
        }
    }

    /// A system message.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::model::{Message, Role};
    /// assert_eq!(Message::system("Be brief.").role(), Role::System);
    /// ```
    pub fn system(content: impl Into<Content>) -> Self {
        Self::with_role(Role::System, Some(content.into()))
    }

    /// A user message.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::model::{Message, Role};
    /// assert_eq!(Message::user("hi").role(), Role::User);
    /// ```
    pub fn user(content: impl Into<Content>) -> Self {
        Self::with_role(Role::User, Some(content.into()))
    }

    /// An assistant message without tool calls.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::model::Message;
    /// let m = Message::assistant("Done.");
    /// assert!(!m.has_tool_calls());
    /// ```
    pub fn assistant(content: impl Into<Content>) -> Self {
        Self::with_role(Role::Assistant, Some(content.into()))
    }

    /// An assistant message that calls tools, with optional accompanying content.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::model::{Message, ToolCall};
    ///
    /// let m = Message::assistant_with_calls(Some("Let me look.".into()), vec![ToolCall::new("1", "ls", "{}")]);
    /// assert_eq!(m.tool_calls().len(), 1);
    /// assert_eq!(m.text(), "Let me look.");
    /// ```
    pub fn assistant_with_calls(content: Option<Content>, tool_calls: Vec<ToolCall>) -> Self {
        Self { tool_calls, ..Self::with_role(Role::Assistant, content) }
    }

    /// The successful result of the tool call `call_id`.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::model::Message;
    /// let result = Message::tool_result("call_1", "42");
    /// assert_eq!((result.tool_call_id(), result.is_error()), (Some("call_1"), false));
    /// ```
    pub fn tool_result(call_id: impl Into<String>, content: impl Into<Content>) -> Self {
        Self {
            tool_call_id: Some(call_id.into()),
            ..Self::with_role(Role::Tool, Some(content.into()))
        }
    }

    /// The result of the tool call `call_id` when the tool failed; the call's status is
    /// then [`Failed`](crate::ToolCallStatus::Failed).
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::model::Message;
    ///
    /// let failed = Message::tool_error("call_1", "file not found");
    /// assert!(failed.is_error());
    /// ```
    pub fn tool_error(call_id: impl Into<String>, content: impl Into<Content>) -> Self {
        Self { is_error: Some(true), ..Self::tool_result(call_id, content) }
    }

    /// Sets the `name` field: the tool's name on a tool message, the participant's name on
    /// other messages.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::model::Message;
    /// assert_eq!(Message::tool_result("1", "x").with_name("ls").name(), Some("ls"));
    /// ```
    #[must_use]
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Replaces the content, keeping everything else. This is how strategies build the
    /// shortened or redacted copy of a message.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::model::Message;
    ///
    /// let short = Message::tool_result("1", "a very long output").with_content(Some("a very…".into()));
    /// assert_eq!(short.text(), "a very…");
    /// assert_eq!(short.tool_call_id(), Some("1"));
    /// ```
    #[must_use]
    pub fn with_content(mut self, content: Option<Content>) -> Self {
        self.content = content;
        self.content_omitted = false;
        self
    }

    /// A copy of this message with other content, without copying the current content: how
    /// strategies shorten a large tool result cheaply.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::model::Message;
    ///
    /// let long = Message::tool_result("1", "x".repeat(10_000)).with_name("cat");
    /// let short = long.clone_with_content(Some("x…".into()));
    /// assert_eq!((short.text(), short.name()), ("x…".into(), Some("cat")));
    /// ```
    #[must_use]
    pub fn clone_with_content(&self, content: Option<Content>) -> Self {
        Self {
            role: self.role,
            content,
            content_omitted: false,
            tool_calls: self.tool_calls.clone(),
            tool_call_id: self.tool_call_id.clone(),
            name: self.name.clone(),
            is_error: self.is_error,
            extra: self.extra.clone(),
            starts_turn: self.starts_turn,
        }
    }

    /// Keeps only the tool calls for which `keep` returns true (only assistant messages
    /// have any).
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::model::{Message, ToolCall};
    ///
    /// let m = Message::assistant_with_calls(None, vec![ToolCall::new("a", "x", "{}"), ToolCall::new("b", "y", "{}")]);
    /// let m = m.retain_tool_calls(|c| c.id() == "b");
    /// assert_eq!(m.tool_calls().len(), 1);
    /// ```
    #[must_use]
    pub fn retain_tool_calls(mut self, keep: impl FnMut(&ToolCall) -> bool) -> Self {
        self.tool_calls.retain(keep);
        self
    }

    /// A copy of the message with only the tool calls `keep` accepts, in order. Unlike
    /// `clone().retain_tool_calls(keep)`, the calls left out are never copied.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::model::{Message, ToolCall};
    ///
    /// let m = Message::assistant_with_calls(Some("Looking.".into()), vec![ToolCall::new("a", "ls", "{}"), ToolCall::new("b", "cat", "{}")]);
    /// let kept = m.copy_with_tool_calls(|c| c.id() == "b");
    /// assert_eq!((kept.text(), kept.tool_calls().len(), kept.tool_calls()[0].id()), ("Looking.".into(), 1, "b"));
    /// assert_eq!(kept, m.clone().retain_tool_calls(|c| c.id() == "b"));
    /// ```
    #[must_use]
    pub fn copy_with_tool_calls(&self, mut keep: impl FnMut(&ToolCall) -> bool) -> Self {
        Self {
            role: self.role,
            content: self.content.clone(),
            content_omitted: self.content_omitted,
            tool_calls: self.tool_calls.iter().filter(|call| keep(call)).cloned().collect(),
            tool_call_id: self.tool_call_id.clone(),
            name: self.name.clone(),
            is_error: self.is_error,
            extra: self.extra.clone(),
            starts_turn: self.starts_turn,
        }
    }

    /// The message with the argument text of some tool calls rewritten: `rewrite` returns the
    /// new text for the calls it changes. Ids, names and provider fields stay as they were,
    /// so the message keeps its structure (which results answer it).
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::model::{Message, ToolCall};
    ///
    /// let m = Message::assistant_with_calls(None, vec![ToolCall::new("a", "echo", r#"{"text":"hi"}"#)]);
    /// let m = m.map_tool_call_arguments(|c| Some(c.arguments().replace("hi", "bye")));
    /// assert_eq!((m.tool_calls()[0].id(), m.tool_calls()[0].arguments()), ("a", r#"{"text":"bye"}"#));
    /// ```
    #[must_use]
    pub fn map_tool_call_arguments(
        mut self,
        mut rewrite: impl FnMut(&ToolCall) -> Option<String>,
    ) -> Self {
        for call in &mut self.tool_calls {
            if let Some(arguments) = rewrite(call) {
                call.set_arguments(arguments);
            }
        }
        self
    }

    /// The message with the ids of some tool calls replaced: `rename` returns the new id for
    /// the calls it changes. Names, arguments and provider fields stay as they were.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::model::{Message, ToolCall};
    ///
    /// let m = Message::assistant_with_calls(None, vec![ToolCall::new("c", "a", "{}"), ToolCall::new("c", "b", "{}")]);
    /// let m = m.map_tool_call_ids(|c| (c.name() == "b").then(|| "c~1".to_owned()));
    /// assert_eq!((m.tool_calls()[0].id(), m.tool_calls()[1].id()), ("c", "c~1"));
    /// ```
    #[must_use]
    pub fn map_tool_call_ids(
        mut self,
        mut rename: impl FnMut(&ToolCall) -> Option<String>,
    ) -> Self {
        for call in &mut self.tool_calls {
            if let Some(id) = rename(call) {
                call.set_id(id);
            }
        }
        self
    }

    /// Attaches provider fields that curator carries but does not interpret.
    #[must_use]
    pub fn with_extra(mut self, extra: Option<ProviderFields>) -> Self {
        self.extra = extra;
        self
    }

    /// Marks the message as beginning a wire message of its own (see [`Message::starts_turn`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::model::Message;
    /// assert!(Message::user("again").with_starts_turn(true).starts_turn());
    /// ```
    #[must_use]
    pub fn with_starts_turn(mut self, starts_turn: bool) -> Self {
        self.starts_turn = starts_turn;
        self
    }

    /// Whether the message began a wire message of its own although the message before it
    /// is on the same side: the Anthropic reader sets it for consecutive same-role messages
    /// (`user`, `user`), and the Anthropic writer then keeps them apart rather than merging
    /// them into one turn, so that passthrough returns the input's messages.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::model::formats::anthropic;
    ///
    /// let messages = anthropic::parse(r#"[{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]"#)?;
    /// assert!(!messages[0].starts_turn() && messages[1].starts_turn());
    /// assert_eq!(anthropic::from_messages(&messages)?.messages.len(), 2);
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn starts_turn(&self) -> bool {
        self.starts_turn
    }

    pub(crate) fn set_content_omitted(&mut self) {
        self.content = None;
        self.content_omitted = true;
    }

    /// Adds a call to an assistant message (the Responses reader joins a `function_call`
    /// item to the assistant message before it); other roles never carry calls.
    pub(crate) fn push_tool_call(&mut self, call: ToolCall) {
        if self.role == Role::Assistant {
            self.tool_calls.push(call);
        }
    }

    pub(crate) fn set_is_error(&mut self, is_error: Option<bool>) {
        self.is_error = is_error;
    }

    /// The author's role.
    pub fn role(&self) -> Role {
        self.role
    }

    /// The content, if any.
    pub fn content(&self) -> Option<&Content> {
        self.content.as_ref()
    }

    /// Whether the source had no content field at all (rather than `null`).
    pub fn content_omitted(&self) -> bool {
        self.content_omitted
    }

    /// The text of the content (empty when there is none); see [`Content::text`].
    #[inline]
    pub fn text(&self) -> Cow<'_, str> {
        self.content.as_ref().map_or(Cow::Borrowed(""), Content::text)
    }

    /// The tool calls of an assistant message (empty for every other role).
    pub fn tool_calls(&self) -> &[ToolCall] {
        &self.tool_calls
    }

    /// Whether this is an assistant message with at least one tool call.
    pub fn has_tool_calls(&self) -> bool {
        !self.tool_calls.is_empty()
    }

    /// The id of the call a tool message answers (`None` for every other role).
    pub fn tool_call_id(&self) -> Option<&str> {
        self.tool_call_id.as_deref()
    }

    /// The `name` field: a tool's name on a tool message, a participant's name elsewhere.
    pub fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    /// Whether a tool message reports a failure.
    pub fn is_error(&self) -> bool {
        self.is_error == Some(true)
    }

    /// The error mark exactly as read: `None` when the source did not say.
    pub fn is_error_field(&self) -> Option<bool> {
        self.is_error
    }

    /// Provider fields of the message that curator does not model.
    pub fn extra(&self) -> Option<&ProviderFields> {
        self.extra.as_ref()
    }
}

/// The serialised shape of a [`Message`]: the field names of the OpenAI format, plus
/// `is_error` and `extra`. Reading checks the same invariants the constructors keep, and
/// refuses a field it does not know instead of dropping it (a garbled `"Content"` would
/// otherwise read as a message without content): provider fields belong under `extra`.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[expect(clippy::option_option, reason = "serde's way to tell an absent field from `null`")]
struct Repr<'a> {
    role: Role,
    #[serde(default, deserialize_with = "double_option", skip_serializing_if = "Option::is_none")]
    content: Option<Option<Cow<'a, Content>>>,
    #[serde(default, skip_serializing_if = "<[ToolCall]>::is_empty")]
    tool_calls: Cow<'a, [ToolCall]>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tool_call_id: Option<Cow<'a, str>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    name: Option<Cow<'a, str>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    is_error: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    extra: Option<Cow<'a, ProviderFields>>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    starts_turn: bool,
}

#[expect(clippy::option_option, reason = "serde's way to tell an absent field from `null`")]
fn double_option<'de, D, T>(deserializer: D) -> Result<Option<Option<T>>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(deserializer).map(Some)
}

impl Serialize for Message {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        Repr {
            role: self.role,
            content: if self.content_omitted {
                None
            } else {
                Some(self.content.as_ref().map(Cow::Borrowed))
            },
            tool_calls: Cow::Borrowed(&self.tool_calls),
            tool_call_id: self.tool_call_id.as_deref().map(Cow::Borrowed),
            name: self.name.as_deref().map(Cow::Borrowed),
            is_error: self.is_error,
            extra: self.extra.as_ref().map(Cow::Borrowed),
            starts_turn: self.starts_turn,
        }
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Message {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::Error as _;
        let repr = Repr::deserialize(deserializer)?;
        let role = repr.role;
        if role != Role::Assistant && !repr.tool_calls.is_empty() {
            return Err(D::Error::custom(format!("a {role} message cannot carry `tool_calls`")));
        }
        if role == Role::Tool && repr.tool_call_id.is_none() {
            return Err(D::Error::custom("a tool message needs `tool_call_id`"));
        }
        if role != Role::Tool && repr.tool_call_id.is_some() {
            return Err(D::Error::custom(format!("a {role} message cannot carry `tool_call_id`")));
        }
        if role != Role::Tool && repr.is_error.is_some() {
            return Err(D::Error::custom(format!("a {role} message cannot carry `is_error`")));
        }
        Ok(Message {
            role,
            content_omitted: repr.content.is_none(),
            content: repr.content.flatten().map(Cow::into_owned),
            tool_calls: repr.tool_calls.into_owned(),
            tool_call_id: repr.tool_call_id.map(Cow::into_owned),
            name: repr.name.map(Cow::into_owned),
            is_error: repr.is_error,
            extra: repr.extra.map(Cow::into_owned),
            starts_turn: repr.starts_turn,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serde_keeps_null_and_absent_content_apart() {
        let null: Message = serde_json::from_str(r#"{"role":"assistant","content":null}"#).unwrap();
        let absent: Message = serde_json::from_str(r#"{"role":"assistant"}"#).unwrap();
        assert!(!null.content_omitted());
        assert!(absent.content_omitted());
        assert_eq!(serde_json::to_string(&null).unwrap(), r#"{"role":"assistant","content":null}"#);
        assert_eq!(serde_json::to_string(&absent).unwrap(), r#"{"role":"assistant"}"#);
    }

    #[test]
    fn serde_refuses_fields_it_does_not_know_and_keeps_provider_fields() {
        for (bad, field) in [
            (r#"{"role":"user","Content":"hi"}"#, "Content"),
            (
                r#"{"role":"assistant","tool_calls":[{"id":"1","name":"x","arguments":"{}","nmae":"y"}]}"#,
                "nmae",
            ),
            (r#"{"role":"user","content":[{"type":"text","text":"a","txet":"b"}]}"#, "txet"),
            (
                r#"{"role":"user","content":[{"type":"image","source":{"kind":"url","url":"u","uri":"v"}}]}"#,
                "uri",
            ),
            (
                r#"{"role":"user","content":"a","extra":{"format":"openai","fields":{},"more":1}}"#,
                "more",
            ),
        ] {
            let error = serde_json::from_str::<Message>(bad).unwrap_err().to_string();
            assert!(error.contains(&format!("unknown field `{field}`")), "{bad}: {error}");
        }
        // What curator does not model is kept under `extra`, and reads back.
        let kept = r#"{"role":"user","content":[{"type":"text","text":"a","extra":{"format":"anthropic","fields":{"cache_control":{"type":"ephemeral"}}}}],"extra":{"format":"openai","fields":{"refusal":null}}}"#;
        let message: Message = serde_json::from_str(kept).unwrap();
        assert_eq!(serde_json::to_string(&message).unwrap(), kept);
    }

    #[test]
    fn serde_rejects_states_the_constructors_forbid() {
        for bad in [
            r#"{"role":"user","tool_calls":[{"id":"1","name":"x","arguments":"{}"}]}"#,
            r#"{"role":"tool","content":"x"}"#,
            r#"{"role":"user","tool_call_id":"1"}"#,
            r#"{"role":"assistant","is_error":true}"#,
        ] {
            assert!(serde_json::from_str::<Message>(bad).is_err(), "{bad}");
        }
    }
}
