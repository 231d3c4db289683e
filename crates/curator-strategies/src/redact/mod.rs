//! `Redactor`: replace secrets in the view with `[REDACTED:<kind>]`.

use std::borrow::Cow;
use std::sync::Arc;

use std::sync::OnceLock;

use curator_model::{Content, Message, Part};
use regex::Regex;
use serde_json::Value;

use crate::map::stable_hash;
use crate::{CurationContext, Error, History, HistoryManager, MessageMap, Result, View};

#[cfg(test)]
mod coverage;
mod literals;
mod rules;
#[cfg(test)]
mod sets;
mod views;

use rules::RuleSet;

/// curator's own patterns, checked before the bundled rule set (their names are the kinds
/// earlier releases reported): `(kind, regex)`. A pattern with a group named `secret`
/// replaces only that group (so `Bearer`, `password=` or the URL around a password stays
/// readable).
const OWN: &[(&str, &str)] = &[
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
    // The user name may be empty (`redis://:password@host`).
    ("url_password", r"\b[a-zA-Z][a-zA-Z0-9+.\-]*://[^\s:/@]*:(?P<secret>[^\s@/]+)@"),
    // A JSON member (`"password": "…"`) has a quote between the key and the colon.
    (
        "password_assignment",
        r#"(?i)\b(?:[a-z0-9_]*_)?(?:[a-z]{0,8}(?:password|passwd)|pwd)["']?[ \t]*[=:][ \t]*["']?(?P<secret>[^\s"'(){}\[\];,<>]{4,})(?:["'\s;,]|$)"#,
    ),
    // A quoted passphrase (words with spaces between them) is taken whole, quotes left.
    (
        "password_assignment",
        r#"(?i)\b(?:[a-z0-9_]*_)?(?:[a-z]{0,8}(?:password|passwd)|pwd)"?[ \t]*[=:][ \t]*"(?P<secret>[^"\s][^"\n]*?\s[^"\n]*?[^"\s])""#,
    ),
    (
        "password_assignment",
        r"(?i)\b(?:[a-z0-9_]*_)?(?:[a-z]{0,8}(?:password|passwd)|pwd)'?[ \t]*[=:][ \t]*'(?P<secret>[^'\s][^'\n]*?\s[^'\n]*?[^'\s])'",
    ),
    // A quoted value given to a `secret` (`client_secret`, `app_secret`, `secret`).
    (
        "secret_assignment",
        r#"(?i)(?:\b|_)secret["']?[ \t]*[=:][ \t]*["'](?P<secret>[^"'\s]{8,})["']"#,
    ),
    // A token in a URL's query (`?access_token=…&`).
    (
        "token_parameter",
        r"(?i)[?&](?:access_token|refresh_token|id_token|auth_token|api_key|apikey|client_secret|sig)=(?P<secret>[^&#\s\x22']{8,})",
    ),
    // MySQL's password written against `-p` on a command line (`mysql -u root -pS3cret`).
    (
        "mysql_password",
        r"(?:^|[\s;&|(\x22'])(?:mysql|mysqldump|mysqladmin|mariadb)\b[^\n]*?\s-p(?P<secret>[^\s'\x22]{4,})",
    ),
    // The value of a request's or response's first cookie (a session id).
    (
        "cookie_value",
        r"(?i)(?:^|[\s\x22'])(?:set-)?cookie:\s*[^=\s;]+=(?P<secret>[^;\s\x22']{12,})",
    ),
    // The maintained sets miss the next three. kingfisher's Discord rule wants exactly 24
    // characters before the first dot and 27 after the second, where ids since 2022 give 26
    // and tokens end in 38; and it is only tried where "discord" is written.
    ("discord_bot_token", r"\b[MNO][A-Za-z0-9_-]{23,25}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,38}\b"),
    // kingfisher's Django rule wants a letter of `DJANGO` before `SECRET_KEY` and leaves
    // `(`, `)`, `=` and `+` out of the key's alphabet; the prefix Django writes is certain.
    ("django_secret_key", r"\bdjango-insecure-[a-z0-9!@#$%^&*(\-_=+)]{40,}"),
    // A `SECRET_KEY` (Django's, Flask's, any framework's) assigned a long literal.
    (
        "secret_key_assignment",
        r#"(?i)\b(?:[a-z0-9_]*_)?secret_key["']?[ \t]*[=:][ \t]*["']?(?P<secret>[^\s"']{16,})"#,
    ),
    // Neither set knows the key id of a GCP service account file.
    ("gcp_private_key_id", r#"(?i)\bprivate_key_id["']?\s*[:=]\s*["']?(?P<secret>[0-9a-f]{40})\b"#),
];

/// Values that stand for a secret without being one: a found "secret" equal to one of these
/// (ignoring case), shorter than 4 characters, or a template variable (`$X`, `${X}`, `<x>`,
/// `{{x}}`, `%(x)s`) is left as it is, so that examples and test fixtures stay readable.
const PLACEHOLDERS: &[&str] = &[
    "password", "passwd", "pass", "secret", "changeme", "example", "test", "testing", "dummy",
    "fake", "foobar", "xxxx", "xxxxxx", "xxxxxxxx", "****", "********", "none", "null", "true",
    "false", "redacted", "hunter2",
];

/// Whether a found secret is a placeholder (see [`PLACEHOLDERS`]).
fn is_placeholder(secret: &str) -> bool {
    let lower = secret.to_lowercase();
    secret.chars().count() < 4
        || PLACEHOLDERS.contains(&lower.as_str())
        || lower.starts_with('$')
        || lower.starts_with('<')
        || lower.starts_with("{{")
        || lower.starts_with("%(")
        || lower.chars().all(|c| c == '*' || c == 'x' || c == '.')
}

/// The bundled rule set alone: the rules of gitleaks (MIT) and kingfisher (Apache-2.0) as
/// the `secrets_scanner` crate ships them merged (the tests read its rules by index).
#[cfg(test)]
fn bundled() -> Option<&'static RuleSet> {
    static RULES: OnceLock<Option<RuleSet>> = OnceLock::new();
    RULES.get_or_init(|| RuleSet::from_toml(secrets_scanner::rules::BUNDLED_RULES).ok()).as_ref()
}

