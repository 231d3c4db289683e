//! Checks a message list against the rules that make a provider reject a request.
//!
//! Each check ([`openai`], [`anthropic`], [`responses`]) returns the first [`Violation`], with
//! the index of the message where the rule broke. Calls still open at the very end of the
//! list are *pending*, not a violation: a conversation stopped mid-tool-call looks like that,
//! and the caller is about to answer them; the `_request` checks refuse them. Results pair
//! with calls by the one rule of [`pairing`](crate::pairing), except for the Responses API,
//! whose outputs answer their call by id wherever they come after it.
//!
//! # Examples
//!
//! ```
//! use curator::model::{Message, ToolCall, validate};
//!
//! let ok = vec![
//!     Message::system("Be brief."),
//!     Message::user("List files."),
//!     Message::assistant_with_calls(None, vec![ToolCall::new("1", "ls", "{}")]),
//!     Message::tool_result("1", "a.txt"),
//! ];
//! assert!(validate::openai(&ok).is_ok());
//! assert!(validate::anthropic(&ok).is_ok());
//!
//! let orphan = vec![Message::user("hi"), Message::tool_result("9", "?")];
//! let violation = validate::openai(&orphan).unwrap_err();
//! assert_eq!(violation.index, 1);
//! ```

use std::borrow::Borrow;
use std::fmt;

use crate::pairing::{CallRef, Link, Step, pairing};
use crate::{Format, Message, Part, Role};

/// The first rule a message list breaks, and where.
///
/// # Examples
///
/// ```
/// use curator::model::{Message, validate::{self, Violation, ViolationKind}};
///
/// let v = validate::openai(&[Message::user("hi"), Message::tool_result("x", "?")]).unwrap_err();
/// assert_eq!(v, Violation { index: 1, kind: ViolationKind::ToolResultWithoutCall { call_id: "x".into() } });
/// assert_eq!(v.to_string(), "message 1: tool result for `x` answers no open tool call");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("message {index}: {kind}")]
pub struct Violation {
    /// Index of the message where the rule broke (for an empty list, the list's length).
    pub index: usize,
    /// Which rule.
    pub kind: ViolationKind,
}

/// The rules [`openai`] and [`anthropic`] check.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ViolationKind {
    /// There is no message to send (for Anthropic: none besides the system prompt).
    EmptyConversation,
    /// A tool message answers no open call.
    ToolResultWithoutCall {
        /// The id it quotes.
        call_id: String,
    },
    /// A non-tool message arrived while a call of an earlier assistant message was unanswered.
    UnansweredToolCall {
        /// The unanswered call's id.
        call_id: String,
        /// Index of the assistant message that made the call.
        call_index: usize,
    },
    /// Two open calls share an id, so a result could not say which it answers.
    DuplicateOpenCallId {
        /// The shared id.
        call_id: String,
    },
    /// A message the provider rejects for having no content (OpenAI: a user, system or tool
    /// message with `null` content, or an assistant message with neither content nor tool
    /// calls; Anthropic: a turn with no content blocks, except the final assistant turn).
    MissingContent {
        /// The role of the message.
        role: Role,
    },
    /// Anthropic: the first message after the system prompt is not a user message.
    FirstMessageNotUser {
        /// The role found.
        role: Role,
    },
    /// Anthropic: a system message after the conversation started (the API has one
    /// top-level system prompt).
    SystemInsideConversation,
    /// OpenAI: an assistant message with a `tool_calls` list that is empty.
    EmptyToolCalls,
    /// A tool call whose function name is empty.
    EmptyToolName {
        /// The call's id.
        call_id: String,
    },
    /// OpenAI: a part the role cannot carry (only text goes in system, developer and tool
    /// messages).
    UnsupportedPart {
        /// The role of the message.
        role: Role,
        /// The kind of part (`image`, or the part's `type`).
        part: String,
    },
    /// Anthropic: a text that is empty or only whitespace (a text block must hold
    /// something besides whitespace).
    BlankText {
        /// The role of the message.
        role: Role,
    },
    /// A request (as opposed to a record) ends with calls that have no result: the provider
    /// refuses it until the results are added.
    PendingToolCall {
        /// The first pending call's id.
        call_id: String,
    },
    /// Anthropic: a `tool_use` id that an earlier `tool_use` of the request already used.
    DuplicateToolUseId {
        /// The shared id.
        call_id: String,
        /// Index of the message with the first `tool_use` of that id.
        first_index: usize,
    },
    /// A field whose value the provider does not accept (an image `detail`, a media type,
    /// a `cache_control` type).
    InvalidValue {
        /// Path of the field inside the message, as the wire format names it.
        field: String,
        /// The value found.
        value: String,
    },
    /// Anthropic: more than 4 blocks carry `cache_control` in the request's messages.
    TooManyCacheControl {
        /// How many were counted up to this message.
        count: usize,
    },
    /// Anthropic: a tool result marked `is_error: true` has no content.
    EmptyErrorResult,
    /// Anthropic: tool-call arguments that are not a JSON object (a `tool_use` input must be).
    ArgumentsNotObject {
        /// The call's id.
        call_id: String,
    },
    /// Responses: a `function_call` whose `call_id` an earlier `function_call` of the list
    /// already used (an output could not say which call it answers).
    DuplicateCallId {
        /// The shared id.
        call_id: String,
        /// Index of the message with the first call of that id.
        first_index: usize,
    },
    /// Responses: a `reasoning` item not directly followed by the item it was produced with
    /// (a message or a call of the assistant's), which the API refuses: a strategy kept the
    /// reasoning and dropped what followed it.
    ReasoningWithoutFollowingItem {
        /// The reasoning item's `id` (empty when it has none).
        item_id: String,
    },
}

