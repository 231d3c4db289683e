//! The error of a model call: what failed, with the provider's own words where it gave them.

use std::time::Duration;

use curator_model::BoxError;
#[cfg(feature = "http")]
use serde_json::Value;

use crate::http_error::HttpError;
#[cfg(feature = "http")]
use crate::http_error::HttpErrorKind;

/// How much of an error answer's body stands for the provider's message when the body does
/// not hold one.
#[cfg(feature = "http")]
const EXCERPT_CHARS: usize = 200;

/// Why a model call failed.
///
/// A failure that may pass ([`is_retryable`](Self::is_retryable): a 429, a 5xx, a timeout, a
/// connection failure) was retried by the client first, `attempts` times in all. It boxes into
/// a [`BoxError`] with `?` (the provider error of `curator::session::drive`), and converts
/// into `curator::session::Error::Provider`.
///
/// # Examples
///
/// ```
/// use curator::model::Message;
/// use curator::client::{ClientError, ModelClient, ModelRequest, OpenAiClient, Retry};
///
/// // Nothing listens on port 9 of the loopback interface.
/// let client = OpenAiClient::new("http://127.0.0.1:9", "m").with_retry(Retry::none());
/// let err = client.complete(&ModelRequest::new(&[Message::user("hi")])).unwrap_err();
/// assert!(matches!(err, ClientError::Connection { provider: "OpenAI", attempts: 1, .. }));
/// assert!(err.to_string().starts_with("OpenAI at http://127.0.0.1:9/v1/chat/completions: cannot reach the server"));
/// let boxed: curator::model::BoxError = err.into(); // a provider error of `drive`
/// assert!(boxed.downcast_ref::<ClientError>().is_some());
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// The provider answered with an error status; `message` is its own explanation.
    #[error("{provider} answered HTTP {status}: {message} ({})", attempts_text(*.attempts))]
    Status {
        /// The provider (`OpenAI`, `Anthropic`).
        provider: &'static str,
        /// The HTTP status of the last answer.
        status: u16,
        /// The provider's message, read from the body (`error.message`), or the start of the
        /// body when it holds none.
        message: String,
        /// The provider's error type or code (`invalid_request_error`, `overloaded_error`,
        /// `rate_limit_exceeded`), when the body gives one.
        error_type: Option<String>,
        /// The requests made.
        attempts: u32,
        /// The last answer, with its URL, whole body and `retry-after`.
        #[source]
        source: Box<HttpError>,
    },
    /// The server gave no whole answer in time.
    #[error("{provider} at {url} gave no answer within {timeout:?} ({})", attempts_text(*.attempts))]
    Timeout {
        /// The provider.
        provider: &'static str,
        /// The URL posted to.
        url: String,
        /// The whole-request timeout of the endpoint.
        timeout: Duration,
        /// The requests made.
        attempts: u32,
        /// The HTTP client's error of the last attempt.
        #[source]
        source: Option<BoxError>,
    },
    /// The server could not be reached, or its answer broke off.
    #[error("{provider} at {url}: {reason} ({})", attempts_text(*.attempts))]
    Connection {
        /// The provider.
        provider: &'static str,
        /// The URL posted to.
        url: String,
        /// What failed: `cannot reach the server`, `the answer broke off`.
        reason: String,
        /// The requests made.
        attempts: u32,
        /// The HTTP client's error of the last attempt (connection refused, no route, a
        /// TLS failure, ...).
        #[source]
        source: Option<BoxError>,
    },
    /// The reply is not JSON, or not the shape the provider's format gives a reply.
    #[error("{provider} sent a malformed reply: {detail}")]
    MalformedReply {
        /// The provider.
        provider: &'static str,
        /// The field that is missing or wrong (`choices`, `choices[0].message`, `content`),
        /// when one is to blame.
        field: Option<String>,
        /// What is wrong.
        detail: String,
        /// The parser's or the format reader's error.
        #[source]
        source: Option<BoxError>,
    },
    /// The messages or tools cannot be written in the provider's format (a system message
    /// inside the conversation for Anthropic, arguments that are not a JSON object, a tool
    /// with no counterpart, ...); nothing was sent.
    #[error("the request cannot be written in the {provider} format")]
    Conversion {
        /// The provider.
        provider: &'static str,
        /// What the format writer refused.
        #[source]
        source: curator_model::Error,
    },
    /// A streamed reply broke off before its end (the connection closed, or the server
    /// stopped before its closing event): no part of it is returned. Trying again may
    /// succeed.
    #[error("{provider}'s stream from {url} broke off before its end: {detail}")]
    StreamCut {
        /// The provider.
        provider: &'static str,
        /// The URL posted to.
        url: String,
        /// What was missing (`no message_stop event`, `the connection closed`).
        detail: String,
        /// The reader's error, when one ended the stream.
        #[source]
        source: Option<BoxError>,
    },
    /// The provider ended a stream with an error event (Anthropic's `overloaded_error`, an
    /// OpenAI-compatible server's `error` object): no part of the reply is returned.
    #[error("{provider} ended its stream with an error: {message}")]
    StreamError {
        /// The provider.
        provider: &'static str,
        /// The provider's message.
        message: String,
        /// The provider's error type or code, when it gave one.
        error_type: Option<String>,
    },
    /// The client cannot make a request that could succeed: a base URL without a scheme or
    /// host, no API key for a provider's own server. Nothing was sent, and nothing is
    /// retried.
    #[error("{provider} client: {problem}")]
    Config {
        /// The provider.
        provider: &'static str,
        /// What is wrong, and how to set it right.
        problem: String,
    },
    /// The blocking task of an async call ended without an answer: it panicked, or the
    /// runtime shut down.
    #[error("the blocking task of the model call did not finish")]
    Join(#[source] BoxError),
}

