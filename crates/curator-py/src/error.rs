//! The Python exceptions and how Rust errors become them.
//!
//! Every exception is a `CuratorError` with a `kind` attribute: the Rust error's variant in
//! snake case (`missing_field`, `budget_too_small`, `config`, …), or, for what this crate
//! checks itself, a name of the same form (`wrong_type`, `ambiguous_format`); its message is
//! the Rust error's message, which names what was wrong and where.

use curator::model::Error as ModelError;
use curator::strategies::Error as StrategyError;
use pyo3::exceptions::{PyException, PyUserWarning};
use pyo3::prelude::*;

pyo3::create_exception!(
    curator_context,
    CuratorError,
    PyException,
    "Every error curator raises; `kind` names the Rust error's variant."
);
pyo3::create_exception!(
    curator_context,
    FormatError,
    CuratorError,
    "Messages that cannot be read or written in their format, or whose format cannot be told."
);
pyo3::create_exception!(
    curator_context,
    ConfigError,
    CuratorError,
    "A pipeline or an argument that cannot be read or built."
);
pyo3::create_exception!(
    curator_context,
    StoreError,
    CuratorError,
    "A session store that cannot be opened, read or written: an unreachable server, a busy or corrupt file, a bad session id."
);
pyo3::create_exception!(
    curator_context,
    BudgetTooSmall,
    CuratorError,
    "A token budget smaller than what curation never drops; `max_tokens` and `needed` say by how much."
);

pyo3::create_exception!(
    curator_context,
    UnsendableWarning,
    PyUserWarning,
    "Messages of the input no provider takes (a tool result answering no call, a call whose result never comes), left out of the view."
);

/// The `stacklevel` of a warning that points at the caller's line: the first Python frame,
/// from the innermost out, that is not the package's own (a module of `curator_context`).
/// Each entry point (`curate`, `trim_messages`, LangChain messages, the sessions) reaches the
/// extension through a different number of the package's functions, and a warning that
/// pointed inside the package would not say which call of the program raised it.
pub(crate) fn caller_level(py: Python<'_>) -> i32 {
    let Ok(mut frame) = py.import("sys").and_then(|sys| sys.call_method1("_getframe", (0,))) else {
        return 1;
    };
    let mut level = 1;
    while !frame.is_none() && level < 64 {
        let name = frame.getattr("f_globals").and_then(|globals| globals.get_item("__name__"));
        let ours = name
            .ok()
            .and_then(|name| name.extract::<String>().ok())
            .is_some_and(|name| name == "curator_context" || name.starts_with("curator_context."));
        if !ours {
            break;
        }
        level += 1;
        match frame.getattr("f_back") {
            Ok(back) => frame = back,
            Err(_) => break,
        }
    }
    level
}

/// Why a call failed, before it becomes a Python exception.
#[derive(Debug)]
pub(crate) enum Failure {
    /// Reading or writing messages failed in curator's formats.
    Model(ModelError),
    /// Building or running the pipeline failed.
    Strategy(StrategyError),
    /// The input is not what a message list can be (checked here, not in the formats).
    Input {
        /// The kind the exception carries.
        kind: &'static str,
        /// What was wrong, and where.
        message: String,
    },
    /// One item of several that cannot be read; `index` is its place among them.
    Item {
        /// The item's index in the call.
        index: usize,
        /// What reading it alone said (its index there is 0).
        error: ModelError,
    },
    /// A session store's error.
    Session(curator::session::Error),
    /// A store that cannot be opened, or a session's record that cannot be used.
    Store {
        /// The kind the exception carries.
        kind: &'static str,
        /// What was wrong, and where.
        message: String,
    },
    /// An argument or a pipeline text that cannot be used.
    Config {
        /// The kind the exception carries.
        kind: &'static str,
        /// What was wrong.
        message: String,
    },
}

impl From<ModelError> for Failure {
    fn from(error: ModelError) -> Self {
        Failure::Model(error)
    }
}

impl From<StrategyError> for Failure {
    fn from(error: StrategyError) -> Self {
        Failure::Strategy(error)
    }
}

impl From<curator::session::Error> for Failure {
    fn from(error: curator::session::Error) -> Self {
        Failure::Session(error)
    }
}

impl From<Failure> for PyErr {
    fn from(failure: Failure) -> Self {
        Python::attach(|py| failure.into_exception(py))
    }
}

impl Failure {
    /// The kind the exception carries.
    pub(crate) fn kind(&self) -> String {
        match self {
            Failure::Model(error) | Failure::Item { error, .. } => variant(error),
            Failure::Strategy(error) => variant(error),
            Failure::Session(error) => session_kind(error),
            Failure::Input { kind, .. }
            | Failure::Config { kind, .. }
            | Failure::Store { kind, .. } => (*kind).to_owned(),
        }
    }

