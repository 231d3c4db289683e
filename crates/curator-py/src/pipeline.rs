//! The pipeline a call names (`max_tokens` for the default pipeline, or `pipeline`, a
//! `StrategyConfig` as a dict, TOML or JSON text), built once per configuration, and the
//! checks of the arguments the module's functions and classes share.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use curator::strategies::{HistoryManager, StrategyConfig};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};

use crate::error::Failure;
use crate::json;

pub(crate) fn string_argument(name: &str, value: &Bound<'_, PyAny>) -> Result<String, Failure> {
    value
        .cast::<PyString>()
        .ok()
        .and_then(|s| s.to_cow().ok())
        .map(std::borrow::Cow::into_owned)
        .ok_or_else(|| Failure::Config {
            kind: "invalid_argument",
            message: format!("`{name}` should be a string, found {}", type_name(value)),
        })
}

pub(crate) fn type_name(value: &Bound<'_, PyAny>) -> String {
    value.get_type().name().map_or_else(|_| "?".to_owned(), |n| format!("a `{n}`"))
}

pub(crate) fn budget(max_tokens: &Bound<'_, PyAny>) -> Result<u64, Failure> {
    // `bool` is an `int` in Python; `max_tokens=True` is a mistake, not a budget of one.
    if max_tokens.cast::<pyo3::types::PyBool>().is_ok() {
        return Err(not_a_budget(max_tokens));
    }
    max_tokens.extract::<u64>().map_err(|_| not_a_budget(max_tokens))
}

fn not_a_budget(max_tokens: &Bound<'_, PyAny>) -> Failure {
    let shown = max_tokens.repr().map_or_else(|_| type_name(max_tokens), |r| r.to_string());
    Failure::Config {
        kind: "invalid_argument",
        message: format!("`max_tokens` should be a non-negative integer, found {shown}"),
    }
}

/// The pipeline of a call: the one given, or the default one for `max_tokens`.
pub(crate) fn config(
    max_tokens: Option<&Bound<'_, PyAny>>,
    pipeline: Option<&Bound<'_, PyAny>>,
) -> Result<StrategyConfig, Failure> {
    let pipeline = pipeline.filter(|p| !p.is_none());
    let max_tokens = max_tokens.filter(|m| !m.is_none());
    match (max_tokens, pipeline) {
        (Some(_), Some(_)) => Err(Failure::Config {
            kind: "invalid_argument",
            message: "give `max_tokens` (the default pipeline's budget) or `pipeline`, not both"
                .to_owned(),
        }),
        (None, None) => Err(Failure::Config {
            kind: "invalid_argument",
            message: "give `max_tokens` (the default pipeline's budget) or `pipeline`".to_owned(),
        }),
        (Some(max_tokens), None) => Ok(StrategyConfig::default_pipeline(budget(max_tokens)?)),
        (None, Some(pipeline)) => {
            if let Ok(text) = pipeline.cast::<PyString>() {
                let text = text.to_cow().map_err(|_| Failure::Config {
                    kind: "config",
                    message: "strategy configuration: the text is not valid Unicode".to_owned(),
                })?;
                return config_from_text(&text);
            }
            if pipeline.cast::<PyDict>().is_ok() {
                // A value JSON cannot hold is the pipeline's fault: a `ConfigError`, as any
                // other bad value in it is.
                let value = json::to_value(pipeline, "pipeline").map_err(|error| match error {
                    Failure::Input { message, .. } => {
                        Failure::Config { kind: "invalid_argument", message }
                    }
                    other => other,
                })?;
                return Ok(StrategyConfig::from_json(&value.to_string())?);
            }
            Err(Failure::Config {
                kind: "invalid_argument",
                message: format!(
                    "`pipeline` should be a dict or TOML or JSON text, found {}",
                    type_name(pipeline)
                ),
            })
        }
    }
}

/// Reads a pipeline from TOML text, or from JSON text when it starts with `{`.
pub(crate) fn config_from_text(text: &str) -> Result<StrategyConfig, Failure> {
    if text.trim_start().starts_with('{') {
        return Ok(StrategyConfig::from_json(text)?);
    }
    toml::from_str(text).map_err(|e| Failure::Config {
        kind: "config",
        message: format!(
            "strategy configuration: cannot read it as TOML: {}",
            e.to_string().trim()
        ),
    })
}

/// Pipelines already built, by their configuration's JSON text: building one compiles its
/// redaction patterns and loads its tokenizer, which costs far more than curating a
/// conversation. Few configurations are used in a process; the cache is emptied when full.
pub(crate) fn built(config: &StrategyConfig) -> Result<Arc<dyn HistoryManager>, Failure> {
    const MAX_CACHED: usize = 32;
    static CACHE: OnceLock<Mutex<HashMap<String, Arc<dyn HistoryManager>>>> = OnceLock::new();
    let key = serde_json::to_string(config).map_err(|e| Failure::Config {
        kind: "config",
        message: format!("strategy configuration: cannot write it: {e}"),
    })?;
    let cache = CACHE.get_or_init(Mutex::default);
    if let Some(pipeline) = cache.lock().unwrap_or_else(PoisonError::into_inner).get(&key) {
        return Ok(Arc::clone(pipeline));
    }
    let pipeline: Arc<dyn HistoryManager> = Arc::from(config.build()?);
    let mut cache = cache.lock().unwrap_or_else(PoisonError::into_inner);
    if cache.len() >= MAX_CACHED {
        cache.clear();
    }
    cache.insert(key, Arc::clone(&pipeline));
    Ok(pipeline)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn toml_and_json_pipelines_read_alike() {
        let toml = config_from_text("strategy = \"sliding_window\"\nwindow_size = 4\n").unwrap();
        let json = config_from_text(r#"{"strategy": "sliding_window", "window_size": 4}"#).unwrap();
        assert_eq!(serde_json::to_string(&toml).unwrap(), serde_json::to_string(&json).unwrap());
        assert_eq!(config_from_text("strategy = \"nope\"").unwrap_err().kind(), "config");
    }
}