impl ClientError {
    /// Whether the same call may succeed later: a 429 or 5xx answer, a timeout, a connection
    /// failure (the client retried those already, as many times as its `Retry` allows).
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::client::ClientError;
    ///
    /// let refused = ClientError::Conversion {
    ///     provider: "Anthropic",
    ///     source: curator::model::Error::SystemInsideConversation { index: 2 },
    /// };
    /// assert!(!refused.is_retryable());
    /// ```
    pub fn is_retryable(&self) -> bool {
        match self {
            ClientError::Status { status, .. } => *status == 429 || *status >= 500,
            ClientError::Timeout { .. }
            | ClientError::Connection { .. }
            | ClientError::StreamCut { .. } => true,
            ClientError::StreamError { error_type, .. } => error_type.as_deref().is_some_and(|t| {
                matches!(t, "overloaded_error" | "rate_limit_error" | "api_error" | "server_error")
            }),
            ClientError::MalformedReply { .. }
            | ClientError::Conversion { .. }
            | ClientError::Config { .. }
            | ClientError::Join(_) => false,
        }
    }

    /// The error of a call whose last request failed with `error` after `attempts` requests
    /// to an endpoint whose whole-request timeout is `timeout`.
    #[cfg(feature = "http")]
    pub(crate) fn from_http(
        provider: &'static str,
        error: HttpError,
        attempts: u32,
        timeout: Duration,
    ) -> Self {
        let kind = error.kind;
        let error = Box::new(error);
        match kind {
            HttpErrorKind::Status => {
                let (message, error_type) = provider_message(error.body.as_deref().unwrap_or(""));
                ClientError::Status {
                    provider,
                    status: error.status.unwrap_or(0),
                    message,
                    error_type,
                    attempts,
                    source: error,
                }
            }
            HttpErrorKind::Timeout => {
                let HttpError { url, source, .. } = *error;
                ClientError::Timeout { provider, url, timeout, attempts, source }
            }
            HttpErrorKind::NotJson => {
                let body = error.body.as_deref().unwrap_or_default().trim();
                let mut excerpt: String = body.chars().take(EXCERPT_CHARS).collect();
                if excerpt.len() < body.len() {
                    excerpt.push('…');
                }
                let status = error.status.map_or(String::new(), |s| format!(" (HTTP {s})"));
                ClientError::MalformedReply {
                    provider,
                    field: None,
                    detail: format!("the body{status} is not JSON: {excerpt:?}"),
                    source: Some(error),
                }
            }
            _ => {
                let HttpError { url, reason, source, .. } = *error;
                ClientError::Connection { provider, url, reason, attempts, source }
            }
        }
    }

