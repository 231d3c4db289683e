//! One model server's HTTP endpoint (feature `http`): the base URL rule, the auth and other
//! headers, the timeouts, the error excerpts and one reused connection pool, under both
//! clients.

use std::fmt;
use std::time::Duration;

use curator_model::BoxError;
use serde_json::Value;

use crate::http_error::{HttpError, HttpErrorKind};

/// How much of an error answer's body an [`HttpError`] quotes.
const EXCERPT_CHARS: usize = 200;

/// An OpenAI-compatible server (OpenAI, vLLM, Ollama, `llama.cpp`'s server, `LiteLLM`, …):
/// where it is, how to authenticate, how long to wait. Requests go to
/// `{base_url}/v1/{path}` through one HTTP agent built once, whose connections are kept and
/// reused; clones share it.
///
/// **The base URL** is the scheme, host and port, with or without a trailing `/v1` (and
/// slashes): `http://localhost:11434`, `http://localhost:11434/v1/` and
/// `https://api.openai.com/v1` all work.
///
/// **Timeouts**: 120 s for a whole request (connecting, sending, the answer) and 10 s to
/// connect, unless set.
///
/// **Headers**: [`with_api_key`](Endpoint::with_api_key) sends `Authorization: Bearer`;
/// [`with_header`](Endpoint::with_header) any other (Anthropic's `x-api-key`, say). Their
/// values never show in `Debug`.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use curator::client::Endpoint;
///
/// let endpoint = Endpoint::new("http://localhost:11434/v1/").with_timeout(Duration::from_secs(30));
/// assert_eq!(endpoint.base_url(), "http://localhost:11434");
/// assert_eq!(endpoint.url("chat/completions"), "http://localhost:11434/v1/chat/completions");
/// assert_eq!(endpoint.timeout(), Duration::from_secs(30));
/// ```
#[derive(Clone)]
pub struct Endpoint {
    base_url: String,
    api_key: Option<String>,
    headers: Vec<(String, String)>,
    timeout: Duration,
    connect_timeout: Duration,
    agent: ureq::Agent,
}

impl Endpoint {
    /// The server at `base_url` (see [the base URL rule](Endpoint)), with the default
    /// timeouts and no API key.
    pub fn new(base_url: impl AsRef<str>) -> Self {
        let base = base_url.as_ref().trim_end_matches('/');
        let base = base.strip_suffix("/v1").unwrap_or(base).trim_end_matches('/');
        let timeout = Duration::from_mins(2);
        let connect_timeout = Duration::from_secs(10);
        Self {
            base_url: base.to_owned(),
            api_key: None,
            headers: Vec::new(),
            timeout,
            connect_timeout,
            agent: agent(timeout, connect_timeout),
        }
    }

