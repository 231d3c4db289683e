//! The shared transcript corpus: one conversation per JSON line, OpenAI format.

use std::path::PathBuf;

use serde_json::Value;

/// One conversation of the corpus.
#[derive(Debug, Clone)]
pub struct Conversation {
    /// The file it came from.
    pub file: String,
    /// Its `id` field.
    pub id: String,
    /// Its `messages` array, as JSON.
    pub messages: Value,
}

/// Where the corpus lives: `$CURATOR_CORPUS`, else `shared/corpus` beside the checkout.
pub fn dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("CURATOR_CORPUS") {
        return PathBuf::from(dir);
    }
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpus")
}

/// Every conversation of every `*.jsonl` file, sorted by file name, or `None` (with the
/// reason printed) when the corpus is absent, so that a test can skip cleanly.
///
/// # Panics
///
/// When a file is present but unreadable or holds a line that is not a conversation: the
/// corpus is test data, and a broken one must fail the test loudly.
pub fn load() -> Option<Vec<Conversation>> {
    let dir = dir();
    let Ok(entries) = std::fs::read_dir(&dir) else {
        eprintln!("skipping: transcript corpus not found at {}", dir.display());
        return None;
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    files.sort();
    let mut out = Vec::new();
    for path in files {
        let file = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
        for (n, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
            let mut value: Value = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("{file}:{}: not JSON: {e}", n + 1));
            let id = value["id"].as_str().unwrap_or_default().to_owned();
            let messages = value.get_mut("messages").map_or(Value::Null, Value::take);
            out.push(Conversation { file: file.clone(), id, messages });
        }
    }
    if out.is_empty() {
        eprintln!("skipping: no conversations in {}", dir.display());
        return None;
    }
    Some(out)
}