/// Replaces secrets in every message of the view with `[REDACTED:<kind>]`: the text (each
/// text part in place, with its provider fields), tool-call arguments (inside their string
/// values, so that they stay valid JSON), and the text of documents. Thinking blocks are
/// left as they are: the provider checks their signatures.
///
/// # Rules
///
/// Three sets, in order of precedence where two find overlapping secrets:
///
/// 1. your patterns ([`with_pattern`](Redactor::with_pattern));
/// 2. curator's own: `openai_key`, `anthropic_key`, `aws_access_key`, `github_token`,
///    `slack_token`, `bearer_token` (the token after `Bearer`), `jwt`, `pem_private_key`,
///    `url_password` (the password in `scheme://user:password@host`, the user name may be
///    empty), `password_assignment` (the value in `PASSWORD=…`, `PGPASSWORD='…'`,
///    `db_pwd: …`, `"password": "…"`, a quoted passphrase whole), `secret_assignment` (a
///    quoted value of 8 characters or more given to `secret`, `client_secret`, …),
///    `token_parameter` (`?access_token=…`, `&api_key=…`, `&sig=…` in a URL),
///    `mysql_password` (`mysql … -pS3cret`), `cookie_value` (the first cookie of a
///    `Cookie:` or `Set-Cookie:` header), `discord_bot_token`, `django_secret_key`
///    (`django-insecure-…`), `secret_key_assignment` (a literal of 16 characters or more
///    assigned to `SECRET_KEY`) and `gcp_private_key_id`;
/// 3. the maintained rule set of the gitleaks scanner (MIT) merged with `MongoDB`'s
///    kingfisher rules (Apache-2.0), nearly 1,000 rules, as the `secrets_scanner` crate ships
///    them; kinds are their rule ids (`stripe-access-token`, `gcp-api-key`, …). Each rule's
///    keywords, and the literals every match of its expression holds, are found in one pass
///    over the text; a rule is not tried on a text that lacks every literal of a set its
///    expression needs (kingfisher's `line` rule needs one of `secret`, `key`, `token`, …);
///    its expression is compiled the first time one of them asks for it, and its entropy
///    threshold and allow-lists apply.
///
/// The rules also read the lines of a text that hold JSON escapes decoded (`\/`, `\"`,
/// `\u0069`), and tokens wrapped across lines (or by a shell's `\` continuation) joined; what
/// they find there replaces the span of the original it stands for, so that JSON text stays
/// valid, and the line breaks (and continuations) of a wrapped secret stay where they were.
///
/// The record keeps the original: redaction only changes what is sent, and each message is
/// redacted once per history position (memoised).
///
/// # Errors
///
/// [`with_pattern`](Redactor::with_pattern) fails with [`Error::Pattern`] for a regular
/// expression that does not compile.
///
/// # Examples
///
/// ```
/// use curator::model::Message;
/// use curator::strategies::{CurationContext, HistoryManagerExt, Redactor};
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
    /// Your patterns, as given and as a rule set.
    patterns: Vec<(String, Regex)>,
    custom: RuleSet,
    /// Whether curator's own rules and the bundled set apply.
    builtin: bool,
    key: u64,
}

