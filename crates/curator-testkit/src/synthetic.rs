//! A deterministic synthetic agent history, for benchmarks and load tests.

use curator_model::{Message, ToolCall};

/// A small deterministic pseudo-random generator (xorshift64*), so fixtures need no
/// dependency and are identical on every machine.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator from a seed.
    pub fn new(seed: u64) -> Self {
        Self(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    /// The next number.
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A number in `lo..=hi`.
    pub fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + (self.next_u64() % (hi - lo + 1) as u64) as usize
    }
}

const WORDS: &[&str] = &[
    "error",
    "test",
    "file",
    "src/lib.rs",
    "passed",
    "failed",
    "function",
    "return",
    "value",
    "line",
    "assert",
    "cargo",
    "build",
    "warning",
    "unused",
    "import",
    "module",
    "struct",
    "impl",
    "fn",
    "let",
    "match",
    "Ok(())",
    "None",
    "self",
];

fn text(rng: &mut Rng, chars: usize) -> String {
    let mut out = String::with_capacity(chars + 16);
    while out.len() < chars {
        out.push_str(WORDS[rng.range(0, WORDS.len() - 1)]);
        out.push(if rng.range(0, 9) == 0 { '\n' } else { ' ' });
    }
    out.truncate(chars);
    out
}

/// The messages of one agent step: an assistant message with 1 to 3 tool calls and their
/// results of 50 to 5,000 characters, sometimes followed by a user message.
pub fn step(rng: &mut Rng, n: usize) -> Vec<Message> {
    let tools = ["bash", "read_file", "search", "edit_file"];
    let calls: Vec<ToolCall> = (0..rng.range(1, 3))
        .map(|k| {
            let args = format!(
                r#"{{"command": "{}", "step": {n}}}"#,
                text(rng, 40).replace(['"', '\n', '\\'], " ")
            );
            ToolCall::new(format!("call_{n}_{k}"), tools[rng.range(0, tools.len() - 1)], args)
        })
        .collect();
    let thought = (rng.range(0, 2) == 0).then(|| text(rng, 120).into());
    let mut out = vec![Message::assistant_with_calls(thought, calls.clone())];
    for call in &calls {
        let len = rng.range(50, 5_000);
        out.push(Message::tool_result(call.id(), text(rng, len)).with_name(call.name()));
    }
    if rng.range(0, 9) == 0 {
        out.push(Message::user(text(rng, 80)));
    }
    out
}

/// A history of at least `len` messages (it ends on a whole step): a system message, the
/// task, then agent steps. The same `(len, seed)` always gives the same history.
pub fn agent_history(len: usize, seed: u64) -> Vec<Message> {
    let mut rng = Rng::new(seed);
    let mut out = vec![
        Message::system(
            "You are a software engineering agent. Use the tools to fix the failing test.",
        ),
        Message::user("The test `parse::tests::roundtrip` fails. Find the cause and fix it."),
    ];
    let mut n = 0;
    while out.len() < len {
        out.extend(step(&mut rng, n));
        n += 1;
    }
    out
}