    /// Sends `Authorization: Bearer <key>` with every request.
    #[must_use]
    pub fn with_api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(key.into());
        self
    }

    /// Sends the header `name: value` with every request, in place of one of that name set
    /// before (names compare without case). Its value never shows in `Debug`.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::client::Endpoint;
    ///
    /// let endpoint = Endpoint::new("https://api.anthropic.com").with_header("x-api-key", "sk-secret");
    /// assert!(endpoint.has_header("X-Api-Key"));
    /// assert!(!format!("{endpoint:?}").contains("sk-secret"));
    /// ```
    #[must_use]
    pub fn with_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        let name = name.into();
        self.headers.retain(|(n, _)| !n.eq_ignore_ascii_case(&name));
        self.headers.push((name, value.into()));
        self
    }

    /// Whether a header of this name is sent (set by [`with_header`](Endpoint::with_header);
    /// names compare without case).
    pub fn has_header(&self, name: &str) -> bool {
        self.headers.iter().any(|(n, _)| n.eq_ignore_ascii_case(name))
    }

    /// Gives up after `timeout` for a whole request.
    #[must_use]
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self.agent = agent(self.timeout, self.connect_timeout);
        self
    }

    /// Gives up connecting after `timeout`.
    #[must_use]
    pub fn with_connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self.agent = agent(self.timeout, self.connect_timeout);
        self
    }

    /// What is wrong with the base URL, if anything: a scheme other than `http://` or
    /// `https://` (none at all, say: `localhost:11434`), or no host after it. A request to
    /// such an endpoint cannot succeed, so the clients refuse it before the first attempt
    /// ([`ClientError::Config`](crate::ClientError::Config)) rather than retry it.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::client::Endpoint;
    ///
    /// assert_eq!(Endpoint::new("http://localhost:11434").problem(), None);
    /// let problem = Endpoint::new("localhost:11434").problem().unwrap();
    /// assert!(problem.contains("http://") && problem.contains("localhost:11434"), "{problem}");
    /// assert!(Endpoint::new("https://").problem().is_some());
    /// ```
    pub fn problem(&self) -> Option<String> {
        let rest = ["http://", "https://"].iter().find_map(|scheme| {
            self.base_url
                .get(..scheme.len())
                .filter(|start| start.eq_ignore_ascii_case(scheme))
                .map(|_| &self.base_url[scheme.len()..])
        });
        match rest {
            None => Some(format!(
                "the base URL `{}` has no http:// or https:// scheme (give it as http://HOST:PORT or https://HOST, with or without /v1)",
                self.base_url
            )),
            Some(rest) if rest.split(['/', '?', '#']).next().is_none_or(str::is_empty) => {
                Some(format!("the base URL `{}` names no host", self.base_url))
            }
            Some(_) => None,
        }
    }

    /// The host of the base URL (without the port), lowercased; empty when it has none.
    pub(crate) fn host(&self) -> String {
        let rest = self.base_url.split_once("://").map_or(self.base_url.as_str(), |(_, r)| r);
        let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
        let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
        let host = if host.starts_with('[') {
            host.split_inclusive(']').next().unwrap_or(host)
        } else {
            host.split(':').next().unwrap_or(host)
        };
        host.to_ascii_lowercase()
    }

    /// The base URL, without `/v1` or a trailing slash.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// The whole-request timeout.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Whether an API key is sent.
    pub fn has_api_key(&self) -> bool {
        self.api_key.is_some()
    }

    /// The URL of `path` under `/v1` (`chat/completions`, `models`, …).
    pub fn url(&self, path: &str) -> String {
        format!("{}/v1/{}", self.base_url, path.trim_start_matches('/'))
    }

    /// Posts `body` as JSON to [`url`](Endpoint::url)`(path)` and reads the JSON answer.
    ///
    /// # Errors
    ///
    /// [`HttpError`]: the server cannot be reached, does not answer in time, answers with a
    /// status outside 2xx (quoting the start of the body, keeping the whole body and the
    /// `retry-after` header), or with a body that is not JSON.
    pub fn post_json(&self, path: &str, body: &Value) -> Result<Value, HttpError> {
        let url = self.url(path);
        let (status, retry_after, mut answer) = self.send(&url, body, "application/json")?;
        let text = answer.read_to_string().map_err(|e| {
            self.transport(&url, e, HttpErrorKind::BrokenOff, "the answer broke off")
        })?;
        if !(200..300).contains(&status) {
            return Err(status_error(url, status, text, retry_after));
        }
        serde_json::from_str(&text).map_err(|e| HttpError {
            status: Some(status),
            body: Some(text.clone()),
            ..failure(url, HttpErrorKind::NotJson, "the answer is not JSON", Some(Box::new(e)))
        })
    }

    /// Posts `body` as JSON to [`url`](Endpoint::url)`(path)`, asking for server-sent events,
    /// and gives the answer's body to read as it arrives (within the endpoint's timeout for
    /// the whole request).
    ///
    /// # Errors
    ///
    /// As [`post_json`](Endpoint::post_json), for an answer with a status outside 2xx (read
    /// whole) or no answer at all; reading the stream fails with an [`std::io::Error`].
    pub fn post_stream(
        &self,
        path: &str,
        body: &Value,
    ) -> Result<Box<dyn std::io::BufRead + Send>, HttpError> {
        let url = self.url(path);
        let (status, retry_after, mut answer) = self.send(&url, body, "text/event-stream")?;
        if !(200..300).contains(&status) {
            let text = answer.read_to_string().map_err(|e| {
                self.transport(&url, e, HttpErrorKind::BrokenOff, "the answer broke off")
            })?;
            return Err(status_error(url, status, text, retry_after));
        }
        Ok(Box::new(std::io::BufReader::new(answer.into_reader())))
    }

    /// Sends the request: the status, the `retry-after`, and the body to read.
    fn send(
        &self,
        url: &str,
        body: &Value,
        accept: &str,
    ) -> Result<(u16, Option<Duration>, ureq::Body), HttpError> {
        let mut request = self
            .agent
            .post(url)
            .header("Content-Type", "application/json")
            .header("Accept", accept);
        if let Some(key) = &self.api_key {
            request = request.header("Authorization", &format!("Bearer {key}"));
        }
        for (name, value) in &self.headers {
            request = request.header(name, value);
        }
        let response = request.send(body.to_string()).map_err(|e| {
            self.transport(url, e, HttpErrorKind::Unreachable, "cannot reach the server")
        })?;
        let status = response.status().as_u16();
        let retry_after = response
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(parse_retry_after);
        Ok((status, retry_after, response.into_body()))
    }

    /// The error of a transport failure: a timeout, or `kind` saying `what`.
    fn transport(&self, url: &str, e: ureq::Error, kind: HttpErrorKind, what: &str) -> HttpError {
        match e {
            ureq::Error::Timeout(_) => failure(
                url.to_owned(),
                HttpErrorKind::Timeout,
                &format!("no answer within {:?}", self.timeout),
                Some(Box::new(e)),
            ),
            other => failure(url.to_owned(), kind, what, Some(Box::new(other))),
        }
    }
}

