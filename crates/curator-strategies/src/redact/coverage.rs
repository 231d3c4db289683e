//! A generated example for every rule of the bundled set, redacted in plain text, in
//! tool-call arguments and in JSON-escaped text.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use curator_model::{Message, ToolCall};
use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use serde_json::Value;

use super::{Redactor, bundled, is_placeholder};
use crate::{CurationContext, HistoryManagerExt};

/// Draws per rule: the first example the rule itself reports is the one checked.
const DRAWS: usize = 24;

/// `source` rewritten to draw realistic examples: without the assertions (`\b`, `^`, `$`, …)
/// the generator cannot produce, case-sensitive (a `(?i)` class also draws the Kelvin sign
/// or a long s), and with `.`, `\s`, `\w`, `\d`, their negations and negated classes kept to
/// printable ASCII. Whatever it draws is checked against the rule itself.
fn generator_source(source: &str) -> String {
    let mut out = String::with_capacity(source.len());
    let mut chars = source.chars().peekable();
    // For each open class: whether it was negated, and so opened as two.
    let mut classes: Vec<bool> = Vec::new();
    let mut extended = false;
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some('b' | 'B' | 'A' | 'z') if classes.is_empty() => {}
                Some(k @ ('s' | 'S' | 'w' | 'W' | 'd' | 'D')) => {
                    let set = match k {
                        's' => " \\t\\n",
                        'S' => "!-~",
                        'w' => "A-Za-z0-9_",
                        'W' => " -/:-@\\[-^`{-~",
                        'd' => "0-9",
                        _ => " -/:-~",
                    };
                    if classes.is_empty() {
                        out.push('[');
                        out.push_str(set);
                        out.push(']');
                    } else {
                        out.push_str(set);
                    }
                }
                Some(next) => {
                    out.push('\\');
                    out.push(next);
                }
                None => out.push('\\'),
            },
            '[' => {
                if chars.peek() == Some(&'^') {
                    // A negated class, within printable ASCII.
                    chars.next();
                    out.push_str("[ -~&&[^");
                    classes.push(true);
                } else {
                    out.push('[');
                    classes.push(false);
                }
                if chars.peek() == Some(&']') {
                    out.push_str("\\]");
                    chars.next();
                }
            }
            ']' if !classes.is_empty() => {
                out.push_str(if classes.pop() == Some(true) { "]]" } else { "]" });
            }
            '(' if classes.is_empty() && chars.peek() == Some(&'?') => {
                chars.next();
                let mut flags = String::new();
                while let Some(&f) = chars.peek() {
                    if f.is_ascii_alphabetic() && f != 'P' || f == '-' {
                        flags.push(f);
                        chars.next();
                    } else {
                        break;
                    }
                }
                if flags.contains('x') && !flags.contains("-x") {
                    extended = true;
                }
                let kept: String = flags.chars().filter(|&f| f != 'i').collect();
                let kept = kept.trim_end_matches('-');
                if kept.is_empty() && chars.peek() == Some(&')') {
                    chars.next();
                } else {
                    out.push_str("(?");
                    out.push_str(kept);
                }
            }
            '#' if extended && classes.is_empty() => {
                // A comment, which may hold any character.
                for d in chars.by_ref() {
                    if d == '\n' {
                        out.push('\n');
                        break;
                    }
                }
            }
            '.' if classes.is_empty() => out.push_str("[ -~]"),
            '^' | '$' if classes.is_empty() => {}
            c => out.push(c),
        }
    }
    out
}

/// `text` as a JSON string literal with more escapes than needed: every `/` as `\/` and the
/// secret's third character as a `\u` escape, as some encoders write them.
fn escaped_json(text: &str, secret: &str) -> String {
    let escape = |s: &str| {
        let literal = serde_json::to_string(s).unwrap_or_default();
        literal[1..literal.len() - 1].replace('/', "\\/")
    };
    let at = text.find(secret).unwrap_or(text.len());
    let rest = &text[at..];
    let mut literal = escape(&text[..at]);
    if let Some(after) = rest.strip_prefix(secret) {
        for (i, c) in secret.char_indices() {
            if i == 2 && c.is_ascii_alphanumeric() {
                let _ = write!(literal, "\\u{:04x}", u32::from(c));
            } else {
                literal.push_str(&escape(&secret[i..i + c.len_utf8()]));
            }
        }
        literal.push_str(&escape(after));
    } else {
        literal.push_str(&escape(rest));
    }
    format!("{{\"input\": \"{literal}\"}}")
}

/// What became of one rule.
enum Outcome {
    Covered,
    Skipped(String),
    Failed(String),
}

