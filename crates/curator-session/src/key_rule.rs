//! The rule every store applies to session keys before it writes under one.

use crate::SessionKey;

impl SessionKey {
    /// Checks the key against the rule every store applies before it writes under a key: not
    /// empty, not only white space, no control characters (a NUL, a newline, a tab), at most
    /// [`MAX_LEN`](SessionKey::MAX_LEN) bytes.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::session::{Error, SessionKey};
    ///
    /// assert!(SessionKey::new("user-42").check().is_ok());
    /// assert!(matches!(SessionKey::new(" ").check(), Err(Error::BadKey { .. })));
    /// let err = SessionKey::new("a\0b").check().unwrap_err();
    /// assert_eq!(err.to_string(), r"session key `a\u{0}b`: holds a control character (U+0000) at byte 1");
    /// assert!(SessionKey::new("k".repeat(257)).check().unwrap_err().to_string().contains("longer than 256 bytes"));
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::BadKey`](crate::Error::BadKey) naming the key (shortened) and the rule it
    /// breaks.
    pub fn check(&self) -> crate::Result<()> {
        let key = self.as_str();
        let rule = if key.is_empty() {
            "is empty".to_owned()
        } else if key.trim().is_empty() {
            "is only white space".to_owned()
        } else if let Some((at, c)) = key.char_indices().find(|(_, c)| c.is_control()) {
            format!("holds a control character (U+{:04X}) at byte {at}", u32::from(c))
        } else if key.len() > Self::MAX_LEN {
            format!("is {} bytes, longer than {} bytes", key.len(), Self::MAX_LEN)
        } else {
            return Ok(());
        };
        Err(crate::Error::BadKey { key: self.shortened(40), rule })
    }
}