    /// The error of a reply that is JSON but not what the format reads as `what` (`a chat
    /// completion`).
    #[cfg(feature = "http")]
    pub(crate) fn malformed(
        provider: &'static str,
        what: &str,
        error: curator_model::Error,
    ) -> Self {
        let field = match &error {
            curator_model::Error::MissingField { field, .. }
            | curator_model::Error::WrongType { field, .. }
            | curator_model::Error::UnsupportedValue { field, .. }
            | curator_model::Error::UnexpectedField { field, .. }
            | curator_model::Error::InvalidArguments { field, .. }
            | curator_model::Error::ArgumentsNotObject { field, .. }
            | curator_model::Error::ForeignField { field, .. } => Some(field.clone()),
            _ => None,
        };
        let detail = match &field {
            Some(field) => format!("not {what} (field `{field}`): {error}"),
            None => format!("not {what}: {error}"),
        };
        ClientError::MalformedReply { provider, field, detail, source: Some(Box::new(error)) }
    }
}

/// The provider's message and error type in an error answer's body: `error.message` and
/// `error.type` (or `error.code`), the shape both OpenAI (`{"error": {"message", "type",
/// "code"}}`) and Anthropic (`{"type": "error", "error": {"type", "message"}}`) give, or an
/// `error` that is a string (Ollama); else the start of the body.
#[cfg(feature = "http")]
fn provider_message(body: &str) -> (String, Option<String>) {
    let value: Value = serde_json::from_str(body).unwrap_or(Value::Null);
    let error = value.get("error");
    let text = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_owned);
    let message = text(error.and_then(|e| e.get("message")))
        .or_else(|| text(error))
        .or_else(|| text(value.get("message")));
    let error_type =
        text(error.and_then(|e| e.get("type"))).or_else(|| text(error.and_then(|e| e.get("code"))));
    let message = message.unwrap_or_else(|| match body.trim() {
        "" => "(an empty body)".to_owned(),
        body => body.chars().take(EXCERPT_CHARS).collect(),
    });
    (message, error_type)
}

/// `1 attempt`, `4 attempts`.
fn attempts_text(attempts: u32) -> String {
    if attempts == 1 { "1 attempt".to_owned() } else { format!("{attempts} attempts") }
}

#[cfg(all(test, feature = "http"))]
mod tests {
    use super::provider_message;

    #[track_caller]
    fn check(body: &str, message: &str, error_type: Option<&str>) {
        assert_eq!(provider_message(body), (message.to_owned(), error_type.map(str::to_owned)));
    }

    #[test]
    fn the_provider_message_is_read_from_each_shape() {
        check(
            r#"{"error": {"message": "Invalid model", "type": "invalid_request_error", "code": null}}"#,
            "Invalid model",
            Some("invalid_request_error"),
        );
        check(
            r#"{"error": {"message": "Rate limit reached", "code": "rate_limit_exceeded"}}"#,
            "Rate limit reached",
            Some("rate_limit_exceeded"),
        );
        check(
            r#"{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}"#,
            "Overloaded",
            Some("overloaded_error"),
        );
        check(r#"{"error": "model 'x' not found"}"#, "model 'x' not found", None);
        check("<html>Bad Gateway</html>", "<html>Bad Gateway</html>", None);
        check("  ", "(an empty body)", None);
        check(&"x".repeat(500), &"x".repeat(200), None);
    }
}
