//! `SessionKey`: the caller's name for a line of conversations (a thread, user or job id).

use std::convert::Infallible;
use std::fmt::{self, Write as _};
use std::str::FromStr;

/// The name a caller gives a line of conversations: a thread, user or job id. Every
/// evaluation a store holds belongs to one key, and resuming is always scoped to a key, so
/// several workers (or several users) can share one store without ever taking over each
/// other's conversations.
///
/// Callers with a single conversation use [`SessionKey::default()`], the key
/// [`SessionKey::DEFAULT`] (`"default"`); files and snapshots written before keys existed
/// hold their evaluations under it.
///
/// # Examples
///
/// ```
/// use curator::session::SessionKey;
///
/// let key = SessionKey::new("user-42");
/// assert_eq!(key.as_str(), "user-42");
/// assert_eq!(SessionKey::default().as_str(), SessionKey::DEFAULT);
/// assert_eq!("job-7".parse::<SessionKey>()?, SessionKey::from("job-7"));
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct SessionKey(String);

impl SessionKey {
    /// The key of callers who keep one conversation, and of everything recorded before
    /// keys existed.
    pub const DEFAULT: &'static str = "default";

    /// A key with this text.
    pub fn new(key: impl Into<String>) -> Self {
        Self(key.into())
    }

    /// The key's text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether this is the [`DEFAULT`](SessionKey::DEFAULT) key.
    pub fn is_default(&self) -> bool {
        self.0 == Self::DEFAULT
    }

    /// The longest key, in bytes of UTF-8: longer ones are refused by every store.
    pub const MAX_LEN: usize = 256;

    /// The key as one short line: at most `chars` characters (an ellipsis and the full
    /// length in bytes when cut), control characters escaped.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::session::SessionKey;
    ///
    /// assert_eq!(SessionKey::new("job\n7").shortened(20), r"job\n7");
    /// assert_eq!(SessionKey::new("x".repeat(5_000)).shortened(8), "xxxxxxxx… (5000 bytes)");
    /// ```
    pub fn shortened(&self, chars: usize) -> String {
        let mut out = String::new();
        for (n, c) in self.0.chars().enumerate() {
            if n == chars {
                let _ = write!(out, "… ({} bytes)", self.0.len());
                return out;
            }
            if c.is_control() {
                out.extend(c.escape_default());
            } else {
                out.push(c);
            }
        }
        out
    }
}

impl Default for SessionKey {
    fn default() -> Self {
        Self(Self::DEFAULT.to_owned())
    }
}

impl fmt::Display for SessionKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for SessionKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0, f)
    }
}

impl FromStr for SessionKey {
    type Err = Infallible;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(Self::new(s))
    }
}

impl From<&str> for SessionKey {
    fn from(key: &str) -> Self {
        Self::new(key)
    }
}

impl From<String> for SessionKey {
    fn from(key: String) -> Self {
        Self(key)
    }
}

impl From<&SessionKey> for SessionKey {
    fn from(key: &SessionKey) -> Self {
        key.clone()
    }
}

impl AsRef<str> for SessionKey {
    fn as_ref(&self) -> &str {
        &self.0
    }
}
