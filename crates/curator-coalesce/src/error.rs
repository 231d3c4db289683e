//! The error type of curator-coalesce.

/// The result type of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What can go wrong when a program's names are resolved.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// No user definition, tool or input has this name.
    #[error("undefined symbol '{name}'")]
    Undefined {
        /// The name as the program wrote it.
        name: String,
    },
    /// A bare name that is both a tool and an input, with no user definition to prefer.
    #[error("ambiguous reference '{name}': both tool/{name} and data/{name} exist")]
    Ambiguous {
        /// The bare name.
        name: String,
    },
}
