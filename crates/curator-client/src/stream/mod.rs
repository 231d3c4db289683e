//! Streamed replies: the pieces a model sends as it writes ([`Delta`]), read from
//! server-sent events, and put together into the one whole reply a conversation records.

#[cfg(feature = "anthropic")]
pub(crate) mod anthropic;
#[cfg(feature = "openai")]
pub(crate) mod openai;
#[cfg(feature = "openai")]
pub(crate) mod responses;
#[cfg(feature = "http")]
mod sse;

#[cfg(feature = "http")]
pub(crate) use sse::read_events;

/// A piece of a reply, as the model streams it. Pieces are for showing the reply as it is
/// written; the reply itself is the [`ModelReply`](crate::ModelReply) the call returns when
/// the stream has ended, whole (a stream that breaks off returns an error, never part of a
/// reply).
///
/// # Examples
///
/// ```
/// use curator::client::Delta;
///
/// let mut shown = String::new();
/// let mut show = |delta: &Delta| match delta {
///     Delta::Text(text) => shown.push_str(text),
///     Delta::ToolCall { name: Some(name), .. } => shown.push_str(&format!("[{name}]")),
///     _ => {}
/// };
/// show(&Delta::Text("Let me look".into()));
/// show(&Delta::ToolCall { index: 0, id: Some("c1".into()), name: Some("ls".into()), arguments: String::new() });
/// show(&Delta::ToolCall { index: 0, id: None, name: None, arguments: "{\"dir\":".into() });
/// assert_eq!(shown, "Let me look[ls]");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Delta {
    /// More of the reply's text.
    Text(String),
    /// More of the model's thinking (Anthropic's thinking blocks; the `reasoning_content`
    /// of OpenAI-compatible servers that stream one).
    Thinking(String),
    /// More of the tool call at `index` (its place among the reply's calls): its id and name
    /// when it starts, then pieces of its arguments' JSON text.
    ToolCall {
        /// The call's place among the reply's calls, from 0.
        index: usize,
        /// The call's id, in the piece that starts it.
        id: Option<String>,
        /// The tool's name, in the piece that starts it.
        name: Option<String>,
        /// The next piece of the arguments' JSON text (may be empty).
        arguments: String,
    },
}

/// A receiver of a streamed reply's pieces that can be shared across threads (an agent's,
/// a loop step's): `Arc<DeltaFn>` holds any `Fn(&Delta) + Send + Sync` closure.
pub type DeltaFn = dyn Fn(&Delta) + Send + Sync;

/// The deltas of a whole reply, for clients that do not stream: its thinking, its text, then
/// each tool call in one piece.
pub(crate) fn deltas_of(message: &curator_model::Message) -> Vec<Delta> {
    let mut out = Vec::new();
    let text = message.text();
    if !text.is_empty() {
        out.push(Delta::Text(text.into_owned()));
    }
    for (index, call) in message.tool_calls().iter().enumerate() {
        out.push(Delta::ToolCall {
            index,
            id: Some(call.id().to_owned()),
            name: Some(call.name().to_owned()),
            arguments: call.arguments().to_owned(),
        });
    }
    out
}

/// The error of a stream whose reading failed with `e`: a timeout (the endpoint's, for the
/// whole request), or a stream cut off.
#[cfg(feature = "http")]
pub(crate) fn read_error(
    provider: &'static str,
    url: &str,
    timeout: std::time::Duration,
    e: std::io::Error,
) -> crate::ClientError {
    let timed_out = e.kind() == std::io::ErrorKind::TimedOut
        || e.get_ref()
            .and_then(|inner| inner.downcast_ref::<ureq::Error>())
            .is_some_and(|inner| matches!(inner, ureq::Error::Timeout(_)));
    if timed_out {
        crate::ClientError::Timeout {
            provider,
            url: url.to_owned(),
            timeout,
            attempts: 1,
            source: Some(Box::new(e)),
        }
    } else {
        crate::ClientError::StreamCut {
            provider,
            url: url.to_owned(),
            detail: "the connection broke".to_owned(),
            source: Some(Box::new(e)),
        }
    }
}