impl fmt::Display for ViolationKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ViolationKind::EmptyConversation => f.write_str("no message to send"),
            ViolationKind::ToolResultWithoutCall { call_id } => {
                write!(f, "tool result for `{call_id}` answers no open tool call")
            }
            ViolationKind::UnansweredToolCall { call_id, call_index } => {
                write!(
                    f,
                    "tool call `{call_id}` of message {call_index} is unanswered when this message arrives"
                )
            }
            ViolationKind::DuplicateOpenCallId { call_id } => {
                write!(f, "tool call id `{call_id}` is already open")
            }
            ViolationKind::MissingContent { role } => write!(f, "{role} message has no content"),
            ViolationKind::FirstMessageNotUser { role } => {
                write!(
                    f,
                    "the first message after the system prompt must be a user message, found {role}"
                )
            }
            ViolationKind::SystemInsideConversation => f.write_str(
                "system message inside the conversation (only a leading system prompt is allowed)",
            ),
            ViolationKind::EmptyToolCalls => {
                f.write_str("`tool_calls` is an empty list (leave it out instead)")
            }
            ViolationKind::EmptyToolName { call_id } => {
                write!(f, "tool call `{call_id}` has an empty function name")
            }
            ViolationKind::UnsupportedPart { role, part } => {
                write!(f, "{role} message has a {part} part, but only text is allowed there")
            }
            ViolationKind::BlankText { role } => {
                write!(f, "{role} message has a text that is empty or only whitespace")
            }
            ViolationKind::PendingToolCall { call_id } => write!(
                f,
                "tool call `{call_id}` has no result, and a request cannot end before its results"
            ),
            ViolationKind::DuplicateToolUseId { call_id, first_index } => write!(
                f,
                "tool_use id `{call_id}` was already used in message {first_index} (ids must be unique in a request)"
            ),
            ViolationKind::InvalidValue { field, value } => {
                write!(f, "field `{field}` has a value the provider refuses: `{value}`")
            }
            ViolationKind::TooManyCacheControl { count } => {
                write!(f, "{count} blocks carry `cache_control`, at most 4 are allowed")
            }
            ViolationKind::EmptyErrorResult => {
                f.write_str("tool result marked `is_error: true` has no content")
            }
            ViolationKind::ArgumentsNotObject { call_id } => {
                write!(f, "tool call `{call_id}` has arguments that are not a JSON object")
            }
            ViolationKind::DuplicateCallId { call_id, first_index } => write!(
                f,
                "function call id `{call_id}` was already used in message {first_index} (call ids must be unique)"
            ),
            ViolationKind::ReasoningWithoutFollowingItem { item_id } => write!(
                f,
                "reasoning item `{item_id}` is not followed by the assistant item it came with"
            ),
        }
    }
}

/// The violation a step of the [pairing](crate::pairing) shows, if any: an orphan result, a
/// call left unanswered when a message that is not its answer arrives (`allow_join`: unless
/// the message joins an assistant turn, as Anthropic allows), or a duplicate open call id.
fn pairing_violation<M: Borrow<Message>>(
    messages: &[M],
    step: &Step,
    allow_join: bool,
) -> Result<(), Violation> {
    let index = step.index;
    let id = |call: CallRef| call.get(messages).map(|c| c.id().to_owned()).unwrap_or_default();
    if let Some(call) = step.unanswered
        && (!allow_join || step.closed_calls())
    {
        return Err(Violation {
            index,
            kind: ViolationKind::UnansweredToolCall { call_id: id(call), call_index: call.message },
        });
    }
    match step.link {
        Link::Orphan => Err(Violation {
            index,
            kind: ViolationKind::ToolResultWithoutCall {
                call_id: messages[index].borrow().tool_call_id().unwrap_or_default().to_owned(),
            },
        }),
        Link::Opens { duplicate: Some((_, open)), .. } => {
            Err(Violation { index, kind: ViolationKind::DuplicateOpenCallId { call_id: id(open) } })
        }
        _ => Ok(()),
    }
}