/// The built-in rules, read once per process on first use: curator's own, then the bundled
/// set, in one set so that one pass over a text finds the keywords of both; with the number
/// of curator's own (the first rules of the set). The bundled set is left out if it cannot
/// be read.
fn builtin() -> &'static (RuleSet, usize) {
    static RULES: OnceLock<(RuleSet, usize)> = OnceLock::new();
    RULES.get_or_init(|| {
        let own: Vec<(String, Regex)> = OWN
            .iter()
            .filter_map(|(kind, pattern)| {
                Regex::new(pattern).ok().map(|re| ((*kind).to_owned(), re))
            })
            .collect();
        let count = own.len();
        let set =
            RuleSet::from_patterns_then_toml(own.clone(), secrets_scanner::rules::BUNDLED_RULES)
                .unwrap_or_else(|_| RuleSet::from_patterns(own));
        (set, count)
    })
}

impl Redactor {
    /// A redactor with curator's own rules and the bundled rule set.
    pub fn new() -> Self {
        Self::build(Vec::new(), true)
    }

    /// A redactor with no rule at all, to add only your own.
    pub fn empty() -> Self {
        Self::build(Vec::new(), false)
    }

    fn build(patterns: Vec<(String, Regex)>, builtin: bool) -> Self {
        let mut parts: Vec<&[u8]> = vec![b"redact", if builtin { b"builtin" } else { b"own only" }];
        // The bundled rules can change with the crate that ships them; so does the key.
        let bundled_len = secrets_scanner::rules::BUNDLED_RULES.len().to_le_bytes();
        parts.push(&bundled_len);
        for (kind, re) in &patterns {
            parts.push(kind.as_bytes());
            parts.push(re.as_str().as_bytes());
        }
        let key = stable_hash(&parts);
        let custom = RuleSet::from_patterns(patterns.clone());
        Self { map: Arc::new(Redact { patterns, custom, builtin, key }) }
    }

    /// Adds a pattern whose matches become `[REDACTED:<kind>]` (only the group named
    /// `secret` when the pattern has one). Your patterns take precedence over the built-in
    /// rules where both find a secret.
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
        Ok(Self::build(patterns, self.map.builtin))
    }

    /// Redacts one text, borrowing it when there is nothing to redact.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::strategies::Redactor;
    ///
    /// let r = Redactor::new();
    /// assert_eq!(r.redact("postgres://app:s3cr3t-Pa55@db:5432/x"), "postgres://app:[REDACTED:url_password]@db:5432/x");
    /// assert_eq!(r.redact("Authorization: Bearer abcdefghijklmnop1234"), "Authorization: Bearer [REDACTED:bearer_token]");
    /// // JSON text with escapes, and a token wrapped across two lines.
    /// assert_eq!(
    ///     r.redact(r#"{"note": "sk_l\u0069ve_51H8kZQ2eZvKYlo2C9xYz7ABCdefGHIjkl"}"#),
    ///     r#"{"note": "[REDACTED:stripe-access-token]"}"#,
    /// );
    /// assert_eq!(
    ///     r.redact("token ghp_R4nd0mT0k3nV4lu3\n    ThatIsThirtySix12345 ok"),
    ///     "token [REDACTED:github_token]\n ok", // the line break stays
    /// );
    /// ```
    pub fn redact<'t>(&self, text: &'t str) -> Cow<'t, str> {
        self.map.redact(text)
    }
}