/// A failure of `kind` at `url`, without an answer's details.
fn failure(url: String, kind: HttpErrorKind, reason: &str, source: Option<BoxError>) -> HttpError {
    HttpError {
        url,
        kind,
        reason: reason.to_owned(),
        status: None,
        body: None,
        retry_after: None,
        source,
    }
}

/// The error of an answer with a status outside 2xx, quoting the start of its body.
fn status_error(
    url: String,
    status: u16,
    text: String,
    retry_after: Option<Duration>,
) -> HttpError {
    let start: String = text.chars().take(EXCERPT_CHARS).collect();
    HttpError {
        status: Some(status),
        body: Some(text),
        retry_after,
        ..failure(url, HttpErrorKind::Status, &format!("HTTP {status}: {start}"), None)
    }
}

/// Reads a `retry-after` header given in seconds (`2`, `1.5`); `None` for the HTTP-date form
/// or anything else.
fn parse_retry_after(value: &str) -> Option<Duration> {
    let seconds: f64 = value.trim().parse().ok()?;
    Duration::try_from_secs_f64(seconds).ok()
}

/// The agent every request of an endpoint goes through: HTTP error statuses are answers to
/// read, not transport errors.
fn agent(timeout: Duration, connect_timeout: Duration) -> ureq::Agent {
    ureq::Agent::config_builder()
        .timeout_global(Some(timeout))
        .timeout_connect(Some(connect_timeout))
        .http_status_as_error(false)
        .build()
        .into()
}

impl fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Endpoint")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "…"))
            .field("headers", &self.headers.iter().map(|(name, _)| name).collect::<Vec<_>>())
            .field("timeout", &self.timeout)
            .field("connect_timeout", &self.connect_timeout)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::parse_retry_after;

    #[track_caller]
    fn check(header: &str, expected: Option<Duration>) {
        assert_eq!(parse_retry_after(header), expected, "{header:?}");
    }

    #[test]
    fn retry_after_is_read_in_seconds() {
        check("2", Some(Duration::from_secs(2)));
        check(" 1.5 ", Some(Duration::from_millis(1_500)));
        check("0", Some(Duration::ZERO));
        check("-1", None);
        check("NaN", None);
        check("Wed, 21 Oct 2015 07:28:00 GMT", None);
    }
}
