//! curator for Python: the extension module `curator_context._native`, built with PyO3 and
//! maturin (see `pyproject.toml`), which the Python package `curator_context` re-exports.
//!
//! It sits on top of the workspace, beside the command line: it depends on the `curator`
//! facade only. What it offers is stateless curation, `curate`: OpenAI Chat Completions
//! messages, Anthropic messages or Responses API items, as Python dicts and lists, go through
//! a pipeline (the default pipeline for a token budget, or a `StrategyConfig` given as a dict,
//! TOML or JSON text) and come back in the format they came in. Errors become Python
//! exceptions under `CuratorError` carrying the Rust error's kind and message (see
//! [`error`]); nothing here panics on input.
//!
//! ```python
//! from curator_context import curate
//!
//! messages = curate(messages, max_tokens=8_000)
//! ```
//!
//! The crate's logic is plain Rust (curation over JSON values), so that `cargo test`
//! covers it without a Python interpreter running; `tests/test_*.py` cover the bindings.

mod billing;
mod counted;
mod detect;
pub mod error;
mod held;
mod io;
mod json;
mod lazy;
mod lists;
mod pipeline;
mod remembered;
mod session;
mod template;
mod unchanged;
mod unsendable;

use curator::model::Role;
use curator::model::formats;
use curator::strategies::{
    CurationContext, History, HistoryManagerExt, StrategyConfig, TokenCounter, Tokenizer,
};
use pyo3::prelude::*;
use pyo3::types::PyList;
use serde_json::Value;

use crate::detect::Format;
use crate::error::Failure;
use crate::io::{counter, positions_or_dicts, read, split_request, warn_unsendable};
use crate::lazy::Kept;
use crate::lists::PyMessages;
use crate::pipeline::{budget, built, config, string_argument, type_name};

/// Curates messages and returns them in the format, and the shape, they came in.
///
/// `messages` is a list of OpenAI Chat Completions messages, Anthropic messages or Responses
/// API items, or a request dict holding them under `messages` (with `system` for Anthropic;
/// its `tools` are reserved from the budget and its other fields come back untouched).
/// `pipeline` is a `StrategyConfig` as a dict, TOML text, or JSON text; without it,
/// `max_tokens` sets the default pipeline's budget. `format` is `"auto"` or `None` (told from
/// the messages' signs), `"openai"`, `"anthropic"` or `"responses"`.
///
/// # Errors
///
/// `FormatError` for messages that cannot be read or written (with the index and field),
/// `ConfigError` for a pipeline or argument that cannot be used, `BudgetTooSmall` when the
/// budget cannot hold what curation never drops, `CuratorError` for other curation failures.
#[pyfunction]
#[pyo3(signature = (messages, max_tokens = None, *, pipeline = None, format = None))]
fn curate<'py>(
    py: Python<'py>,
    messages: &Bound<'py, PyAny>,
    max_tokens: Option<&Bound<'py, PyAny>>,
    pipeline: Option<&Bound<'py, PyAny>>,
    format: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let format = match format.filter(|f| !f.is_none()) {
        Some(format) => Format::from_argument(&string_argument("format", format)?)?,
        None => None,
    };
    let config = config(max_tokens, pipeline)?;
    if let Ok(list) = messages.cast::<PyList>()
        && matches!(format, None | Some(Format::Openai))
    {
        if lazy::budget_of(&config).is_some() {
            // A lone token budget over OpenAI messages reads only what it may keep. Without
            // `format`, a list is taken for OpenAI messages when every message has a role and
            // one is a tool result (a role only OpenAI messages have); any other list is read
            // whole, and its format told from all its messages.
            let mut source = PyMessages::dicts(list.clone());
            let openai = match source.read_roles() {
                Ok(roles) => format.is_some() || roles.contains(&Role::Tool),
                Err(error) if format.is_some() => return Err(error.into()),
                Err(_) => false,
            };
            if openai {
                return hand_back(py, list, &kept(&mut source, &config)?);
            }
        } else {
            // Any other pipeline goes on from the conversation the list continues, if `curate`
            // remembers it, and remembers it otherwise (when its messages are OpenAI's).
            for start in [remembered::Start::Remembered, remembered::Start::Afresh] {
                if let Some(curated) = remembered::curate(py, list, &config, format, start)? {
                    return hand_back(py, list, &curated);
                }
            }
        }
    }
    let input = json::to_value(messages, "")?;
    let (output, unsendable) = py.detach(|| curate_value(input, &config, format))?;
    warn_unsendable(py, &unsendable)?;
    json::to_python(py, &output)
}