/// Checks `messages` against the OpenAI Chat Completions rules.
///
/// # Errors
///
/// The first [`Violation`]: an empty list, a tool message that answers no open call, a call
/// left unanswered when a non-tool message follows, two open calls with one id, or a message
/// with no content where the API requires some.
///
/// # Examples
///
/// ```
/// use curator::model::{Message, ToolCall, validate, validate::ViolationKind};
///
/// let messages = vec![
///     Message::user("hi"),
///     Message::assistant_with_calls(None, vec![ToolCall::new("1", "ls", "{}")]),
///     Message::user("are you there?"),
/// ];
/// let v = validate::openai(&messages).unwrap_err();
/// assert_eq!(v.index, 2);
/// assert!(matches!(v.kind, ViolationKind::UnansweredToolCall { call_index: 1, .. }));
/// ```
pub fn openai<M: Borrow<Message>>(messages: &[M]) -> Result<(), Violation> {
    if messages.is_empty() {
        return Err(Violation { index: 0, kind: ViolationKind::EmptyConversation });
    }
    for step in pairing(messages) {
        pairing_violation(messages, &step, false)?;
        let (index, message) = (step.index, messages[step.index].borrow());
        openai_shape(index, message)?;
        if openai_lacks_content(message) {
            return Err(Violation {
                index,
                kind: ViolationKind::MissingContent { role: message.role() },
            });
        }
    }
    Ok(())
}

/// The OpenAI rules on one message's shape: no empty `tool_calls` list, no call without a
/// name, and only text in system, developer and tool messages.
fn openai_shape(index: usize, message: &Message) -> Result<(), Violation> {
    let violation = |kind| Err(Violation { index, kind });
    let fields = message.extra().and_then(|e| e.fields_for(Format::OpenAi));
    if fields
        .and_then(|f| f.get("tool_calls"))
        .is_some_and(|v| v.as_array().is_some_and(Vec::is_empty))
    {
        return violation(ViolationKind::EmptyToolCalls);
    }
    if let Some(call) = message.tool_calls().iter().find(|c| c.name().is_empty()) {
        return violation(ViolationKind::EmptyToolName { call_id: call.id().to_owned() });
    }
    let Some(crate::Content::Parts(parts)) = message.content() else { return Ok(()) };
    for (k, part) in parts.iter().enumerate() {
        let kind = part_kind(part);
        let allowed = match (message.role(), part) {
            (_, Part::Text { .. }) | (Role::User, Part::Image { .. }) => true,
            (Role::User, Part::Raw { format: Format::OpenAi, .. }) => {
                matches!(kind.as_str(), "input_audio" | "file")
            }
            (Role::Assistant, Part::Raw { format: Format::OpenAi, .. }) => kind == "refusal",
            _ => false,
        };
        if !allowed {
            return violation(ViolationKind::UnsupportedPart { role: message.role(), part: kind });
        }
        if let Part::Image { extra, .. } = part
            && let Some(detail) = extra
                .as_ref()
                .and_then(|e| e.fields_for(Format::OpenAi))
                .and_then(|f| f.get("detail"))
            && !matches!(detail.as_str(), Some("auto" | "low" | "high"))
        {
            return violation(ViolationKind::InvalidValue {
                field: format!("content[{k}].image_url.detail"),
                value: detail.as_str().map_or_else(|| detail.to_string(), str::to_owned),
            });
        }
    }
    Ok(())
}

/// The kind of a part as a violation names it: `text`, `image`, or a raw part's `type`.
fn part_kind(part: &Part) -> String {
    match part {
        Part::Text { .. } => "text".to_owned(),
        Part::Image { .. } => "image".to_owned(),
        Part::Raw { value, .. } => {
            value.get("type").and_then(|t| t.as_str()).unwrap_or("unknown").to_owned()
        }
    }
}

