//! The role of a message's author.

use std::fmt;

/// Who wrote a message.
///
/// Serialised in lowercase, as both providers spell it.
///
/// # Examples
///
/// ```
/// use curator::model::Role;
///
/// assert_eq!(serde_json::to_string(&Role::Tool)?, "\"tool\"");
/// assert_eq!("assistant".parse::<Role>()?, Role::Assistant);
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Instructions that frame the whole conversation.
    System,
    /// The person (or program) the agent works for.
    User,
    /// The model.
    Assistant,
    /// The answer to one tool call.
    Tool,
}

impl Role {
    /// The lowercase name of the role, as providers spell it.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(curator::model::Role::User.as_str(), "user");
    /// ```
    pub const fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The error of parsing a [`Role`] from text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown role `{0}` (expected system, user, assistant or tool)")]
pub struct ParseRoleError(pub String);

impl std::str::FromStr for Role {
    type Err = ParseRoleError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "system" => Ok(Role::System),
            "user" => Ok(Role::User),
            "assistant" => Ok(Role::Assistant),
            "tool" => Ok(Role::Tool),
            other => Err(ParseRoleError(other.to_owned())),
        }
    }
}
