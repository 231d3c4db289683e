//! `cargo xtask demo-data`: generates the example session `curator demo` replays.
//!
//! A deterministic coding-agent session in the OpenAI format: a system prompt, a task, then
//! steps of tool calls (one to three at a time) whose outputs are the large texts real coding
//! agents read: directory listings, source files, compiler and test logs. The file is
//! committed at `crates/curator-cli/data/demo.json`; a test checks it is what this generates.

use std::fmt::Write as _;

use serde_json::{Value, json};

/// A tiny deterministic generator, so the data never changes between machines.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const MODULES: &[&str] = &["lexer", "parser", "ast", "eval", "format", "errors", "span", "config"];

fn source_file(rng: &mut Rng, module: &str, lines: usize) -> String {
    let mut out = format!(
        "//! The {module} of the expression engine.\n\nuse crate::span::Span;\nuse crate::errors::Error;\n\n"
    );
    let mut n = 0;
    while out.lines().count() < lines {
        n += 1;
        let _ = write!(
            out,
            "/// Handles case {n} of the {module}.\npub fn {module}_case_{n}(input: &str, span: Span) -> Result<usize, Error> {{\n    let trimmed = input.trim();\n    if trimmed.len() > {limit} {{\n        return Err(Error::TooLong {{ span, limit: {limit} }});\n    }}\n    let mut total = 0;\n    for (i, c) in trimmed.char_indices() {{\n        if c.is_ascii_digit() {{\n            total += i * {k};\n        }}\n    }}\n    Ok(total)\n}}\n\n",
            limit = 64 + rng.below(512),
            k = 1 + rng.below(9),
        );
    }
    out
}

fn listing(rng: &mut Rng) -> String {
    let mut out = String::from("Cargo.toml\nCargo.lock\nREADME.md\nsrc/\n");
    for m in MODULES {
        let _ = writeln!(out, "src/{m}.rs  ({} lines)", 80 + rng.below(600));
    }
    out.push_str(
        "src/lib.rs\ntests/\ntests/roundtrip.rs\ntests/errors.rs\nbenches/\nbenches/parse.rs\n",
    );
    out
}

fn test_log(rng: &mut Rng, failing: bool, tests: usize) -> String {
    let mut out = String::from(
        "   Compiling exprs v0.3.1 (/workspace/exprs)\n    Finished `test` profile [unoptimized + debuginfo] target(s) in 4.21s\n     Running unittests src/lib.rs (target/debug/deps/exprs-5f1c2a)\n\n",
    );
    let _ = writeln!(out, "running {tests} tests");
    for i in 0..tests {
        let module = MODULES[i % MODULES.len()];
        let fails = failing && i == 17;
        let _ = writeln!(
            out,
            "test {module}::tests::case_{i} ... {}",
            if fails { "FAILED" } else { "ok" }
        );
    }
    if failing {
        out.push_str("\nfailures:\n\n---- parser::tests::case_17 stdout ----\nthread 'parser::tests::case_17' panicked at src/parser.rs:214:9:\nassertion `left == right` failed\n  left: Expr::Binary { op: Sub, lhs: Num(1), rhs: Binary { op: Sub, lhs: Num(2), rhs: Num(3) } }\n right: Expr::Binary { op: Sub, lhs: Binary { op: Sub, lhs: Num(1), rhs: Num(2) }, rhs: Num(3) }\nnote: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n\nfailures:\n    parser::tests::case_17\n\n");
        let _ = writeln!(
            out,
            "test result: FAILED. {} passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.{:02}s",
            tests - 1,
            rng.below(99)
        );
    } else {
        let _ = writeln!(
            out,
            "\ntest result: ok. {tests} passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.{:02}s",
            rng.below(99)
        );
    }
    out
}

fn grep_output(module: &str) -> String {
    let mut out = String::new();
    for k in 1..40 {
        let _ = writeln!(
            out,
            "src/{module}.rs:{}:pub fn {module}_case_{k}(input: &str, span: Span)",
            6 + 14 * k
        );
    }
    out
}

fn call(id: &str, name: &str, arguments: &Value) -> Value {
    json!({"id": id, "type": "function", "function": {"name": name, "arguments": arguments.to_string()}})
}