/// Curates OpenAI Chat Completions messages, or objects `convert` turns into them (each an
/// instance of `base`: LangChain messages), and says, per message of the view, where it
/// comes from: the position of an input message it keeps unchanged (an `int`), or the message
/// as a dict when a strategy changed or made it. The Python package uses it to hand back the
/// caller's own objects for what curation kept.
///
/// With a lone token budget, only the roles of every message and the messages the budget may
/// keep are read (see [`lazy`]).
///
/// # Errors
///
/// As [`curate`].
///
/// With `counts` (one token count per message, from a counter of the caller's), the
/// pipeline must be a lone token budget, which counts message `i` as `counts[i]` (see
/// [`counted`]).
#[pyfunction]
#[pyo3(signature = (messages, max_tokens = None, *, pipeline = None, convert = None, base = None, counts = None))]
fn curate_kept<'py>(
    py: Python<'py>,
    messages: &Bound<'py, PyAny>,
    max_tokens: Option<&Bound<'py, PyAny>>,
    pipeline: Option<&Bound<'py, PyAny>>,
    convert: Option<Bound<'py, PyAny>>,
    base: Option<Bound<'py, PyAny>>,
    counts: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let config = config(max_tokens, pipeline)?;
    let list = as_list(messages)?;
    let mut source = match (convert.filter(|c| !c.is_none()), base.filter(|b| !b.is_none())) {
        (Some(convert), Some(base)) => PyMessages::objects(list, convert, base),
        (None, None) => PyMessages::dicts(list),
        _ => {
            return Err(Failure::Config {
                kind: "invalid_argument",
                message: "give `convert` and `base` together".to_owned(),
            }
            .into());
        }
    };
    let curated = match counts.filter(|c| !c.is_none()) {
        Some(counts) => counted::curate_counted(&mut source, &token_counts(counts)?, &config)?,
        None => kept(&mut source, &config)?,
    };
    warn_unsendable(py, &curated.unsendable)?;
    positions_or_dicts(py, &curated.kept)
}

/// A list of token counts, each a non-negative integer.
fn token_counts(counts: &Bound<'_, PyAny>) -> Result<Vec<u64>, Failure> {
    let bad = |what: String| Failure::Config { kind: "invalid_argument", message: what };
    let list = as_list(counts).map_err(|_| {
        bad(format!("`counts` should be a list of token counts, found {}", type_name(counts)))
    })?;
    let mut out = Vec::with_capacity(list.len());
    for (index, count) in list.iter().enumerate() {
        let value =
            count.extract::<u64>().ok().filter(|_| count.cast::<pyo3::types::PyBool>().is_err());
        let Some(value) = value else {
            let shown = count.repr().map_or_else(|_| type_name(&count), |r| r.to_string());
            return Err(bad(format!(
                "`counts[{index}]` should be a non-negative integer (the message's tokens), found {shown}"
            )));
        };
        out.push(value);
    }
    Ok(out)
}

/// A list or tuple of messages, as a list.
fn as_list<'py>(messages: &Bound<'py, PyAny>) -> Result<Bound<'py, PyList>, Failure> {
    if let Ok(list) = messages.cast::<PyList>() {
        return Ok(list.clone());
    }
    if let Ok(tuple) = messages.cast::<pyo3::types::PyTuple>() {
        return Ok(tuple.to_list());
    }
    Err(Failure::Input {
        kind: "wrong_type",
        message: format!("expected a list of messages, found {}", type_name(messages)),
    })
}