fn check_rule(redactor: &Redactor, rule: usize, runner: &mut TestRunner) -> Outcome {
    let Some(set) = bundled() else { return Outcome::Failed("no bundled set".into()) };
    let (source, compiles) = set.source(rule);
    if !compiles {
        return Outcome::Skipped("its expression does not compile with the regex crate".into());
    }
    // The generator asserts that a class it draws from is not empty, which a class limited
    // to printable ASCII can be.
    let generated = generator_source(source);
    let strategy = std::panic::catch_unwind(|| {
        proptest::string::string_regex(&generated).map_err(|e| e.to_string())
    });
    let Ok(strategy) = strategy else {
        return Outcome::Skipped("a class of the expression has no printable ASCII".into());
    };
    let strategy = match strategy {
        Ok(s) => s,
        Err(e) => {
            let why = e.lines().last().unwrap_or_default().trim_start_matches("error: ");
            return Outcome::Skipped(format!("the generator cannot draw from it: {why}"));
        }
    };
    let mut reported = 0;
    let mut keyword_only = None;
    let mut last_failure = String::new();
    for _ in 0..DRAWS {
        let tree =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| strategy.new_tree(runner)));
        let Ok(Ok(tree)) = tree else {
            return Outcome::Skipped("a class of the expression has no printable ASCII".into());
        };
        let example = tree.current();
        // The example as the rule itself reports it (expression, entropy, allow-lists).
        let Some(finding) = set.find_with(rule, &example).into_iter().next() else { continue };
        let secret = &example[finding.start..finding.end];
        // A secret as they are written: printable, without quotes or backslashes.
        let token = secret.chars().all(|c| c.is_ascii_graphic() && !"\"'`\\".contains(c));
        if secret.len() < 8 || !token || is_placeholder(secret) {
            continue;
        }
        // A rule tried only where one of its keywords is written (its authors rate it low in
        // confidence, or its expression holds no literal of 3 characters or more).
        let (by_literals, keywords) = set.triggers(rule);
        let lower = example.to_lowercase();
        if !by_literals && !keywords.iter().any(|k| lower.contains(k.as_str())) {
            keyword_only = Some(keywords.join(", "));
            continue;
        }
        reported += 1;
        match check_forms(redactor, &example, secret) {
            Ok(()) => return Outcome::Covered,
            Err(e) => last_failure = e,
        }
    }
    if let (0, Some(keywords)) = (reported, keyword_only) {
        return Outcome::Skipped(format!(
            "tried only where its keyword is written ({keywords}): rated low in confidence, \
             or no literal of 3 characters or more in its expression"
        ));
    }
    if reported == 0 {
        Outcome::Skipped(format!(
            "none of {DRAWS} drawn examples is reported by the rule (entropy, allow-list, \
             or a secret under 8 printable characters)"
        ))
    } else {
        Outcome::Failed(last_failure)
    }
}

/// Checks that `secret` is gone from `example` redacted as text, as a tool call's argument,
/// and as JSON-escaped text (which stays valid JSON).
fn check_forms(redactor: &Redactor, example: &str, secret: &str) -> Result<(), String> {
    let plain = redactor.redact(example);
    if plain.contains(secret) {
        return Err(format!("plain text: {secret:?} left in {plain:?}"));
    }
    let arguments = serde_json::json!({ "input": example }).to_string();
    let call = Message::assistant_with_calls(None, vec![ToolCall::new("c1", "run", arguments)]);
    // Answered: a call left unanswered at the end is never sent.
    let result = Message::tool_result("c1", "done");
    let view = redactor
        .curate_messages(&[call, result], &CurationContext::default())
        .map_err(|e| format!("curate: {e}"))?;
    let args: Value = view
        .first()
        .and_then(|m| m.tool_calls().first())
        .and_then(|c| serde_json::from_str(c.arguments()).ok())
        .ok_or("tool call: arguments no longer JSON")?;
    if args["input"].as_str().is_none_or(|s| s.contains(secret)) {
        return Err(format!("tool call: {secret:?} left in {args}"));
    }
    let escaped = escaped_json(example, secret);
    let Ok(Value::Object(before)) = serde_json::from_str::<Value>(&escaped) else {
        return Err(format!("escaped example is not JSON: {escaped}"));
    };
    if before["input"].as_str() != Some(example) {
        return Err(format!("escaped example does not decode to the example: {escaped}"));
    }
    let redacted = redactor.redact(&escaped);
    match serde_json::from_str::<Value>(&redacted) {
        Ok(after) if after["input"].as_str().is_some_and(|s| !s.contains(secret)) => Ok(()),
        Ok(after) => Err(format!("JSON-escaped: {secret:?} left in {after}")),
        Err(_) => Err(format!("JSON-escaped: no longer JSON: {redacted}")),
    }
}

/// Every rule of the bundled set that an example can be drawn for is redacted in all three
/// forms; the rules skipped are listed with the reason, and counted.
#[test]
fn every_rule_with_a_generated_example_is_redacted() {
    let set = bundled().unwrap();
    let redactor = Redactor::new();
    let mut runner = TestRunner::new_with_rng(
        Config::default(),
        TestRng::from_seed(RngAlgorithm::ChaCha, &[29; 32]),
    );
    let mut covered = 0;
    let mut skipped: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut failed = Vec::new();
    for rule in 0..set.len() {
        match check_rule(&redactor, rule, &mut runner) {
            Outcome::Covered => covered += 1,
            Outcome::Skipped(reason) => {
                skipped.entry(reason).or_default().push(set.id(rule).into());
            }
            Outcome::Failed(why) => failed.push(format!("{}: {why}", set.id(rule))),
        }
    }
    let skipped_count: usize = skipped.values().map(Vec::len).sum();
    eprintln!(
        "{covered} of {} rules covered, {skipped_count} skipped, {} failed",
        set.len(),
        failed.len()
    );
    for (reason, ids) in &skipped {
        eprintln!("skipped ({}), {reason}: {}", ids.len(), ids.join(", "));
    }
    assert!(failed.is_empty(), "{} failed:\n{}", failed.len(), failed.join("\n"));
}