/// The demo session, as pretty JSON text.
pub(crate) fn generate() -> String {
    let mut rng = Rng(0x5eed_cafe_f00d_1234);
    let mut messages = vec![
        json!({"role": "system", "content": "You are a careful software engineering agent working in /workspace/exprs, a Rust expression parser. Use the tools to read files, run commands and edit code. Make the smallest change that fixes the problem, and run the tests before you finish."}),
        json!({"role": "user", "content": "The test `parser::tests::case_17` fails: subtraction is parsed as right-associative, so `1 - 2 - 3` evaluates to 2 instead of -4. Find the cause and fix it."}),
    ];
    let mut n = 0;
    let mut step = |messages: &mut Vec<Value>,
                    thought: Option<&str>,
                    calls: Vec<(&str, Value, String)>| {
        let ids: Vec<String> = (0..calls.len()).map(|k| format!("call_{n:02}_{k}")).collect();
        n += 1;
        let tool_calls: Vec<Value> =
            calls.iter().zip(&ids).map(|((name, args, _), id)| call(id, name, args)).collect();
        messages.push(json!({"role": "assistant", "content": thought, "tool_calls": tool_calls}));
        for ((name, _, output), id) in calls.into_iter().zip(ids) {
            messages
                .push(json!({"role": "tool", "tool_call_id": id, "name": name, "content": output}));
        }
    };
    step(
        &mut messages,
        Some("Let me look at the project layout first."),
        vec![("bash", json!({"command": "find . -name '*.rs' | xargs wc -l"}), listing(&mut rng))],
    );
    step(
        &mut messages,
        Some("I'll reproduce the failure."),
        vec![("bash", json!({"command": "cargo test"}), test_log(&mut rng, true, 120))],
    );
    for (i, module) in MODULES.iter().enumerate() {
        let lines = 150 + 60 * (i % 3);
        let thought = if i == 0 {
            Some("The failure is in the parser. Let me read the modules it depends on.")
        } else {
            None
        };
        let mut calls = vec![(
            "read_file",
            json!({"path": format!("src/{module}.rs")}),
            source_file(&mut rng, module, lines),
        )];
        if i % 3 == 1 {
            calls.push((
                "bash",
                json!({"command": format!("grep -n 'fn {module}_case' src/{module}.rs")}),
                grep_output(module),
            ));
        }
        step(&mut messages, thought, calls);
    }
    step(
        &mut messages,
        Some(
            "`parse_binary` recurses on the right operand with the same precedence, which makes operators right-associative. I'll loop instead.",
        ),
        vec![(
            "edit_file",
            json!({"path": "src/parser.rs", "old": "let rhs = self.parse_binary(prec)?;", "new": "let rhs = self.parse_binary(prec + 1)?;"}),
            "Edited src/parser.rs: 1 line changed.".to_owned(),
        )],
    );
    step(
        &mut messages,
        Some("Running the tests again."),
        vec![("bash", json!({"command": "cargo test"}), test_log(&mut rng, false, 120))],
    );
    for round in 0..6 {
        let module = MODULES[round % MODULES.len()];
        step(
            &mut messages,
            None,
            vec![
                (
                    "read_file",
                    json!({"path": format!("tests/{module}_extra.rs")}),
                    source_file(&mut rng, module, 120),
                ),
                (
                    "bash",
                    json!({"command": format!("cargo test {module}")}),
                    test_log(&mut rng, false, 40 + round * 5),
                ),
            ],
        );
    }
    step(&mut messages, Some("Checking that nothing else regressed and that the formatter is happy."), vec![
        ("bash", json!({"command": "cargo fmt --check && cargo clippy -- -D warnings"}), "    Checking exprs v0.3.1 (/workspace/exprs)\n    Finished `dev` profile [unoptimized + debuginfo] target(s) in 2.87s\n".to_owned()),
        ("bash", json!({"command": "cargo test"}), test_log(&mut rng, false, 120)),
        ("bash", json!({"command": "git diff"}), "diff --git a/src/parser.rs b/src/parser.rs\n--- a/src/parser.rs\n+++ b/src/parser.rs\n@@ -211,7 +211,7 @@ impl Parser {\n             let op = self.advance();\n-            let rhs = self.parse_binary(prec)?;\n+            let rhs = self.parse_binary(prec + 1)?;\n             lhs = Expr::binary(op, lhs, rhs);\n".to_owned()),
    ]);
    messages.push(json!({"role": "assistant", "content": "Fixed: `parse_binary` parsed the right operand at the same precedence, making `-` right-associative. It now parses it at `prec + 1`, so `1 - 2 - 3` is `(1 - 2) - 3 = -4`. All 120 tests pass, and fmt and clippy are clean."}));
    let document = json!({"id": "demo-exprs-fix", "messages": messages});
    serde_json::to_string_pretty(&document).unwrap_or_default() + "\n"
}

/// The committed file.
pub(crate) fn path() -> std::path::PathBuf {
    crate::workspace::root().join("crates/curator-cli/data/demo.json")
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_committed_demo_is_what_the_generator_makes() {
        let committed = std::fs::read_to_string(super::path()).unwrap_or_default();
        assert!(
            committed == super::generate(),
            "crates/curator-cli/data/demo.json is stale: run `cargo xtask demo-data`"
        );
    }
}
