//! `Redactor`: replace secrets in the view with `[REDACTED:<kind>]`.

use std::borrow::Cow;
use std::sync::Arc;

use curator_model::{Content, Message, Part, ToolCall};
use regex::Regex;
use serde_json::Value;

use crate::map::stable_hash;
use crate::{CurationContext, Error, History, HistoryManager, MessageMap, Result, View};

/// The built-in secret patterns: `(kind, regex)`. A pattern with a group named `secret`
/// replaces only that group (so `Bearer` or the URL around a password stays readable).
const BUILT_IN: &[(&str, &str)] = &[
    (
        "pem_private_key",
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----[\s\S]*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----",
    ),
    ("anthropic_key", r"\bsk-ant-[A-Za-z0-9]+-[A-Za-z0-9_\-]{20,}"),
    ("openai_key", r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}"),
    ("aws_access_key", r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[0-9A-Z]{16}\b"),
    ("github_token", r"\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})"),
    ("slack_token", r"\bxox[abposr]-[A-Za-z0-9\-]{10,}"),
    ("jwt", r"\beyJ[A-Za-z0-9_\-]{5,}\.eyJ[A-Za-z0-9_\-]{5,}\.[A-Za-z0-9_\-]{5,}"),
    ("bearer_token", r"(?i)\bbearer\s+(?P<secret>[A-Za-z0-9\-._~+/]{16,}=*)"),
    ("url_password", r"\b[a-zA-Z][a-zA-Z0-9+.\-]*://[^\s:/@]+:(?P<secret>[^\s@/]+)@"),
];

/// Replaces secrets in every message of the view (content and tool-call arguments)
/// with `[REDACTED:<kind>]`.
///
/// Built-in kinds: `openai_key`, `anthropic_key`, `aws_access_key`, `github_token`,
/// `slack_token`, `bearer_token` (the token after `Bearer`), `jwt`, `pem_private_key`, and
/// `url_password` (the password in `scheme://user:password@host`). Add your own with
/// [`with_pattern`](Redactor::with_pattern). Arguments that are JSON are redacted inside their
/// string values, so they stay valid JSON. The record keeps the original: redaction only
/// changes what is sent.
///
/// # Errors
///
/// [`with_pattern`](Redactor::with_pattern) fails with [`Error::Pattern`] for a regular
/// expression that does not compile.
///
/// # Examples
///
/// ```
/// use curator_model::Message;
/// use curator_strategies::{CurationContext, HistoryManagerExt, Redactor};
///
/// let redactor = Redactor::new().with_pattern("ticket", r"TICKET-\d+")?;
/// let messages = vec![Message::user("use key sk-proj-abcdefghijklmnopqrstuvwx for TICKET-42")];
/// let view = redactor.curate_messages(&messages, &CurationContext::default())?;
/// assert_eq!(view[0].text(), "use key [REDACTED:openai_key] for [REDACTED:ticket]");
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct Redactor {
    map: Arc<Redact>,
}

#[derive(Debug)]
struct Redact {
    patterns: Vec<(String, Regex)>,
    key: u64,
}

impl Redactor {
    /// A redactor with the built-in patterns.
    pub fn new() -> Self {
        let patterns = BUILT_IN
            .iter()
            .filter_map(|(kind, pattern)| {
                Regex::new(pattern).ok().map(|re| ((*kind).to_owned(), re))
            })
            .collect();
        Self::from_patterns(patterns)
    }

    /// A redactor with no pattern at all, to add only your own.
    pub fn empty() -> Self {
        Self::from_patterns(Vec::new())
    }

    fn from_patterns(patterns: Vec<(String, Regex)>) -> Self {
        let mut parts: Vec<&[u8]> = vec![b"redact"];
        for (kind, re) in &patterns {
            parts.push(kind.as_bytes());
            parts.push(re.as_str().as_bytes());
        }
        let key = stable_hash(&parts);
        Self { map: Arc::new(Redact { patterns, key }) }
    }

    /// Adds a pattern whose matches become `[REDACTED:<kind>]` (only the group named
    /// `secret` when the pattern has one).
    ///
    /// # Errors
    ///
    /// [`Error::Pattern`] when `pattern` is not a valid regular expression.
    pub fn with_pattern(self, kind: impl Into<String>, pattern: &str) -> Result<Self> {
        let kind = kind.into();
        let re = Regex::new(pattern)
            .map_err(|e| Error::Pattern { name: kind.clone(), source: Box::new(e) })?;
        let mut patterns = self.map.patterns.clone();
        patterns.push((kind, re));
        Ok(Self::from_patterns(patterns))
    }

    /// Redacts one text, borrowing it when there is nothing to redact.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator_strategies::Redactor;
    ///
    /// let r = Redactor::new();
    /// assert_eq!(r.redact("postgres://app:hunter2@db:5432/x"), "postgres://app:[REDACTED:url_password]@db:5432/x");
    /// assert_eq!(r.redact("Authorization: Bearer abcdefghijklmnop1234"), "Authorization: Bearer [REDACTED:bearer_token]");
    /// ```
    pub fn redact<'t>(&self, text: &'t str) -> Cow<'t, str> {
        self.map.redact(text)
    }
}