/// The Anthropic rules on one message's blocks: which block goes where, image media types,
/// `cache_control` (counted into `cache`), error results with content, object inputs.
fn anthropic_shape(index: usize, message: &Message, cache: &mut usize) -> Result<(), Violation> {
    let violation = |kind| Err(Violation { index, kind });
    let role = message.role();
    if let Some(crate::Content::Parts(parts)) = message.content() {
        for (k, part) in parts.iter().enumerate() {
            let kind = part_kind(part);
            let allowed = match (role, part) {
                (_, Part::Text { .. }) | (Role::User | Role::Tool, Part::Image { .. }) => true,
                (_, Part::Raw { format: Format::OpenAi | Format::Responses, .. })
                | (Role::System, _)
                | (Role::Assistant, Part::Image { .. }) => false,
                (Role::User | Role::Tool, Part::Raw { .. }) => {
                    !matches!(kind.as_str(), "thinking" | "redacted_thinking" | "tool_use")
                }
                (Role::Assistant, Part::Raw { .. }) => {
                    !matches!(kind.as_str(), "image" | "document" | "search_result")
                }
            };
            if !allowed {
                return violation(ViolationKind::UnsupportedPart { role, part: kind });
            }
            if let Part::Image { source: crate::ImageSource::Base64 { media_type, .. }, .. } = part
                && !matches!(
                    media_type.as_str(),
                    "image/jpeg" | "image/png" | "image/gif" | "image/webp"
                )
            {
                return violation(ViolationKind::InvalidValue {
                    field: format!("content[{k}].source.media_type"),
                    value: media_type.clone(),
                });
            }
            let control = match part {
                Part::Text { extra, .. } | Part::Image { extra, .. } => extra
                    .as_ref()
                    .and_then(|e| e.fields_for(Format::Anthropic))
                    .and_then(|f| f.get("cache_control")),
                Part::Raw { value, .. } => value.get("cache_control"),
            };
            cache_control(index, &format!("content[{k}]"), control, cache)?;
        }
    }
    for (j, call) in message.tool_calls().iter().enumerate() {
        let arguments = call.arguments().trim();
        let object = arguments.is_empty()
            || (arguments.starts_with('{')
                && serde_json::from_str::<serde::de::IgnoredAny>(arguments).is_ok());
        if !object || crate::formats::openai::is_custom_call(call) {
            return violation(ViolationKind::ArgumentsNotObject { call_id: call.id().to_owned() });
        }
        let control = call
            .extra()
            .and_then(|e| e.fields_for(Format::Anthropic))
            .and_then(|f| f.get("cache_control"));
        cache_control(index, &format!("tool_calls[{j}]"), control, cache)?;
    }
    if role == Role::Tool {
        if message.is_error() && message.content().is_none_or(crate::Content::is_empty) {
            return violation(ViolationKind::EmptyErrorResult);
        }
        let control = message
            .extra()
            .and_then(|e| e.fields_for(Format::Anthropic))
            .and_then(|f| f.get("cache_control"));
        cache_control(index, "", control, cache)?;
    }
    Ok(())
}

/// Counts a block's `cache_control` and checks its type.
fn cache_control(
    index: usize,
    path: &str,
    control: Option<&serde_json::Value>,
    cache: &mut usize,
) -> Result<(), Violation> {
    let Some(control) = control.filter(|c| !c.is_null()) else { return Ok(()) };
    *cache += 1;
    let kind = control.get("type");
    if kind.and_then(|k| k.as_str()) != Some("ephemeral") {
        let field = if path.is_empty() {
            "cache_control.type".to_owned()
        } else {
            format!("{path}.cache_control.type")
        };
        let value = kind.map_or_else(
            || "missing".to_owned(),
            |k| k.as_str().map_or_else(|| k.to_string(), str::to_owned),
        );
        return Err(Violation { index, kind: ViolationKind::InvalidValue { field, value } });
    }
    if *cache > 4 {
        return Err(Violation {
            index,
            kind: ViolationKind::TooManyCacheControl { count: *cache },
        });
    }
    Ok(())
}

/// Whether a message has a text that Anthropic refuses: present but blank.
fn blank_text(message: &Message) -> bool {
    match message.content() {
        Some(crate::Content::Text(text)) => !text.is_empty() && text.trim().is_empty(),
        Some(crate::Content::Parts(parts)) => {
            parts.iter().filter_map(Part::as_text).any(|t| t.trim().is_empty())
        }
        None => false,
    }
}

fn openai_lacks_content(message: &Message) -> bool {
    if message.content().is_some() {
        return false;
    }
    match message.role() {
        Role::Assistant => {
            // Legacy `function_call` and audio replies stand in for content.
            let carries_other = message.extra().is_some_and(|e| {
                e.fields_for(Format::OpenAi)
                    .is_some_and(|f| f.contains_key("function_call") || f.contains_key("audio"))
            });
            !message.has_tool_calls() && !carries_other
        }
        Role::System | Role::User | Role::Tool => true,
    }
}