    fn into_exception(self, py: Python<'_>) -> PyErr {
        let kind = self.kind();
        let (error, budget) = match self {
            Failure::Model(error) => (FormatError::new_err(error.to_string()), None),
            Failure::Input { message, .. } => (FormatError::new_err(message), None),
            Failure::Item { index, error } => {
                let message = error.to_string();
                let message = message.strip_prefix("message 0: ").unwrap_or(&message);
                (FormatError::new_err(format!("item {index}: {message}")), None)
            }
            Failure::Session(error) => (StoreError::new_err(error.to_string()), None),
            Failure::Store { message, .. } => (StoreError::new_err(message), None),
            Failure::Config { message, .. } => (ConfigError::new_err(message), None),
            Failure::Strategy(StrategyError::BudgetTooSmall(shortfall)) => (
                BudgetTooSmall::new_err(shortfall.to_string()),
                Some((shortfall.max_tokens, shortfall.needed())),
            ),
            Failure::Strategy(
                error @ (StrategyError::Config { .. }
                | StrategyError::InvalidOption { .. }
                | StrategyError::Pattern { .. }),
            ) => (ConfigError::new_err(error.to_string()), None),
            Failure::Strategy(error) => (CuratorError::new_err(error.to_string()), None),
        };
        let value = error.value(py);
        // Setting an attribute on a fresh exception instance only fails when Python is out of
        // memory; the exception is still raised, without it.
        let _ = value.setattr("kind", kind);
        if let Some((max_tokens, needed)) = budget {
            let _ = value.setattr("max_tokens", max_tokens);
            let _ = value.setattr("needed", needed);
        }
        error
    }
}

impl Failure {
    /// The same failure of reading messages, said of request `index` of a list; other
    /// failures as they are.
    pub(crate) fn in_request(self, index: usize) -> Self {
        let message = match &self {
            Failure::Model(error) => error.to_string(),
            Failure::Input { message, .. } => message.clone(),
            Failure::Item { index, error } => format!("item {index}: {error}"),
            _ => return self,
        };
        Failure::Input { kind: intern(self.kind()), message: format!("request {index}: {message}") }
    }

    /// A store's error when opening it: its variant as the kind (`not_a_database`,
    /// `newer_schema`, …), or, for the backend's own errors (variants `sqlite`, `postgres`),
    /// the kind of failure (`unavailable`, `busy`, …).
    pub(crate) fn store(
        error: &impl std::fmt::Debug,
        failure: curator::session::StoreErrorKind,
        message: String,
    ) -> Self {
        let kind = match variant(error) {
            backend if backend == "sqlite" || backend == "postgres" => variant(&failure),
            kind => kind,
        };
        Failure::Store { kind: intern(kind), message }
    }
}

/// A kind as a `&'static str`: the few variant names there are, each kept once.
fn intern(kind: String) -> &'static str {
    use std::collections::HashSet;
    use std::sync::{Mutex, OnceLock, PoisonError};
    static KINDS: OnceLock<Mutex<HashSet<&'static str>>> = OnceLock::new();
    let mut kinds =
        KINDS.get_or_init(Mutex::default).lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(&kind) = kinds.get(kind.as_str()) {
        return kind;
    }
    let kind: &'static str = Box::leak(kind.into_boxed_str());
    kinds.insert(kind);
    kind
}

/// The kind of a session store's error: the store error's own kind (`busy`, `unavailable`,
/// `corrupt`, …) for backend failures, else the variant's name.
fn session_kind(error: &curator::session::Error) -> String {
    match error {
        curator::session::Error::Store { kind, .. } => variant(kind),
        other => variant(other),
    }
}

/// The name of an error's variant in snake case, read from its derived `Debug` text
/// (`MissingField { .. }` is `missing_field`), so that variants added later are named too.
fn variant(error: &impl std::fmt::Debug) -> String {
    let debug = format!("{error:?}");
    let name = debug.split(|c: char| !c.is_ascii_alphanumeric()).next().unwrap_or_default();
    let mut out = String::with_capacity(name.len() + 4);
    for (i, c) in name.chars().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(failure: &Failure, expected: &str) {
        assert_eq!(failure.kind(), expected);
    }

    #[test]
    fn kinds_are_the_variants_in_snake_case() {
        check(
            &Failure::Model(ModelError::MissingField { index: 1, field: "name".into() }),
            "missing_field",
        );
        check(
            &Failure::Strategy(StrategyError::Config { message: "x".into(), source: None }),
            "config",
        );
        check(
            &Failure::Input { kind: "ambiguous_format", message: String::new() },
            "ambiguous_format",
        );
    }

    #[test]
    fn budget_too_small_is_named_from_a_real_shortfall() {
        use curator::model::Message;
        use curator::strategies::{CurationContext, HistoryManagerExt, TokenBudget};
        let messages = vec![Message::system("Answer in French. ".repeat(50)), Message::user("hi")];
        let error = TokenBudget::new(40)
            .curate_messages(&messages, &CurationContext::default())
            .unwrap_err();
        check(&Failure::Strategy(error), "budget_too_small");
    }
}
