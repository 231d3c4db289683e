//! Numbers a float cannot hold (`1E400`), accepted where curator keeps their text.
//!
//! `serde_json::Value` refuses a number whose magnitude passes `f64::MAX` ("number out of
//! range"). Inside an Anthropic `tool_use` block's `input`, curator keeps the text as
//! written (it becomes the call's arguments), so such a number loses nothing there: the
//! value is read with `0` in its place, and the text keeps the number. Anywhere else the
//! value would be all that is kept, and the text is refused as before.

use std::ops::Range;

use serde_json::Value;
use serde_json::value::RawValue;

/// The byte ranges of the number tokens of `json` (outside strings) whose value
/// `serde_json::Value` cannot hold: past a double's range, or an integer beyond 64 bits, or a
/// decimal with more digits than a double keeps. Numbers it holds exactly, whatever their
/// form (`0.70`, `1e2`), are not listed.
fn inexact(json: &str) -> Vec<Range<usize>> {
    let bytes = json.as_bytes();
    let mut out = Vec::new();
    let (mut i, mut in_string, mut escaped) = (0, false, false);
    while let Some(&b) = bytes.get(i) {
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
            i += 1;
        } else if b == b'"' {
            in_string = true;
            i += 1;
        } else if b == b'-' || b.is_ascii_digit() {
            let start = i;
            while bytes.get(i).is_some_and(|c| {
                c.is_ascii_digit() || matches!(c, b'-' | b'+' | b'.' | b'e' | b'E')
            }) {
                i += 1;
            }
            if !is_exact(json.get(start..i).unwrap_or_default()) {
                out.push(start..i);
            }
        } else {
            i += 1;
        }
    }
    out
}

/// Whether `serde_json::Value` holds the number `token` exactly: as a 64-bit integer, or as
/// a double whose shortest form has the same value.
fn is_exact(token: &str) -> bool {
    if token.parse::<i64>().is_ok() || token.parse::<u64>().is_ok() {
        return true;
    }
    match token.parse::<f64>() {
        Ok(value) if value.is_finite() => decimal(token) == decimal(&value.to_string()),
        // Not a number: the parser reports it.
        Ok(_) => false,
        Err(_) => true,
    }
}

/// A decimal number's value as (negative, significant digits, exponent of the first digit);
/// zero is `(false, "", 0)`. `None` when the exponent is out of range.
fn decimal(text: &str) -> Option<(bool, String, i64)> {
    let (negative, text) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let (mantissa, exponent) = match text.find(['e', 'E']) {
        Some(at) => (&text[..at], text[at + 1..].parse::<i64>().ok()?),
        None => (text, 0),
    };
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let digits: String = whole.chars().chain(fraction.chars()).collect();
    let leading = digits.len() - digits.trim_start_matches('0').len();
    let significant = digits.trim_start_matches('0').trim_end_matches('0');
    if significant.is_empty() {
        return Some((false, String::new(), 0));
    }
    let point = i64::try_from(whole.len()).ok()? - i64::try_from(leading).ok()? - 1;
    Some((negative, significant.to_owned(), point.checked_add(exponent)?))
}

/// The line and column (in characters, from 1) of byte `at` of `text`.
fn place(text: &str, at: usize) -> (usize, usize) {
    let before = text.get(..at).unwrap_or_default();
    let line = 1 + before.matches('\n').count();
    let start = before.rfind('\n').map_or(0, |n| n + 1);
    (line, before[start..].chars().count() + 1)
}

/// `json` with each range replaced by `0`.
fn patched(json: &str, ranges: &[Range<usize>]) -> String {
    let mut out = String::with_capacity(json.len());
    let mut at = 0;
    for range in ranges {
        out.push_str(json.get(at..range.start).unwrap_or_default());
        out.push('0');
        at = range.end;
    }
    out.push_str(json.get(at..).unwrap_or_default());
    out
}

/// The byte range of `raw` inside `json`, when it is a slice of it.
fn span(json: &str, raw: &RawValue) -> Option<Range<usize>> {
    let start = (raw.get().as_ptr() as usize).checked_sub(json.as_ptr() as usize)?;
    let end = start + raw.get().len();
    (end <= json.len()).then_some(start..end)
}

/// The numbers of `json` that a value cannot hold exactly, when each lies inside `kept`
/// (slices of `json` whose text is kept as written); the first one elsewhere is
/// [`Error::InexactNumber`](crate::Error::InexactNumber).
pub(super) fn kept_inexact<'a>(
    json: &str,
    kept: impl IntoIterator<Item = &'a RawValue>,
) -> crate::Result<Vec<Range<usize>>> {
    let ranges = inexact(json);
    if ranges.is_empty() {
        return Ok(ranges);
    }
    let spans: Vec<Range<usize>> = kept.into_iter().filter_map(|raw| span(json, raw)).collect();
    let inside = |r: &&Range<usize>| spans.iter().any(|s| s.start <= r.start && r.end <= s.end);
    if let Some(outside) = ranges.iter().find(|r| !inside(r)) {
        let (line, column) = place(json, outside.start);
        let number = json.get(outside.clone()).unwrap_or_default().to_owned();
        return Err(crate::Error::InexactNumber { line, column, number });
    }
    Ok(ranges)
}

