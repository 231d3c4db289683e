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

const MODULES: &[&str] = &[
    "lexer", "parser", "ast", "eval", "format", "errors", "config", "types", "infer", "scope",
    "resolve", "codegen",
];

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

/// One bug of the demo: which module, which test, which function and line.
struct Bug {
    module: &'static str,
    test: usize,
    case: usize,
    line: usize,
}

fn failing_log(rng: &mut Rng, bug: &Bug, tests: usize) -> String {
    let mut out = String::from(
        "   Compiling exprs v0.3.1 (/workspace/exprs)\n    Finished `test` profile [unoptimized + debuginfo] target(s) in 3.87s\n     Running unittests src/lib.rs (target/debug/deps/exprs-5f1c2a9)\n\n",
    );
    let _ = writeln!(out, "running {tests} tests");
    for i in 0..tests {
        let _ = writeln!(
            out,
            "test {}::tests::case_{i} ... {}",
            bug.module,
            if i == bug.test { "FAILED" } else { "ok" }
        );
    }
    let _ = write!(
        out,
        "\nfailures:\n\n---- {m}::tests::case_{t} stdout ----\nthread '{m}::tests::case_{t}' panicked at src/{m}.rs:{line}:13:\ncalled `Result::unwrap()` on an `Err` value: TooLong {{ span: Span {{ start: 0, end: {end} }}, limit: {limit} }}\nnote: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n\nfailures:\n    {m}::tests::case_{t}\n\ntest result: FAILED. {passed} passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.{ms:02}s\n",
        m = bug.module,
        t = bug.test,
        line = bug.line,
        end = 70 + bug.case,
        limit = 64 + bug.case,
        passed = tests - 1,
        ms = rng.below(99),
    );
    out
}