/// Curates `source` with `config`: lazily for a lone token budget, else read whole.
fn kept(source: &mut impl lazy::Lazy, config: &StrategyConfig) -> Result<lazy::Curated, Failure> {
    let pipeline = built(config)?;
    let messages = if let Some((max_tokens, tokenizer)) = lazy::budget_of(config) {
        lazy::subset(source, max_tokens, &*counter(tokenizer)?)?
    } else {
        let mut all = Vec::with_capacity(source.len());
        for index in 0..source.len() {
            all.push((index, source.message(index)?));
        }
        all
    };
    lazy::curate_subset(messages, &*pipeline)
}

/// Warns of what no provider takes, then hands back the view of a list of OpenAI dicts.
fn hand_back<'py>(
    py: Python<'py>,
    list: &Bound<'py, PyList>,
    curated: &lazy::Curated,
) -> PyResult<Bound<'py, PyAny>> {
    warn_unsendable(py, &curated.unsendable)?;
    given_or_dicts(py, list, &curated.kept)
}

/// For [`curate`] on a list of OpenAI dicts: the given dicts for what was kept unchanged,
/// new dicts for what was changed or made.
fn given_or_dicts<'py>(
    py: Python<'py>,
    list: &Bound<'py, PyList>,
    kept: &[Kept],
) -> PyResult<Bound<'py, PyAny>> {
    let out = PyList::empty(py);
    for (index, item) in kept.iter().enumerate() {
        match item {
            Kept::Position(position) => out.append(list.get_item(*position)?)?,
            Kept::Changed(_, message) | Kept::Message(message) => out.append(json::to_python(
                py,
                &formats::openai::message_to_value(index, message).map_err(Failure::from)?,
            )?)?,
        }
    }
    Ok(out.into_any())
}

/// The default pipeline for a budget of `max_tokens`, as the dict `curate` takes as
/// `pipeline`: a starting point to change.
///
/// # Errors
///
/// `ConfigError` when `max_tokens` is not a non-negative integer.
#[pyfunction]
fn default_pipeline<'py>(
    py: Python<'py>,
    max_tokens: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    config_to_python(py, &StrategyConfig::default_pipeline(budget(max_tokens)?))
}

/// A configuration as the dict `curate` takes as `pipeline`.
fn config_to_python<'py>(py: Python<'py>, config: &StrategyConfig) -> PyResult<Bound<'py, PyAny>> {
    let value = serde_json::to_value(config).map_err(|e| Failure::Config {
        kind: "config",
        message: format!("strategy configuration: cannot write it: {e}"),
    })?;
    json::to_python(py, &value)
}

/// The positions of the system messages of a list of OpenAI dicts, and of its task (the
/// first user message, when no assistant message comes before it), from their roles alone:
/// what `trim_messages` counts before the newest messages. `None` when a role is not one
/// curator knows (the caller reads the list itself).
#[pyfunction]
fn head_positions(messages: &Bound<'_, PyList>) -> Option<(Vec<usize>, Option<usize>)> {
    let mut source = PyMessages::dicts(messages.clone());
    let roles = source.read_roles().ok()?;
    let system = roles.iter().enumerate().filter(|(_, r)| **r == Role::System).map(|(i, _)| i);
    let task = roles
        .iter()
        .position(|r| matches!(r, Role::User | Role::Assistant))
        .filter(|&i| roles[i] == Role::User);
    Some((system.collect(), task))
}