impl Redactor {
    /// Redacts one message (its text and parts, and its tool calls' arguments); `None` when
    /// there is nothing to redact.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::model::Message;
    /// use curator::strategies::Redactor;
    ///
    /// let r = Redactor::new();
    /// let redacted = r.redact_message(&Message::user("key sk-proj-abcdefghijklmnopqrstuvwx"));
    /// assert_eq!(redacted.map(|m| m.text().into_owned()).as_deref(), Some("key [REDACTED:openai_key]"));
    /// assert_eq!(r.redact_message(&Message::user("nothing secret")), None);
    /// ```
    pub fn redact_message(&self, message: &Message) -> Option<Message> {
        self.map.map(message, None, &History::new())
    }
}

impl Default for Redactor {
    fn default() -> Self {
        Self::new()
    }
}

impl Redact {
    /// (start, end, precedence, kind) of every secret in `text`, by every rule set.
    fn findings(&self, text: &str) -> Vec<(usize, usize, u8, &str)> {
        // Your own patterns are taken as they are.
        let mut found: Vec<(usize, usize, u8, &str)> = (self.custom.find(text).into_iter())
            .map(|f| (f.start, f.end, 0, self.custom.id(f.rule)))
            .collect();
        if self.builtin {
            // curator's own rules before the bundled ones; both skip placeholders.
            let (set, own) = builtin();
            found.extend(
                set.find(text)
                    .into_iter()
                    .filter(|f| !is_placeholder(&text[f.start..f.end]))
                    .map(|f| (f.start, f.end, if f.rule < *own { 1 } else { 2 }, set.id(f.rule))),
            );
        }
        found
    }

    fn redact<'t>(&self, text: &'t str) -> Cow<'t, str> {
        let mut found = self.findings(text);
        // The same rules read the text with its JSON escapes decoded and its wrapped tokens
        // joined; what they find there replaces the span of the original it stands for.
        for view in views::derived(text) {
            for (start, end, precedence, kind) in self.findings(view.text()) {
                if let Some((from, to)) = view.original_span(text, start, end) {
                    found.push((from, to, precedence, kind));
                }
            }
        }
        if found.is_empty() {
            return Cow::Borrowed(text);
        }
        // The set that takes precedence first, then the earliest, then the longest: each
        // finding is kept unless it overlaps one already kept.
        found.sort_by_key(|&(start, end, precedence, kind)| {
            (precedence, start, std::cmp::Reverse(end), kind)
        });
        let mut kept: Vec<(usize, usize, u8, &str)> = Vec::with_capacity(found.len());
        for finding in found {
            if kept.iter().all(|k| finding.1 <= k.0 || finding.0 >= k.1) {
                kept.push(finding);
            }
        }
        kept.sort_unstable_by_key(|&(start, ..)| start);
        // A secret may take the rest of its JSON value, up to the next secret at most.
        for k in 0..kept.len() {
            let limit = kept.get(k + 1).map_or(text.len(), |next| next.0);
            let end = views::whole_value_end(text, kept[k].1);
            if end > kept[k].0 && end <= limit {
                kept[k].1 = end;
            }
        }
        let found = kept;
        let mut out = String::with_capacity(text.len());
        let mut done = 0;
        for (start, end, _, kind) in found {
            out.push_str(&text[done..start]);
            out.push_str("[REDACTED:");
            out.push_str(kind);
            out.push(']');
            // A secret wrapped over lines leaves its line breaks (and a shell's continuation
            // before one): the lines around it stay where they were.
            let span = &text[start..end];
            out.extend(span.char_indices().filter_map(|(i, c)| match c {
                '\n' | '\r' => Some(c),
                '\\' if span[i + 1..].starts_with(['\n', '\r']) => Some(c),
                _ => None,
            }));
            done = end;
        }
        out.push_str(&text[done..]);
        Cow::Owned(out)
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

    /// Tool-call arguments with their secrets redacted in the text as it stands: keys stay
    /// beside their values (a `"password": "..."` pair is seen as one), and everything that
    /// holds no secret keeps its bytes (numbers' text, key order, spacing). When that would
    /// break JSON arguments (a match across a string's quotes), each string value is
    /// redacted on its own instead, still in place.
    fn redact_arguments(&self, arguments: &str) -> Option<String> {
        let is_json = |text: &str| serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok();
        if !is_json(arguments) {
            return match self.redact(arguments) {
                Cow::Owned(redacted) => Some(redacted),
                Cow::Borrowed(_) => None,
            };
        }
        // The text first (keys beside their values), unless that breaks the JSON; then each
        // string on its own, unescaped, for what only shows without its escapes (a secret
        // after `\n\t` in the text).
        let text = match self.redact(arguments) {
            Cow::Owned(redacted) if is_json(&redacted) => Some(redacted),
            _ => None,
        };
        let base = text.as_deref().unwrap_or(arguments);
        self.redact_strings_in_place(base).or(text)
    }

    /// `json` with each string literal's content redacted on its own and written back in
    /// place (escaped again); `None` when no string held a secret.
    fn redact_strings_in_place(&self, json: &str) -> Option<String> {
        let mut out = String::with_capacity(json.len());
        let mut done = 0;
        let mut changed = false;
        let bytes = json.as_bytes();
        let mut at = 0;
        while at < bytes.len() {
            if bytes[at] != b'"' {
                at += 1;
                continue;
            }
            // The closing quote: the next one not escaped.
            let mut end = at + 1;
            while end < bytes.len() && bytes[end] != b'"' {
                end += if bytes[end] == b'\\' { 2 } else { 1 };
            }
            let Some(literal) = json.get(at..=end.min(bytes.len() - 1)) else { break };
            if let Ok(text) = serde_json::from_str::<String>(literal)
                && let Cow::Owned(redacted) = self.redact(&text)
                && let Ok(escaped) = serde_json::to_string(&redacted)
            {
                out.push_str(&json[done..at]);
                out.push_str(&escaped);
                done = end + 1;
                changed = true;
            }
            at = end + 1;
        }
        changed.then(|| {
            out.push_str(&json[done.min(json.len())..]);
            out
        })
    }
}