/// The value of `json`, whose numbers that a value cannot hold exactly must lie inside `kept`
/// (see [`kept_inexact`]): those read as `0`. `Ok(None)` when there is no such number (parse
/// the text as usual).
pub(super) fn value_keeping<'a>(
    json: &str,
    kept: impl IntoIterator<Item = &'a RawValue>,
) -> crate::Result<Option<Value>> {
    let ranges = kept_inexact(json, kept)?;
    if ranges.is_empty() {
        return Ok(None);
    }
    serde_json::from_str(&patched(json, &ranges))
        .map(Some)
        .map_err(|source| crate::Error::NotJson { source })
}

/// The value of a `tool_use` input's text, its numbers out of a float's range read as `0`
/// (as [`value_keeping`] reads them in the whole request).
pub(super) fn input_value(text: &str) -> Option<Value> {
    serde_json::from_str(&patched(text, &inexact(text))).ok()
}

/// Parses the JSON text of a request, an array of messages or one message as [`parse`](super::anthropic::parse)
/// reads it. `serde_json::Value` holds a number as a 64-bit integer or a double: a number it
/// cannot hold exactly (`1E400`, a 30-digit integer, a decimal of 40 digits) is accepted
/// inside a `tool_use` block's `input`, whose text [`parse`](super::anthropic::parse) keeps as the call's arguments,
/// and stands as `0` in the value returned; anywhere else it is refused, since the value is
/// all that would be kept. Use it to look at a request's structure (its format, its fields)
/// before reading it with [`parse`](super::anthropic::parse); read the messages from the text, not from this value.
///
/// # Errors
///
/// [`crate::Error::NotJson`] when the text is not JSON; [`Error::InexactNumber`](crate::Error::InexactNumber) naming the line
/// and column of a number a value cannot hold, outside a tool call's input.
///
/// # Examples
///
/// ```
/// use curator::model::{Error, formats::anthropic};
///
/// let text = r#"[{"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "f", "input": {"n": 1E400}}]}]"#;
/// assert_eq!(anthropic::parse_value(text)?[0]["content"][0]["input"]["n"], 0);
/// assert_eq!(anthropic::parse(text)?[0].tool_calls()[0].arguments(), r#"{"n":1E400}"#);
/// let err = anthropic::parse_value(r#"{"max_tokens": 123456789012345678901234567890}"#).unwrap_err();
/// assert!(matches!(err, Error::InexactNumber { line: 1, column: 16, .. }), "{err}");
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn parse_value(json: &str) -> crate::Result<Value> {
    match value_keeping(json, kept_inputs(json))? {
        Some(value) => Ok(value),
        None => serde_json::from_str(json).map_err(|source| crate::Error::NotJson { source }),
    }
}

/// The `tool_use` inputs of a request, an array of messages, or one message, as text.
fn kept_inputs(json: &str) -> Vec<&RawValue> {
    let mut inputs: Vec<&RawValue> =
        super::exact::request_inputs(json).into_iter().flatten().collect();
    inputs.extend(super::exact::response_inputs(json));
    inputs
}

/// Checks, without reading it into values, that every number of JSON text that a 64-bit
/// integer or a double cannot hold exactly lies inside a `tool_use` block's `input` (as
/// [`parse_value`] checks): for a reader that then reads the text a piece at a time.
///
/// # Errors
///
/// [`Error::InexactNumber`](crate::Error::InexactNumber) naming the line and column of the first one elsewhere.
///
/// # Examples
///
/// ```
/// use curator::model::formats::anthropic;
///
/// assert!(anthropic::check_numbers(r#"[{"role": "user", "content": "hi", "n": 0.70}]"#).is_ok());
/// assert!(anthropic::check_numbers(r#"[{"role": "user", "content": "hi", "n": 1e999}]"#).is_err());
/// ```
pub fn check_numbers(json: &str) -> crate::Result<()> {
    kept_inexact(json, kept_inputs(json)).map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_only_numbers_a_value_cannot_hold_outside_strings() {
        let json = r#"{"a": 1E400, "b": "2e999", "c": -1e309, "d": 1e308, "e": 12345678901234567890123,
            "f": 0.70, "g": 1e2, "h": 18446744073709551615, "i": -9223372036854775808,
            "j": 0.1000000000000000055511151231257827, "k": 100000000000000000000, "l": -0.0}"#;
        let found: Vec<&str> = inexact(json).into_iter().filter_map(|r| json.get(r)).collect();
        assert_eq!(
            found,
            ["1E400", "-1e309", "12345678901234567890123", "0.1000000000000000055511151231257827"]
        );
        assert_eq!(place(json, json.find("0.1000").unwrap_or_default()), (3, 18));
    }

    #[derive(serde::Deserialize)]
    struct Doc<'a> {
        #[serde(borrow)]
        input: &'a RawValue,
    }

    #[test]
    fn a_number_inside_the_kept_text_reads_as_zero_and_one_outside_is_refused() {
        let inside = r#"{"x": 1, "input": {"a": 1E400, "b": [-2e500]}}"#;
        let doc: Doc<'_> = serde_json::from_str(inside).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            value_keeping(inside, [doc.input]).ok().flatten(),
            Some(serde_json::json!({"x": 1, "input": {"a": 0, "b": [0]}}))
        );
        let outside = r#"{"x": 1e400, "input": {"a": 1E400}}"#;
        let doc: Doc<'_> = serde_json::from_str(outside).unwrap_or_else(|e| panic!("{e}"));
        assert!(matches!(
            value_keeping(outside, [doc.input]),
            Err(crate::Error::InexactNumber { line: 1, column: 7, .. })
        ));
        assert_eq!(input_value(r#"{"a": 1E400}"#), Some(serde_json::json!({"a": 0})));
    }
}
