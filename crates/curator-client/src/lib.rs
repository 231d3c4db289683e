//! Model clients for curator: the one crate that talks to model servers.
//!
//! A [`ModelClient`] sends a [`ModelRequest`] (the messages, and tools in OpenAI's shape) and
//! answers with a [`ModelReply`]: the assistant's [`Message`](curator_model::Message) with
//! its tool calls, the token [`Usage`] as the provider billed it (cache reads and writes
//! included) and the stop reason. `OpenAiClient` (feature `openai`) speaks OpenAI's chat
//! completions (and every server that speaks it: vLLM, Ollama, `llama.cpp`, `LiteLLM`, ...),
//! `AnthropicClient` (feature `anthropic`) Anthropic's Messages API. Both post through one
//! `Endpoint` (feature `http`, on with either), whose connections clones share, and retry by
//! a [`Retry`] policy: 429, 5xx, timeouts and connection failures, waiting longer each time
//! (or as long as the server's `retry-after` says). Feature `tokio` adds `AsyncModelClient`,
//! the call from async code. [`ModelSummarizer`] summarizes with any client, for the
//! strategies that fold old history into a summary.
//!
//! # Examples
//!
//! A stand-in model, as tests write one: any type can be a client.
//!
//! ```
//! use curator::model::Message;
//! use curator::client::{ClientError, ModelClient, ModelReply, ModelRequest, Usage};
//!
//! struct Echo;
//!
//! impl ModelClient for Echo {
//!     fn complete(&self, request: &ModelRequest<'_>) -> Result<ModelReply, ClientError> {
//!         let last = request.messages.last().map(|m| m.text().into_owned()).unwrap_or_default();
//!         Ok(ModelReply::new(Message::assistant(last)).with_usage(Usage::new(1, 1)))
//!     }
//! }
//!
//! let reply = Echo.complete(&ModelRequest::new(&[Message::user("hello")]))?;
//! assert_eq!(reply.message.text(), "hello");
//! Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#[cfg(feature = "anthropic")]
mod anthropic;
#[cfg(feature = "tokio")]
mod asynchronous;
#[cfg(feature = "anthropic")]
mod breakpoints;
#[cfg(feature = "http")]
mod endpoint;
mod error;
mod http_error;
#[cfg(feature = "openai")]
mod openai;
mod reply;
mod request;
#[cfg(feature = "openai")]
mod responses;
mod retry;
mod stream;
mod summarizer;
mod usage;
#[cfg(feature = "http")]
mod wire;

#[cfg(feature = "anthropic")]
pub use anthropic::AnthropicClient;
#[cfg(feature = "tokio")]
pub use asynchronous::AsyncModelClient;
#[cfg(feature = "http")]
pub use endpoint::Endpoint;
pub use error::ClientError;
pub use http_error::{HttpError, HttpErrorKind};
#[cfg(feature = "openai")]
pub use openai::OpenAiClient;
pub use reply::ModelReply;
pub use request::{ModelRequest, ModelSettings};
#[cfg(feature = "openai")]
pub use responses::ResponsesClient;
pub use retry::Retry;
pub use stream::{Delta, DeltaFn};
pub use summarizer::{DEFAULT_SUMMARY_PROMPT, ModelSummarizer};
pub use usage::Usage;

use std::sync::Arc;

/// One call to a model: the request's messages (and tools) in, the assistant's reply out.
///
/// Object safe, so that a program can pick its model at run time (`Box<dyn ModelClient>`);
/// implemented for references, boxes and `Arc`s of clients.
///
/// # Examples
///
/// ```
/// use curator::model::Message;
/// use curator::client::{ClientError, ModelClient, ModelRequest, OpenAiClient, Retry};
///
/// // Nothing listens on port 9 of the loopback interface: a typed error, not a panic.
/// let client: Box<dyn ModelClient> =
///     Box::new(OpenAiClient::new("http://127.0.0.1:9", "gpt-4o-mini").with_retry(Retry::none()));
/// let err = client.complete(&ModelRequest::new(&[Message::user("hi")])).unwrap_err();
/// assert!(matches!(err, ClientError::Connection { attempts: 1, .. }));
/// assert!(err.is_retryable());
/// ```
pub trait ModelClient: Send + Sync {
    /// Sends `request` to the model and reads its reply.
    ///
    /// # Errors
    ///
    /// [`ClientError`]: the request cannot be written in the provider's format, the server
    /// cannot be reached or answers with an error (after the retries the client makes), or
    /// its reply is not one the format reads.
    fn complete(&self, request: &ModelRequest<'_>) -> Result<ModelReply, ClientError>;

    /// Sends `request` as [`complete`](Self::complete) does, asking the model to stream its
    /// reply, and hands each piece to `on_delta` as it arrives (to show the reply as it is
    /// written). The reply returned is the whole one, put together when the stream has
    /// ended: record it, not the pieces. A stream that breaks off returns an error and no
    /// part of the reply.
    ///
    /// The default, for clients that do not stream, calls `complete` and hands the whole
    /// reply over in one piece per part (its text, then each tool call).
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::client::{ClientError, Delta, ModelClient, ModelReply, ModelRequest};
    /// use curator::model::Message;
    ///
    /// struct Echo;
    ///
    /// impl ModelClient for Echo {
    ///     fn complete(&self, request: &ModelRequest<'_>) -> Result<ModelReply, ClientError> {
    ///         Ok(ModelReply::new(Message::assistant(request.messages[0].text().into_owned())))
    ///     }
    /// }
    ///
    /// let mut shown = String::new();
    /// let reply = Echo.stream(&ModelRequest::new(&[Message::user("hello")]), &mut |delta| {
    ///     if let Delta::Text(text) = delta {
    ///         shown.push_str(text);
    ///     }
    /// })?;
    /// assert_eq!((shown.as_str(), &*reply.message.text()), ("hello", "hello"));
    /// # Ok::<(), ClientError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// As [`complete`](Self::complete); a streaming client adds
    /// [`ClientError::StreamCut`] (the stream ended before its end) and
    /// [`ClientError::StreamError`] (the provider ended it with an error event).
    fn stream(
        &self,
        request: &ModelRequest<'_>,
        on_delta: &mut dyn FnMut(&Delta),
    ) -> Result<ModelReply, ClientError> {
        let reply = self.complete(request)?;
        for delta in stream::deltas_of(&reply.message) {
            on_delta(&delta);
        }
        Ok(reply)
    }

    /// What tells this client's replies from another's: the provider, the server and the
    /// model (`openai http://localhost:11434 llama3.1`), never a key. Memo keys use it
    /// (a [`ModelSummarizer`]'s summaries are found again only for the same model); the
    /// default, `model client`, is for stand-ins.
    fn identity(&self) -> String {
        "model client".to_owned()
    }
}

/// `ModelClient` for a pointer to a client: the call goes to the client pointed at.
macro_rules! forward {
    ($($pointer:ty),*) => {$(
        impl<C: ModelClient + ?Sized> ModelClient for $pointer {
            fn complete(&self, request: &ModelRequest<'_>) -> Result<ModelReply, ClientError> {
                (**self).complete(request)
            }

            fn stream(
                &self,
                request: &ModelRequest<'_>,
                on_delta: &mut dyn FnMut(&Delta),
            ) -> Result<ModelReply, ClientError> {
                (**self).stream(request, on_delta)
            }

            fn identity(&self) -> String {
                (**self).identity()
            }
        }
    )*};
}

forward!(&C, Box<C>, Arc<C>);

/// An environment variable that is set and not empty.
#[cfg(feature = "http")]
fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|value| !value.is_empty())
}