/// The demo session, as pretty JSON text.
///
/// A coding agent works through failing tests in twelve modules, one after the other: for
/// each it runs the tests, reads the module, finds the function and its callers, reads the
/// tests, edits and runs the tests again. Its notes name what the tool outputs showed
/// (functions, files, line numbers, limits), which is what the evidence-kept measure
/// follows. About 110 model calls: long enough that the default pipeline's 32,000-token
/// budget binds.
#[expect(clippy::too_many_lines, reason = "the demo's story, read top to bottom")]
pub(crate) fn generate() -> String {
    let mut rng = Rng(0x5eed_cafe_f00d_1234);
    let mut messages = vec![
        json!({"role": "system", "content": "You are a careful software engineering agent working in a Rust expression parser. Use the tools to read files, run commands and edit code. Make the smallest change that fixes each problem, and run the tests before you finish."}),
        json!({"role": "user", "content": "`cargo test` fails in twelve modules of the exprs crate in /workspace/exprs: each has one test that rejects a valid input as too long. Find the cause of each failure and fix it."}),
    ];
    let mut n = 0;
    let mut step = |messages: &mut Vec<Value>,
                    thought: Option<String>,
                    calls: Vec<(&str, Value, String)>| {
        let ids: Vec<String> = (0..calls.len()).map(|k| format!("call_{n:03}_{k}")).collect();
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
        Some("Let me look at the project layout first.".into()),
        vec![("bash", json!({"command": "find . -name '*.rs' | xargs wc -l"}), listing(&mut rng))],
    );
    let mut fixed = Vec::new();
    for (i, module) in MODULES.iter().enumerate() {
        let bug = Bug {
            module,
            test: 10 + (i * 7) % 30,
            case: 1 + (i * 5) % 12,
            line: 20 + 14 * (1 + (i * 5) % 12) + 3,
        };
        let function = format!("{module}_case_{}", bug.case);
        let test = format!("{module}::tests::case_{}", bug.test);
        step(
            &mut messages,
            Some(if i == 0 {
                "I'll run the tests to see the failures.".into()
            } else {
                format!("Next module: {module}. Running its tests.")
            }),
            vec![(
                "bash",
                json!({"command": format!("cargo test {module}")}),
                failing_log(&mut rng, &bug, 40),
            )],
        );
        step(
            &mut messages,
            Some(format!(
                "`{test}` fails at src/{module}.rs:{}: `TooLong` with limit {}. Let me read src/{module}.rs.",
                bug.line,
                64 + bug.case
            )),
            vec![(
                "read_file",
                json!({"path": format!("src/{module}.rs")}),
                source_file(&mut rng, module, 120 + 40 * (i % 3)),
            )],
        );
        step(
            &mut messages,
            Some(format!("The panic is in `{function}`. Where is it called from?")),
            vec![(
                "bash",
                json!({"command": format!("grep -n '{function}' -r src tests")}),
                grep_output(module),
            )],
        );
        step(
            &mut messages,
            Some(format!("Reading the test `{test}` in tests/{module}_tests.rs.")),
            vec![(
                "read_file",
                json!({"path": format!("tests/{module}_tests.rs")}),
                source_file(&mut rng, module, 90),
            )],
        );
        step(
            &mut messages,
            Some(format!(
                "`{function}` compares the trimmed length with `>` against {}, but the span end {} counts the closing delimiter. Checking `Span` in src/span.rs.",
                64 + bug.case,
                70 + bug.case
            )),
            vec![("read_file", json!({"path": "src/span.rs"}), source_file(&mut rng, "span", 60))],
        );
        step(
            &mut messages,
            Some(format!("Fixing the bound in `{function}` at src/{module}.rs:{}.", bug.line - 3)),
            vec![(
                "edit_file",
                json!({"path": format!("src/{module}.rs"), "old": format!("if trimmed.len() > {} {{", 64 + bug.case), "new": format!("if trimmed.len() > {} + 1 {{", 64 + bug.case)}),
                format!("Edited src/{module}.rs: 1 line changed."),
            )],
        );
        step(
            &mut messages,
            Some(format!("Reviewing the edit of src/{module}.rs.")),
            vec![(
                "bash",
                json!({"command": format!("git diff src/{module}.rs")}),
                format!(
                    "diff --git a/src/{module}.rs b/src/{module}.rs\n--- a/src/{module}.rs\n+++ b/src/{module}.rs\n@@ -{l},3 +{l},3 @@ pub fn {function}(input: &str, span: Span)\n     let trimmed = input.trim();\n-    if trimmed.len() > {limit} {{\n+    if trimmed.len() > {limit} + 1 {{\n",
                    l = bug.line - 4,
                    limit = 64 + bug.case
                ),
            )],
        );
        step(
            &mut messages,
            Some(format!("Running `cargo test {module}` again.")),
            vec![(
                "bash",
                json!({"command": format!("cargo test {module}")}),
                test_log(&mut rng, false, 40),
            )],
        );
        {
            let caller = MODULES[(i + MODULES.len() - 1) % MODULES.len()];
            step(
                &mut messages,
                Some(format!("`{test}` passes. Checking that the callers in src/{caller}.rs still build.")),
                vec![
                    (
                        "bash",
                        json!({"command": "cargo check"}),
                        "    Checking exprs v0.3.1 (/workspace/exprs)\n    Finished `dev` profile [unoptimized + debuginfo] target(s) in 1.94s\n".to_owned(),
                    ),
                    (
                        "read_file",
                        json!({"path": format!("src/{caller}.rs")}),
                        source_file(&mut rng, caller, 80),
                    ),
                ],
            );
        }
        fixed.push((function, bug.line - 3));
    }
    step(&mut messages, Some("All twelve modules are fixed. Checking that nothing else regressed and that the formatter is happy.".into()), vec![
        ("bash", json!({"command": "cargo fmt --check && cargo clippy -- -D warnings"}), "    Checking exprs v0.3.1 (/workspace/exprs)\n    Finished `dev` profile [unoptimized + debuginfo] target(s) in 2.87s\n".to_owned()),
        ("bash", json!({"command": "cargo test"}), test_log(&mut rng, false, 120)),
    ]);
    let mut diff = String::new();
    for ((function, line), module) in fixed.iter().zip(MODULES) {
        let _ = write!(
            diff,
            "diff --git a/src/{module}.rs b/src/{module}.rs\n@@ -{line},3 +{line},3 @@ pub fn {function}(input: &str, span: Span)\n"
        );
    }
    step(
        &mut messages,
        Some("Reviewing the whole change.".into()),
        vec![("bash", json!({"command": "git diff --stat && git diff"}), diff)],
    );
    let summary: Vec<String> = fixed
        .iter()
        .zip(MODULES)
        .map(|((f, line), m)| format!("`{f}` (src/{m}.rs:{line})"))
        .collect();
    messages.push(json!({"role": "assistant", "content": format!("Fixed all twelve failures: each length check rejected inputs one character too early because the span end counts the closing delimiter. Changed: {}. All 120 tests pass, and fmt and clippy are clean.", summary.join(", "))}));
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
