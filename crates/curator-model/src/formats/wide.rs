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

/// The byte ranges of the number tokens of `json` (outside strings) that a float cannot
/// hold.
fn overflowing(json: &str) -> Vec<Range<usize>> {
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
            let token = json.get(start..i).unwrap_or_default();
            if token.parse::<f64>().is_ok_and(f64::is_infinite) {
                out.push(start..i);
            }
        } else {
            i += 1;
        }
    }
    out
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

/// The value of `json` when its only numbers out of a float's range lie inside `kept` (slices
/// of `json` whose text is kept as written): those read as `0`. `None` when there is no such
/// number, one lies elsewhere, or the text fails for another reason.
pub(super) fn value_keeping<'a>(
    json: &str,
    kept: impl IntoIterator<Item = &'a RawValue>,
) -> Option<Value> {
    let ranges = overflowing(json);
    if ranges.is_empty() {
        return None;
    }
    let spans: Vec<Range<usize>> = kept.into_iter().filter_map(|raw| span(json, raw)).collect();
    let inside = |r: &Range<usize>| spans.iter().any(|s| s.start <= r.start && r.end <= s.end);
    if !ranges.iter().all(inside) {
        return None;
    }
    serde_json::from_str(&patched(json, &ranges)).ok()
}

/// The value of a `tool_use` input's text, its numbers out of a float's range read as `0`
/// (as [`value_keeping`] reads them in the whole request).
pub(super) fn input_value(text: &str) -> Option<Value> {
    serde_json::from_str(text)
        .ok()
        .or_else(|| serde_json::from_str(&patched(text, &overflowing(text))).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_only_numbers_out_of_range_outside_strings() {
        let json =
            r#"{"a": 1E400, "b": "2e999", "c": -1e309, "d": 1e308, "e": 12345678901234567890123}"#;
        let found: Vec<&str> = overflowing(json).into_iter().filter_map(|r| json.get(r)).collect();
        assert_eq!(found, ["1E400", "-1e309"]);
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
            value_keeping(inside, [doc.input]),
            Some(serde_json::json!({"x": 1, "input": {"a": 0, "b": [0]}}))
        );
        let outside = r#"{"x": 1e400, "input": {"a": 1E400}}"#;
        let doc: Doc<'_> = serde_json::from_str(outside).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(value_keeping(outside, [doc.input]), None);
        assert_eq!(input_value(r#"{"a": 1E400}"#), Some(serde_json::json!({"a": 0})));
    }
}