impl Default for Redactor {
    fn default() -> Self {
        Self::new()
    }
}

impl Redact {
    fn redact<'t>(&self, text: &'t str) -> Cow<'t, str> {
        let mut out = Cow::Borrowed(text);
        for (kind, re) in &self.patterns {
            if !re.is_match(&out) {
                continue;
            }
            let label = format!("[REDACTED:{kind}]");
            let replaced = if re.capture_names().any(|n| n == Some("secret")) {
                re.replace_all(&out, |caps: &regex::Captures<'_>| {
                    let whole = caps.get(0).map_or("", |m| m.as_str());
                    match (caps.get(0), caps.name("secret")) {
                        (Some(all), Some(secret)) => {
                            let (start, end) =
                                (secret.start() - all.start(), secret.end() - all.start());
                            format!("{}{label}{}", &whole[..start], &whole[end..])
                        }
                        _ => label.clone(),
                    }
                })
                .into_owned()
            } else {
                re.replace_all(&out, label.as_str()).into_owned()
            };
            out = Cow::Owned(replaced);
        }
        out
    }

    fn redact_value(&self, value: &mut Value) -> bool {
        match value {
            Value::String(s) => match self.redact(s) {
                Cow::Owned(r) => {
                    *s = r;
                    true
                }
                Cow::Borrowed(_) => false,
            },
            Value::Array(items) => {
                items.iter_mut().fold(false, |changed, v| self.redact_value(v) | changed)
            }
            Value::Object(map) => {
                map.values_mut().fold(false, |changed, v| self.redact_value(v) | changed)
            }
            _ => false,
        }
    }

    fn redact_arguments(&self, arguments: &str) -> Option<String> {
        if let Ok(mut value) = serde_json::from_str::<Value>(arguments) {
            return self.redact_value(&mut value).then(|| value.to_string());
        }
        match self.redact(arguments) {
            Cow::Owned(r) => Some(r),
            Cow::Borrowed(_) => None,
        }
    }
}

impl MessageMap for Redact {
    fn map(
        &self,
        message: &Message,
        _pos: Option<usize>,
        _history: &History<'_>,
    ) -> Option<Message> {
        let content = match message.content() {
            Some(Content::Text(text)) => match self.redact(text) {
                Cow::Owned(r) => Some(Content::Text(r)),
                Cow::Borrowed(_) => None,
            },
            Some(Content::Parts(parts)) => {
                let mut changed = false;
                let parts: Vec<Part> = parts
                    .iter()
                    .map(|p| match p.as_text().map(|t| self.redact(t)) {
                        Some(Cow::Owned(r)) => {
                            changed = true;
                            Part::text(r)
                        }
                        _ => p.clone(),
                    })
                    .collect();
                changed.then_some(Content::Parts(parts))
            }
            None => None,
        };
        let calls: Vec<Option<String>> =
            message.tool_calls().iter().map(|c| self.redact_arguments(c.arguments())).collect();
        if content.is_none() && calls.iter().all(Option::is_none) {
            return None;
        }
        let mut out = message.clone();
        if let Some(content) = content {
            out = out.with_content(Some(content));
        }
        if calls.iter().any(Option::is_some) {
            let new_calls: Vec<ToolCall> = message
                .tool_calls()
                .iter()
                .zip(calls)
                .map(|(c, r)| match r {
                    Some(args) => {
                        ToolCall::new(c.id(), c.name(), args).with_extra(c.extra().cloned())
                    }
                    None => c.clone(),
                })
                .collect();
            out = Message::assistant_with_calls(out.content().cloned(), new_calls)
                .with_extra(out.extra().cloned());
            if let Some(name) = message.name() {
                out = out.with_name(name);
            }
        }
        Some(out)
    }

    fn memo_key(&self, _pos: usize) -> Option<u64> {
        Some(self.key)
    }
}

impl HistoryManager for Redactor {
    fn curate<'h>(&self, view: View<'h>, _ctx: &CurationContext<'_>) -> Result<View<'h>> {
        Ok(view.with_map(self.map.clone()))
    }

    fn name(&self) -> Cow<'_, str> {
        Cow::Borrowed("redactor")
    }
}