/// Tokens of `text` under `tokenizer` (`"o200k"`, the default pipeline's; `"cl100k"`;
/// `"estimate"`): for what is sent beside the messages (instructions, tool schemas), to
/// reserve from a budget.
///
/// # Errors
///
/// `ConfigError` for an unknown tokenizer.
#[pyfunction]
#[pyo3(signature = (text, tokenizer = "o200k"))]
fn count_tokens(text: &str, tokenizer: &str) -> PyResult<u64> {
    let tokenizer: Tokenizer = serde_json::from_value(Value::String(tokenizer.to_owned()))
        .map_err(|_| Failure::Config {
            kind: "invalid_argument",
            message: format!(
                "`tokenizer` should be \"o200k\", \"cl100k\" or \"estimate\", found {tokenizer:?}"
            ),
        })?;
    Ok(counter(tokenizer)?.count_text(text))
}

/// The pipeline of `max_tokens` or `pipeline` (as `curate` takes them) with every token
/// budget in it reserving `extra` more tokens, as a dict.
///
/// # Errors
///
/// `ConfigError` for a pipeline or budget that cannot be read.
#[pyfunction]
#[pyo3(signature = (max_tokens = None, *, pipeline = None, extra = 0))]
fn pipeline_with_reserve<'py>(
    py: Python<'py>,
    max_tokens: Option<&Bound<'py, PyAny>>,
    pipeline: Option<&Bound<'py, PyAny>>,
    extra: u64,
) -> PyResult<Bound<'py, PyAny>> {
    config_to_python(py, &config(max_tokens, pipeline)?.with_reserve(extra))
}

/// [`curate`] on JSON values: reads `input` (a list of messages or a request object), curates
/// it with `config`, and writes the view in the same format and shape.
///
/// # Errors
///
/// As [`curate`].
fn curate_value(
    input: Value,
    config: &StrategyConfig,
    format: Option<Format>,
) -> Result<(Value, Vec<usize>), Failure> {
    let (items, mut envelope) = split_request(input)?;
    let format = match format {
        Some(format) => format,
        None => detect::detect(envelope.as_ref(), &items)?,
    };
    let system = envelope.as_mut().and_then(|e| e.remove("system")).filter(|s| !s.is_null());
    if system.is_some() && format != Format::Anthropic {
        return Err(Failure::Input {
            kind: "foreign_field",
            message:
                "top-level `system` belongs to the Anthropic format: pass format=\"anthropic\""
                    .to_owned(),
        });
    }
    let messages = read(format, items, system)?;
    let mut config = config.clone();
    if let Some(tools) = envelope.as_ref().and_then(|e| e.get("tools")) {
        config = config.with_tools(tools)?.0;
    }
    let pipeline = built(&config)?;
    let history = History::from(messages);
    let view = pipeline.curate_history(&history, &CurationContext::default())?;
    let unsendable = history.unsendable();
    let sent = view.messages();
    let (messages, system) = match format {
        Format::Openai => (formats::openai::from_messages(&sent)?, None),
        Format::Responses => {
            let sent: Vec<_> =
                view.responses_entries().into_iter().map(|entry| entry.message).collect();
            (Value::Array(formats::responses::from_messages(&sent)?), None)
        }
        Format::Anthropic => {
            let request = formats::anthropic::from_messages(&sent)?;
            (Value::Array(request.messages), request.system)
        }
    };
    let output = match envelope {
        None if system.is_some() => {
            // A list of Anthropic messages has no place for a system prompt; none comes in
            // through one, and no strategy adds one, but say so rather than drop it.
            return Err(Failure::Input {
                kind: "system_inside_conversation",
                message: "the curated view has a system prompt, which a list of Anthropic messages cannot hold: pass a request dict with `system` and `messages`".to_owned(),
            });
        }
        None => messages,
        Some(mut envelope) => {
            envelope.insert("messages".to_owned(), messages);
            if let Some(system) = system {
                envelope.insert("system".to_owned(), system);
            }
            Value::Object(envelope)
        }
    };
    Ok((output, unsendable))
}

/// Forgets the conversations `curate` remembers (the last few it curated, so that a call
/// on a list that continues one reads only what was appended), releasing the messages they
/// hold.
#[pyfunction]
fn forget_conversations() {
    remembered::forget();
}

