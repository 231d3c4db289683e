//! The bill of a conversation's requests as providers compute it (`bill` in Python): the
//! tokens each request reads from the prompt cache, writes to it and pays in full, under
//! OpenAI's or Anthropic's rule, and their price for a model.

use curator::strategies::Tokenizer;
use curator::strategies::bill::{Biller, Block, CacheRule, Prices, Request, RequestEnd};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use serde_json::Value;

use crate::detect::{self, Format};
use crate::error::Failure;
use crate::json;

/// Bills `requests`, the requests of one conversation in the order they were sent, each a
/// list of messages or a request dict (`messages`, with `system` for Anthropic and `tools`),
/// under `rule` (`"openai"`: the longest prefix shared with an earlier request, from 1,024
/// tokens in 128-token steps; `"anthropic"`: curator's breakpoints, on the head, the newest
/// message and the previous request's end). Tokens are counted with `o200k_base`. Returns
/// one dict per request: `input_tokens`, `cache_read_tokens`, `cache_write_tokens`,
/// `uncached_tokens`, and with `model` its `price` in dollars (input only).
///
/// # Errors
///
/// `FormatError` for a request that cannot be read; `ConfigError` for an unknown rule or
/// a model without prices.
#[pyfunction]
#[pyo3(signature = (requests, *, rule = "openai", format = None, model = None))]
pub(crate) fn bill<'py>(
    py: Python<'py>,
    requests: &Bound<'py, PyAny>,
    rule: &str,
    format: Option<&str>,
    model: Option<&str>,
) -> PyResult<Bound<'py, PyList>> {
    let rule = match rule {
        "openai" => CacheRule::openai(),
        "anthropic" => CacheRule::anthropic(),
        other => {
            return Err(Failure::Config {
                kind: "invalid_argument",
                message: format!("`rule` should be \"openai\" or \"anthropic\", found {other:?}"),
            }
            .into());
        }
    };
    let prices = model
        .map(|m| {
            Prices::for_model(m).map_err(|e| Failure::Config {
                kind: "invalid_argument",
                message: format!("`model`: {e}"),
            })
        })
        .transpose()?;
    let format = format.map(Format::from_argument).transpose()?.flatten();
    let Value::Array(requests) = json::to_value(requests, "requests")? else {
        return Err(Failure::Input {
            kind: "wrong_type",
            message: "`requests` should be a list of requests".to_owned(),
        }
        .into());
    };
    let counter = crate::io::counter(Tokenizer::O200k)?;
    let mut biller = Biller::new(rule);
    let mut previous: Option<RequestEnd> = None;
    let out = PyList::empty(py);
    for (index, request) in requests.into_iter().enumerate() {
        let (items, mut envelope) =
            crate::io::split_request(request).map_err(|e| e.in_request(index))?;
        let format = match format {
            Some(format) => format,
            None => detect::detect(envelope.as_ref(), &items).map_err(|e| e.in_request(index))?,
        };
        let system = envelope.as_mut().and_then(|e| e.remove("system")).filter(|s| !s.is_null());
        let messages = crate::io::read(format, items, system).map_err(|e| e.in_request(index))?;
        let mut sent = Request::new();
        if let Some(tools) = envelope.as_ref().and_then(|e| e.get("tools")) {
            sent.push(Block::of_tools(tools, &*counter));
        }
        for message in &messages {
            sent.push_message(Block::of_message(message, &*counter), message.role());
        }
        if matches!(rule, CacheRule::Anthropic { .. }) {
            sent.set_curator_breakpoints(previous);
        }
        let bill = biller.bill(&sent);
        previous = sent.end();
        let row = PyDict::new(py);
        row.set_item("input_tokens", bill.input_tokens)?;
        row.set_item("cache_read_tokens", bill.cache_read_tokens)?;
        row.set_item("cache_write_tokens", bill.cache_write_tokens)?;
        row.set_item("uncached_tokens", bill.uncached_tokens())?;
        if let Some(prices) = &prices {
            row.set_item("price", prices.price(&bill))?;
        }
        out.append(row)?;
    }
    Ok(out)
}