/// Checks `messages` against the Anthropic Messages API rules, as
/// [`formats::anthropic::from_messages`](crate::formats::anthropic::from_messages) would send
/// them: leading system messages become the top-level system prompt, consecutive messages of
/// one side are merged into one turn (tool results travel in user turns), the first turn must
/// be a user turn, and the answers to an assistant turn's `tool_use` blocks must come as
/// `tool_result` blocks at the start of the very next user turn.
///
/// # Errors
///
/// The first [`Violation`].
///
/// # Examples
///
/// ```
/// use curator::model::{Message, validate, validate::ViolationKind};
///
/// let messages = vec![Message::system("s"), Message::assistant("I speak first")];
/// let v = validate::anthropic(&messages).unwrap_err();
/// assert_eq!((v.index, v.kind), (1, ViolationKind::FirstMessageNotUser { role: curator::model::Role::Assistant }));
/// ```
pub fn anthropic<M: Borrow<Message>>(messages: &[M]) -> Result<(), Violation> {
    let start = messages
        .iter()
        .position(|m| m.borrow().role() != Role::System)
        .ok_or(Violation { index: messages.len(), kind: ViolationKind::EmptyConversation })?;
    if messages[start].borrow().role() == Role::Assistant {
        return Err(Violation {
            index: start,
            kind: ViolationKind::FirstMessageNotUser { role: Role::Assistant },
        });
    }
    let mut cache = 0;
    for (index, message) in messages[..start].iter().enumerate() {
        anthropic_shape(index, message.borrow(), &mut cache)?;
    }
    // The side of the turn being built, where it began, and whether it has a block yet.
    let mut turn_is_assistant = false;
    let mut turn_start = start;
    let mut turn_has_blocks = false;
    for step in pairing(messages).skip(start) {
        let (index, message) = (step.index, messages[step.index].borrow());
        let is_assistant = match message.role() {
            Role::System => {
                return Err(Violation { index, kind: ViolationKind::SystemInsideConversation });
            }
            Role::Assistant => true,
            Role::User | Role::Tool => false,
        };
        if index > start && is_assistant != turn_is_assistant {
            if !turn_has_blocks {
                return Err(empty_turn(turn_start, turn_is_assistant));
            }
            turn_start = index;
            turn_has_blocks = false;
        }
        // A following assistant message joins the same turn, so its calls add to the open
        // ones instead of finding them unanswered.
        pairing_violation(messages, &step, true)?;
        if let Some(call) = message.tool_calls().iter().find(|c| c.name().is_empty()) {
            return Err(Violation {
                index,
                kind: ViolationKind::EmptyToolName { call_id: call.id().to_owned() },
            });
        }
        if blank_text(message) {
            return Err(Violation {
                index,
                kind: ViolationKind::BlankText { role: message.role() },
            });
        }
        anthropic_shape(index, message, &mut cache)?;
        turn_is_assistant = is_assistant;
        turn_has_blocks |= message.role() == Role::Tool
            || message.has_tool_calls()
            || message.content().is_some_and(|c| !c.is_empty());
    }
    if !turn_has_blocks && !turn_is_assistant {
        return Err(empty_turn(turn_start, false));
    }
    Ok(())
}

fn empty_turn(index: usize, assistant: bool) -> Violation {
    let role = if assistant { Role::Assistant } else { Role::User };
    Violation { index, kind: ViolationKind::MissingContent { role } }
}

/// Checks `messages` as an OpenAI request about to be sent: the rules of [`openai`], and
/// no calls left without results at the end (a record may end so, a request may not).
///
/// # Errors
///
/// The first [`Violation`]; [`ViolationKind::PendingToolCall`] names the first pending call,
/// with the index of the assistant message that made it.
///
/// # Examples
///
/// ```
/// use curator::model::{Message, ToolCall, validate, validate::ViolationKind};
///
/// let messages = vec![Message::user("go"), Message::assistant_with_calls(None, vec![ToolCall::new("a", "ls", "{}")])];
/// assert!(validate::openai(&messages).is_ok());
/// let v = validate::openai_request(&messages).unwrap_err();
/// assert_eq!((v.index, v.kind), (1, ViolationKind::PendingToolCall { call_id: "a".into() }));
/// ```
pub fn openai_request<M: Borrow<Message>>(messages: &[M]) -> Result<(), Violation> {
    openai(messages)?;
    no_pending_calls(messages)
}

/// Checks `messages` as an Anthropic request about to be sent: the rules of [`anthropic`],
/// `tool_use` ids unique in the whole request, and no `tool_use` left without its result at
/// the end.
///
/// # Errors
///
/// The first [`Violation`].
///
/// # Examples
///
/// ```
/// use curator::model::{Message, ToolCall, validate, validate::ViolationKind};
///
/// let call = || Message::assistant_with_calls(None, vec![ToolCall::new("a", "ls", "{}")]);
/// let messages = vec![Message::user("go"), call(), Message::tool_result("a", "x"), call(), Message::tool_result("a", "y")];
/// assert!(validate::anthropic(&messages).is_ok());
/// let v = validate::anthropic_request(&messages).unwrap_err();
/// assert_eq!((v.index, v.kind), (3, ViolationKind::DuplicateToolUseId { call_id: "a".into(), first_index: 1 }));
/// ```
pub fn anthropic_request<M: Borrow<Message>>(messages: &[M]) -> Result<(), Violation> {
    anthropic(messages)?;
    let mut seen = std::collections::HashMap::new();
    for (index, message) in messages.iter().map(Borrow::borrow).enumerate() {
        for call in message.tool_calls() {
            if let Some(&first_index) = seen.get(call.id()) {
                return Err(Violation {
                    index,
                    kind: ViolationKind::DuplicateToolUseId {
                        call_id: call.id().to_owned(),
                        first_index,
                    },
                });
            }
            seen.insert(call.id(), index);
        }
    }
    no_pending_calls(messages)
}