/// The extension module: `curate`, `default_pipeline` and the exceptions.
#[pymodule]
#[pyo3(name = "_native")]
fn native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(curate, m)?)?;
    m.add_function(wrap_pyfunction!(default_pipeline, m)?)?;
    m.add_function(wrap_pyfunction!(curate_kept, m)?)?;
    m.add_function(wrap_pyfunction!(forget_conversations, m)?)?;
    m.add_function(wrap_pyfunction!(billing::bill, m)?)?;
    m.add_function(wrap_pyfunction!(count_tokens, m)?)?;
    m.add_function(wrap_pyfunction!(head_positions, m)?)?;
    m.add_function(wrap_pyfunction!(pipeline_with_reserve, m)?)?;
    m.add("CuratorError", py.get_type::<error::CuratorError>())?;
    m.add("FormatError", py.get_type::<error::FormatError>())?;
    m.add("ConfigError", py.get_type::<error::ConfigError>())?;
    m.add("BudgetTooSmall", py.get_type::<error::BudgetTooSmall>())?;
    m.add("StoreError", py.get_type::<error::StoreError>())?;
    m.add_class::<session::ItemSession>()?;
    m.add_class::<held::HeldHistory>()?;
    m.add("UnsendableWarning", py.get_type::<error::UnsendableWarning>())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn long_tool_conversation(rounds: usize) -> Value {
        let mut messages = vec![
            json!({"role": "system", "content": "You are a shell agent."}),
            json!({"role": "user", "content": "Find the biggest log file."}),
        ];
        for i in 0..rounds {
            messages.push(json!({"role": "assistant", "content": null, "tool_calls": [
                {"id": format!("c{i}"), "type": "function", "function": {"name": "du", "arguments": "{}"}}
            ]}));
            messages.push(json!({"role": "tool", "tool_call_id": format!("c{i}"), "content": format!("{i} ").repeat(400)}));
        }
        Value::Array(messages)
    }

    #[test]
    fn a_budget_shortens_and_keeps_openai_shape() {
        let input = long_tool_conversation(40);
        let config = StrategyConfig::default_pipeline(2_000);
        let Value::Array(out) = curate_value(input.clone(), &config, None).unwrap().0 else {
            panic!("a list in, a list out")
        };
        assert!(out.len() < input.as_array().unwrap().len());
        assert_eq!(out[0], input[0]);
        assert_eq!(out.last(), input.as_array().unwrap().last());
    }

    #[test]
    fn kept_messages_are_positions_and_changed_ones_are_written() {
        let input = long_tool_conversation(3);
        let truncate = StrategyConfig::from_json(
            r#"{"strategy": "tool_result_truncator", "max_length": 100}"#,
        )
        .unwrap();
        let messages = formats::openai::to_messages(&input).unwrap();
        let pipeline = built(&truncate).unwrap();
        let kept = lazy::curate_subset(messages.into_iter().enumerate().collect(), &*pipeline)
            .unwrap()
            .kept;
        assert_eq!(kept.len(), input.as_array().unwrap().len());
        for (index, item) in kept.iter().enumerate() {
            match (index, item) {
                // Every other message from the fourth on is a tool result, cut.
                (3 | 5 | 7, Kept::Changed(position, message)) => {
                    assert_eq!(*position, index);
                    assert_eq!(message.role(), Role::Tool);
                    assert!(message.text().len() < 400);
                }
                (_, Kept::Position(position)) => assert_eq!(*position, index),
                other => panic!("unexpected {other:?}"),
            }
        }
    }

    #[test]
    fn a_foreign_system_field_is_refused() {
        let input = json!({"system": "Be brief.", "messages": [{"role": "user", "content": "hi"}]});
        let config = StrategyConfig::default_pipeline(2_000);
        let error = curate_value(input, &config, Some(Format::Openai)).unwrap_err();
        assert_eq!(error.kind(), "foreign_field");
    }
}