impl Redact {
    /// A part with its text redacted in place (provider fields kept); documents have their
    /// text redacted inside the block; other parts are left as they are.
    fn redact_part(&self, part: &Part) -> Option<Part> {
        match part {
            Part::Text { text, extra } => match self.redact(text) {
                Cow::Owned(text) => Some(Part::Text { text, extra: extra.clone() }),
                Cow::Borrowed(_) => None,
            },
            Part::Raw { format, value }
                if value.get("type").and_then(Value::as_str) == Some("document") =>
            {
                let mut value = value.clone();
                let mut changed = false;
                for field in ["title", "context"] {
                    changed |= value.get_mut(field).is_some_and(|v| self.redact_value(v));
                }
                if let Some(source) = value.get_mut("source") {
                    match source.get("type").and_then(Value::as_str) {
                        Some("text") => {
                            changed |= source.get_mut("data").is_some_and(|v| self.redact_value(v));
                        }
                        Some("content") => {
                            changed |=
                                source.get_mut("content").is_some_and(|v| self.redact_value(v));
                        }
                        _ => {}
                    }
                }
                changed.then_some(Part::Raw { format: *format, value })
            }
            _ => None,
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
                let redacted: Vec<Option<Part>> =
                    parts.iter().map(|p| self.redact_part(p)).collect();
                redacted.iter().any(Option::is_some).then(|| {
                    Content::Parts(
                        parts
                            .iter()
                            .zip(redacted)
                            .map(|(part, new)| new.unwrap_or_else(|| part.clone()))
                            .collect(),
                    )
                })
            }
            None => None,
        };
        let calls: Vec<Option<String>> =
            message.tool_calls().iter().map(|c| self.redact_arguments(c.arguments())).collect();
        if content.is_none() && calls.iter().all(Option::is_none) {
            return None;
        }
        let mut out = match content {
            Some(content) => message.clone_with_content(Some(content)),
            None => message.clone(),
        };
        if calls.iter().any(Option::is_some) {
            let mut calls = calls.into_iter();
            out = out.map_tool_call_arguments(|_| calls.next().flatten());
        }
        Some(out)
    }

    fn memo_key(&self, _pos: usize) -> Option<u64> {
        Some(self.key)
    }

    fn edits_system(&self) -> bool {
        true
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