/// Checks `messages` against the OpenAI Responses API rules, as
/// [`formats::responses::from_messages`](crate::formats::responses::from_messages) would
/// send them as items: every `function_call_output` answers a `function_call` made earlier in
/// the list and not answered yet (the API does not ask the output to follow its call
/// directly), call ids are unique, a `reasoning` item is directly followed by the assistant
/// item it came with, messages have content (an assistant message, or calls), parts are the
/// Responses API's (an assistant message holds `output_text` and `refusal` only; no part of
/// another format anywhere), image `detail` is `auto`, `low` or `high`, and tool names are not
/// empty. Calls without an output, and a reasoning item, at the very end are allowed (a
/// record may stop there); [`responses_request`] refuses them.
///
/// # Errors
///
/// The first [`Violation`].
///
/// # Examples
///
/// ```
/// use curator::model::{formats::responses, validate, validate::ViolationKind};
/// use serde_json::json;
///
/// let messages = responses::to_messages(&[
///     json!({"role": "user", "content": "go"}),
///     json!({"type": "function_call", "call_id": "c1", "name": "ls", "arguments": "{}"}),
///     json!({"role": "user", "content": "(meanwhile)"}),
///     json!({"type": "function_call_output", "call_id": "c1", "output": "a.txt"}),
///     json!({"type": "function_call_output", "call_id": "c2", "output": "?"}),
/// ])?;
/// let v = validate::responses(&messages).unwrap_err();
/// assert_eq!((v.index, v.kind), (4, ViolationKind::ToolResultWithoutCall { call_id: "c2".into() }));
/// assert!(validate::responses(&messages[..4]).is_ok());
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn responses<M: Borrow<Message>>(messages: &[M]) -> Result<(), Violation> {
    responses_check(messages, false)
}

/// Checks `messages` as a Responses API request about to be sent: the rules of
/// [`responses`], every `function_call` answered by its output somewhere in the list, and no
/// `reasoning` item at the end.
///
/// # Errors
///
/// The first [`Violation`]; [`ViolationKind::PendingToolCall`] names the first call without
/// an output, with the index of the message that made it.
///
/// # Examples
///
/// ```
/// use curator::model::{Message, ToolCall, validate, validate::ViolationKind};
///
/// let messages = vec![Message::user("go"), Message::assistant_with_calls(None, vec![ToolCall::new("a", "ls", "{}")])];
/// assert!(validate::responses(&messages).is_ok());
/// let v = validate::responses_request(&messages).unwrap_err();
/// assert_eq!((v.index, v.kind), (1, ViolationKind::PendingToolCall { call_id: "a".into() }));
/// ```
pub fn responses_request<M: Borrow<Message>>(messages: &[M]) -> Result<(), Violation> {
    responses_check(messages, true)
}

fn responses_check<M: Borrow<Message>>(messages: &[M], request: bool) -> Result<(), Violation> {
    use crate::formats::responses::item_type;
    if messages.is_empty() {
        return Err(Violation { index: 0, kind: ViolationKind::EmptyConversation });
    }
    // Each call id: the message that made the call, and whether an output answered it.
    let mut calls: std::collections::HashMap<&str, (usize, bool)> =
        std::collections::HashMap::new();
    for (index, message) in messages.iter().map(Borrow::borrow).enumerate() {
        let violation = |kind| Err(Violation { index, kind });
        responses_shape(index, message)?;
        if message.role() == Role::Tool {
            let id = message.tool_call_id().unwrap_or_default();
            match calls.get_mut(id) {
                Some((_, answered)) if !*answered => *answered = true,
                _ => {
                    return violation(ViolationKind::ToolResultWithoutCall {
                        call_id: id.to_owned(),
                    });
                }
            }
        }
        for call in message.tool_calls() {
            if call.name().is_empty() {
                return violation(ViolationKind::EmptyToolName { call_id: call.id().to_owned() });
            }
            if let Some(&(first_index, _)) = calls.get(call.id()) {
                return violation(ViolationKind::DuplicateCallId {
                    call_id: call.id().to_owned(),
                    first_index,
                });
            }
            calls.insert(call.id(), (index, false));
        }
        if item_type(message) == Some("reasoning") && !message.has_tool_calls() {
            let next = messages.get(index + 1).map(Borrow::borrow);
            let followed = match next {
                Some(next) => {
                    next.role() == Role::Assistant && item_type(next) != Some("reasoning")
                }
                None => !request,
            };
            if !followed {
                let item_id = match message.content() {
                    Some(crate::Content::Parts(parts)) => parts.first().and_then(|p| match p {
                        Part::Raw { value, .. } => value.get("id").and_then(|v| v.as_str()),
                        _ => None,
                    }),
                    _ => None,
                };
                return violation(ViolationKind::ReasoningWithoutFollowingItem {
                    item_id: item_id.unwrap_or_default().to_owned(),
                });
            }
        }
    }
    if request {
        for (index, message) in messages.iter().map(Borrow::borrow).enumerate() {
            if let Some(call) = message
                .tool_calls()
                .iter()
                .find(|c| calls.get(c.id()).is_some_and(|(_, answered)| !answered))
            {
                return Err(Violation {
                    index,
                    kind: ViolationKind::PendingToolCall { call_id: call.id().to_owned() },
                });
            }
        }
    }
    Ok(())
}

