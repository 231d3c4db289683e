//! `tools` schemas converted between the OpenAI and Anthropic shapes.

use serde_json::{Map, Value, json};

use crate::error::json_kind;
use crate::{Error, Result};

fn error(index: usize, field: &str, reason: impl Into<String>) -> Error {
    Error::ToolSchema { index, field: field.to_owned(), reason: reason.into() }
}

fn array(tools: &Value) -> Result<&Vec<Value>> {
    tools
        .as_array()
        .ok_or_else(|| error(0, "tools", format!("should be an array, found {}", json_kind(tools))))
}

fn object<'a>(index: usize, field: &str, value: &'a Value) -> Result<&'a Map<String, Value>> {
    value.as_object().ok_or_else(|| {
        error(index, field, format!("should be an object, found {}", json_kind(value)))
    })
}

fn name(index: usize, field: &str, value: Option<&Value>) -> Result<Value> {
    match value {
        Some(Value::String(name)) => Ok(Value::String(name.clone())),
        Some(other) => {
            Err(error(index, field, format!("should be a string, found {}", json_kind(other))))
        }
        None => Err(error(index, field, "is missing")),
    }
}

fn unknown(index: usize, prefix: &str, map: &Map<String, Value>, known: &[&str]) -> Result<()> {
    match map.keys().find(|k| !known.contains(&k.as_str())) {
        Some(key) => {
            Err(error(index, &format!("{prefix}{key}"), "has no counterpart in the other format"))
        }
        None => Ok(()),
    }
}

/// OpenAI `{"type": "function", "function": {...}}` to Anthropic `{name, input_schema, ...}`.
pub(super) fn openai_to_anthropic(tools: &Value) -> Result<Value> {
    let mut out = Vec::new();
    for (index, tool) in array(tools)?.iter().enumerate() {
        let tool = object(index, "tool", tool)?;
        match tool.get("type") {
            Some(Value::String(kind)) if kind == "function" => {}
            Some(other) => {
                let found = other.as_str().map_or_else(|| other.to_string(), str::to_owned);
                return Err(error(
                    index,
                    "type",
                    format!("is `{found}`, which Anthropic has no form for"),
                ));
            }
            None => {
                return Err(error(index, "type", "is missing (an OpenAI tool says `function`)"));
            }
        }
        unknown(index, "", tool, &["type", "function"])?;
        let function = object(
            index,
            "function",
            tool.get("function").ok_or_else(|| error(index, "function", "is missing"))?,
        )?;
        unknown(index, "function.", function, &["name", "description", "parameters", "strict"])?;
        let mut converted = Map::new();
        converted.insert("name".into(), name(index, "function.name", function.get("name"))?);
        if let Some(description) = function.get("description") {
            converted.insert("description".into(), description.clone());
        }
        let schema = match function.get("parameters") {
            None => json!({"type": "object", "properties": {}}),
            Some(schema @ Value::Object(_)) => schema.clone(),
            Some(other) => {
                return Err(error(
                    index,
                    "function.parameters",
                    format!("should be an object, found {}", json_kind(other)),
                ));
            }
        };
        converted.insert("input_schema".into(), schema);
        if let Some(strict) = function.get("strict") {
            converted.insert("strict".into(), strict.clone());
        }
        out.push(Value::Object(converted));
    }
    Ok(Value::Array(out))
}

/// Anthropic `{name, description, input_schema}` to OpenAI `{"type": "function", ...}`.
pub(super) fn anthropic_to_openai(tools: &Value) -> Result<Value> {
    let mut out = Vec::new();
    for (index, tool) in array(tools)?.iter().enumerate() {
        let tool = object(index, "tool", tool)?;
        match tool.get("type") {
            None => {}
            Some(Value::String(kind)) if kind == "custom" => {}
            Some(other) => {
                let found = other.as_str().map_or_else(|| other.to_string(), str::to_owned);
                return Err(error(
                    index,
                    "type",
                    format!("is `{found}`, which OpenAI has no form for"),
                ));
            }
        }
        unknown(
            index,
            "",
            tool,
            &["type", "name", "description", "input_schema", "strict", "cache_control"],
        )?;
        let mut function = Map::new();
        function.insert("name".into(), name(index, "name", tool.get("name"))?);
        if let Some(description) = tool.get("description") {
            function.insert("description".into(), description.clone());
        }
        match tool.get("input_schema") {
            Some(schema @ Value::Object(_)) => {
                function.insert("parameters".into(), schema.clone());
            }
            Some(other) => {
                return Err(error(
                    index,
                    "input_schema",
                    format!("should be an object, found {}", json_kind(other)),
                ));
            }
            None => return Err(error(index, "input_schema", "is missing")),
        }
        if let Some(strict) = tool.get("strict") {
            function.insert("strict".into(), strict.clone());
        }
        out.push(json!({"type": "function", "function": function}));
    }
    Ok(Value::Array(out))
}
