//! Newtype identifiers for recorded messages and evaluations.

use std::fmt;
use std::str::FromStr;

use uuid::Uuid;

use crate::{Error, Result};

macro_rules! uuid_id {
    ($(#[$doc:meta])* $name:ident, $kind:literal) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
        #[serde(transparent)]
        pub struct $name(Uuid);

        impl $name {
            /// A fresh identifier: a time-ordered UUID (version 7), unique like a random one
            /// (it carries 74 random bits) and ordered by creation time, which keeps the
            /// indexes of persistent stores compact (appends land at the end of the index
            /// instead of at random places).
            pub fn new() -> Self {
                Self(Uuid::now_v7())
            }

            /// Wraps an existing UUID.
            pub const fn from_uuid(uuid: Uuid) -> Self {
                Self(uuid)
            }

            /// The UUID inside.
            pub const fn as_uuid(&self) -> &Uuid {
                &self.0
            }
        }

        impl Default for $name {
            fn default() -> Self {
                Self::new()
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Display::fmt(&self.0, f)
            }
        }

        impl FromStr for $name {
            type Err = Error;

            fn from_str(s: &str) -> Result<Self> {
                Uuid::parse_str(s).map(Self).map_err(|e| Error::InvalidId {
                    kind: $kind,
                    value: s.to_owned(),
                    reason: e.to_string(),
                })
            }
        }

        impl From<Uuid> for $name {
            fn from(uuid: Uuid) -> Self {
                Self(uuid)
            }
        }
    };
}

uuid_id!(
    /// The identity of one recorded message, unique across all evaluations.
    ///
    /// Stores use it to make appends idempotent.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::model::MessageId;
    ///
    /// let id = MessageId::new();
    /// let parsed: MessageId = id.to_string().parse()?;
    /// assert_eq!(id, parsed);
    /// assert!("not-a-uuid".parse::<MessageId>().is_err());
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    MessageId,
    "message id"
);

uuid_id!(
    /// The identity of one evaluation: a single run of an agent loop from its system
    /// message on. Every entry of the run carries it.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::model::EvaluationId;
    ///
    /// let id: EvaluationId = "67e55044-10b1-426f-9247-bb680e5fe0c8".parse()?;
    /// assert_eq!(id.to_string(), "67e55044-10b1-426f-9247-bb680e5fe0c8");
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    EvaluationId,
    "evaluation id"
);