/// The Responses rules on one message's shape: content present where an item needs it,
/// the parts each role's items accept, image `detail`, no `custom` call.
fn responses_shape(index: usize, message: &Message) -> Result<(), Violation> {
    let violation = |kind| Err(Violation { index, kind });
    let role = message.role();
    if crate::formats::responses::item_type(message).is_some() {
        // A message read from another item holds that item: the writer gives it back.
        return Ok(());
    }
    if message.content().is_none() && role != Role::Tool && !message.has_tool_calls() {
        return violation(ViolationKind::MissingContent { role });
    }
    for (j, call) in message.tool_calls().iter().enumerate() {
        if crate::formats::openai::is_custom_call(call) {
            return violation(ViolationKind::InvalidValue {
                field: format!("tool_calls[{j}].type"),
                value: "custom".into(),
            });
        }
    }
    let Some(crate::Content::Parts(parts)) = message.content() else { return Ok(()) };
    let key = if role == Role::Tool { "output" } else { "content" };
    for (k, part) in parts.iter().enumerate() {
        let kind = part_kind(part);
        let allowed = match (role, part) {
            (_, Part::Raw { format: Format::OpenAi | Format::Anthropic, .. })
            | (Role::Assistant, Part::Image { .. }) => false,
            (Role::Assistant, Part::Raw { .. }) => kind == "refusal",
            _ => true,
        };
        if !allowed {
            return violation(ViolationKind::UnsupportedPart { role, part: kind });
        }
        let fields = |extra: &Option<crate::ProviderFields>| {
            extra.as_ref().and_then(|e| e.fields_for(Format::Responses)).cloned()
        };
        match part {
            Part::Text { extra, .. } if role == Role::Assistant => {
                let kind = fields(extra).and_then(|f| f.get("type").cloned());
                if let Some(kind) = kind.filter(|k| k.as_str() != Some("output_text")) {
                    return violation(ViolationKind::InvalidValue {
                        field: format!("{key}[{k}].type"),
                        value: kind.as_str().map_or_else(|| kind.to_string(), str::to_owned),
                    });
                }
            }
            Part::Image { extra, .. } => {
                let detail = fields(extra).and_then(|f| f.get("detail").cloned()).or_else(|| {
                    extra
                        .as_ref()
                        .and_then(|e| e.fields_for(Format::OpenAi))
                        .and_then(|f| f.get("detail").cloned())
                });
                if let Some(detail) =
                    detail.filter(|d| !matches!(d.as_str(), Some("auto" | "low" | "high")))
                {
                    return violation(ViolationKind::InvalidValue {
                        field: format!("{key}[{k}].detail"),
                        value: detail.as_str().map_or_else(|| detail.to_string(), str::to_owned),
                    });
                }
            }
            _ => {}
        }
    }
    Ok(())
}

fn no_pending_calls<M: Borrow<Message>>(messages: &[M]) -> Result<(), Violation> {
    let mut pairing = pairing(messages);
    pairing.by_ref().for_each(drop);
    match pairing.open().first() {
        Some(call) => Err(Violation {
            index: call.message,
            kind: ViolationKind::PendingToolCall {
                call_id: call.get(messages).map(|c| c.id().to_owned()).unwrap_or_default(),
            },
        }),
        None => Ok(()),
    }
}

