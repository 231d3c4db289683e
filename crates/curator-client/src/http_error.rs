//! Why a request to a model server failed ([`HttpError`]), kept apart from the endpoint so
//! that [`ClientError`](crate::ClientError) names it in builds without HTTP.

use std::time::Duration;

use curator_model::BoxError;

/// Why a request to an [`Endpoint`](crate::Endpoint) failed: the URL and what went wrong (the status and the
/// start of the body, a timeout, a refused connection, an answer that is not JSON).
#[derive(Debug, thiserror::Error)]
#[error("{url}: {reason}")]
#[non_exhaustive]
pub struct HttpError {
    /// The URL posted to.
    pub url: String,
    /// What kind of failure.
    pub kind: HttpErrorKind,
    /// What failed, with the status and the first 200 characters of the body for an error
    /// answer.
    pub reason: String,
    /// The HTTP status, when the server answered.
    pub status: Option<u16>,
    /// The whole body of an error answer (a status outside 2xx) or of an answer that is not
    /// JSON, for reading the server's own explanation out of it.
    pub body: Option<String>,
    /// How long the server asked to wait before trying again: its `retry-after` header, in
    /// seconds (the HTTP-date form is not read).
    pub retry_after: Option<Duration>,
    /// The underlying error, when there is one.
    #[source]
    pub source: Option<BoxError>,
}

/// What kind of failure an [`HttpError`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum HttpErrorKind {
    /// The server could not be reached (refused, no route, a TLS failure, ...).
    Unreachable,
    /// No whole answer within the endpoint's timeout.
    Timeout,
    /// The answer broke off before its end.
    BrokenOff,
    /// The server answered with a status outside 2xx.
    Status,
    /// The server answered 2xx with a body that is not JSON.
    NotJson,
}

impl HttpError {
    /// Whether trying again later may succeed: a timeout, a connection failure, a 429 or a
    /// 5xx answer.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::client::Endpoint;
    ///
    /// // Nothing listens on port 9 of the loopback interface.
    /// let err = Endpoint::new("http://127.0.0.1:9").post_json("chat/completions", &serde_json::json!({})).unwrap_err();
    /// assert!(err.is_retryable());
    /// assert!(err.to_string().starts_with("http://127.0.0.1:9/v1/chat/completions: "));
    /// ```
    pub fn is_retryable(&self) -> bool {
        match self.kind {
            HttpErrorKind::Unreachable | HttpErrorKind::Timeout | HttpErrorKind::BrokenOff => true,
            HttpErrorKind::Status => self.status.is_some_and(|s| s == 429 || s >= 500),
            HttpErrorKind::NotJson => false,
        }
    }
}