/// Checks a request's `tools` in the OpenAI shape: each a `function` tool with a name (or
/// a `custom` tool), never Anthropic's `{name, input_schema}`.
///
/// # Errors
///
/// [`Error::ToolSchema`](crate::Error::ToolSchema) naming the first tool and field that is
/// wrong.
///
/// # Examples
///
/// ```
/// use curator::model::validate;
/// use serde_json::json;
///
/// assert!(validate::openai_tools(&json!([{"type": "function", "function": {"name": "ls"}}])).is_ok());
/// assert!(validate::openai_tools(&json!([{"name": "ls", "input_schema": {}}])).is_err());
/// ```
pub fn openai_tools(tools: &serde_json::Value) -> crate::Result<()> {
    for (index, tool) in tool_list(tools)?.iter().enumerate() {
        let error = |field: &str, reason: &str| crate::Error::ToolSchema {
            index,
            field: field.to_owned(),
            reason: reason.to_owned(),
        };
        match tool.get("type").and_then(serde_json::Value::as_str) {
            Some("function") => {
                if tool.pointer("/function/name").and_then(serde_json::Value::as_str).is_none() {
                    return Err(error("function.name", "is missing or not a string"));
                }
            }
            Some("custom") => {}
            _ if tool.get("input_schema").is_some() => {
                return Err(error(
                    "type",
                    "is missing: this is an Anthropic tool (`input_schema`); convert it with `formats::openai::tools_from_anthropic`",
                ));
            }
            _ => return Err(error("type", "should be `function` or `custom`")),
        }
    }
    Ok(())
}

/// Checks a request's `tools` in the Anthropic shape: `{name, description, input_schema}`
/// client tools, or typed server tools, never OpenAI's `{"type": "function", ...}`.
///
/// # Errors
///
/// [`Error::ToolSchema`](crate::Error::ToolSchema) naming the first tool and field that is
/// wrong.
///
/// # Examples
///
/// ```
/// use curator::model::validate;
/// use serde_json::json;
///
/// assert!(validate::anthropic_tools(&json!([{"name": "ls", "input_schema": {"type": "object"}}])).is_ok());
/// assert!(validate::anthropic_tools(&json!([{"type": "function", "function": {"name": "ls"}}])).is_err());
/// ```
pub fn anthropic_tools(tools: &serde_json::Value) -> crate::Result<()> {
    for (index, tool) in tool_list(tools)?.iter().enumerate() {
        let error = |field: &str, reason: &str| crate::Error::ToolSchema {
            index,
            field: field.to_owned(),
            reason: reason.to_owned(),
        };
        let kind = tool.get("type").and_then(serde_json::Value::as_str);
        if kind == Some("function") || tool.get("function").is_some() {
            return Err(error(
                "type",
                "is OpenAI's `function` shape; convert it with `formats::anthropic::tools_from_openai`",
            ));
        }
        if tool.get("name").and_then(serde_json::Value::as_str).is_none() {
            return Err(error("name", "is missing or not a string"));
        }
        if matches!(kind, None | Some("custom"))
            && !tool.get("input_schema").is_some_and(serde_json::Value::is_object)
        {
            return Err(error("input_schema", "is missing or not an object"));
        }
    }
    Ok(())
}

/// Checks a request's `tools` in the Responses API shape: each tool has a `type`; a
/// `function` tool is flat (`{"type": "function", "name", "parameters"}`), never the Chat
/// Completions `{"type": "function", "function": {...}}` nor Anthropic's `input_schema`.
///
/// # Errors
///
/// [`Error::ToolSchema`](crate::Error::ToolSchema) naming the first tool and field that is
/// wrong.
///
/// # Examples
///
/// ```
/// use curator::model::validate;
/// use serde_json::json;
///
/// assert!(validate::responses_tools(&json!([{"type": "function", "name": "ls", "parameters": {}},
///     {"type": "web_search"}])).is_ok());
/// assert!(validate::responses_tools(&json!([{"type": "function", "function": {"name": "ls"}}])).is_err());
/// ```
pub fn responses_tools(tools: &serde_json::Value) -> crate::Result<()> {
    for (index, tool) in tool_list(tools)?.iter().enumerate() {
        let error = |field: &str, reason: &str| crate::Error::ToolSchema {
            index,
            field: field.to_owned(),
            reason: reason.to_owned(),
        };
        if tool.get("input_schema").is_some() {
            return Err(error(
                "input_schema",
                "is Anthropic's shape: a Responses tool has `type`, `name` and `parameters`",
            ));
        }
        match tool.get("type").and_then(serde_json::Value::as_str) {
            None => return Err(error("type", "is missing or not a string")),
            Some("function") if tool.get("function").is_some() => {
                return Err(error(
                    "function",
                    "is the Chat Completions shape: a Responses function tool is flat (`name`, `parameters`)",
                ));
            }
            Some("function") if tool.get("name").and_then(serde_json::Value::as_str).is_none() => {
                return Err(error("name", "is missing or not a string"));
            }
            Some(_) => {}
        }
    }
    Ok(())
}

fn tool_list(tools: &serde_json::Value) -> crate::Result<&Vec<serde_json::Value>> {
    tools.as_array().ok_or_else(|| crate::Error::ToolSchema {
        index: 0,
        field: "tools".into(),
        reason: "should be an array".into(),
    })
}
