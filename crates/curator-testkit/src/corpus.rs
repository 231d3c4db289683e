//! The shared transcript corpus: one conversation per JSON line, OpenAI format.

use std::path::{Path, PathBuf};

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

/// What a test does about the corpus.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// The corpus is there: read it.
    Load,
    /// The corpus is missing on a developer's machine: skip, saying why.
    Skip,
    /// The corpus is missing under CI: fail, since a skipped corpus test passes while
    /// checking nothing.
    Fail,
}

/// The rule for a missing corpus: skip on a developer's machine, fail under CI (the `CI`
/// variable set to `true` or `1`, as CI services set it), where a silent skip would let a run
/// pass without reading a single transcript.
pub fn decide(corpus_present: bool, ci: Option<&str>) -> Decision {
    let under_ci = ci.is_some_and(|v| v.eq_ignore_ascii_case("true") || v == "1");
    match (corpus_present, under_ci) {
        (true, _) => Decision::Load,
        (false, false) => Decision::Skip,
        (false, true) => Decision::Fail,
    }
}

/// Every conversation of every `*.jsonl` file, sorted by file name, or `None` (with the
/// reason printed) when the corpus is absent or empty, so that a test can skip cleanly.
///
/// # Panics
///
/// When the corpus is absent or empty and the `CI` variable is `true` (see [`decide`]), and
/// when a file is present but unreadable or holds a line that is not a conversation: the
/// corpus is test data, and a missing or broken one must not pass unnoticed.
pub fn load() -> Option<Vec<Conversation>> {
    let dir = dir();
    let conversations = read(&dir);
    let present = conversations.as_ref().is_some_and(|c| !c.is_empty());
    match decide(present, std::env::var("CI").ok().as_deref()) {
        Decision::Load => conversations,
        Decision::Skip => {
            eprintln!(
                "skipping: no transcript corpus at {} (set CURATOR_CORPUS to its folder)",
                dir.display()
            );
            None
        }
        Decision::Fail => panic!(
            "no transcript corpus at {}, and CI is set: corpus tests must not pass without \
             reading it (put the corpus there or set CURATOR_CORPUS to its folder)",
            dir.display()
        ),
    }
}

/// The conversations of the `*.jsonl` files in `dir`, or `None` when `dir` cannot be read.
fn read(dir: &Path) -> Option<Vec<Conversation>> {
    let entries = std::fs::read_dir(dir).ok()?;
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
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::{Decision, decide};

    #[track_caller]
    fn check(corpus_present: bool, ci: Option<&str>, expected: Decision) {
        assert_eq!(decide(corpus_present, ci), expected, "present: {corpus_present}, CI: {ci:?}");
    }

    #[test]
    fn a_missing_corpus_skips_on_a_desk_and_fails_under_ci() {
        check(true, None, Decision::Load);
        check(true, Some("true"), Decision::Load);
        check(false, None, Decision::Skip);
        check(false, Some("false"), Decision::Skip);
        check(false, Some(""), Decision::Skip);
        check(false, Some("true"), Decision::Fail);
        check(false, Some("TRUE"), Decision::Fail);
        check(false, Some("1"), Decision::Fail);
    }

    /// Runs only as the child of the test below, with the environment it sets.
    #[test]
    fn child_loads_the_corpus() {
        if std::env::var_os("CURATOR_TESTKIT_CHILD").is_some() {
            assert!(super::load().is_none(), "the corpus was found");
        }
    }

    #[test]
    fn load_reads_ci_from_the_environment() {
        let missing =
            std::env::temp_dir().join(format!("curator-no-corpus-{}", std::process::id()));
        let run = |ci: &str| {
            std::process::Command::new(std::env::current_exe().unwrap())
                .args(["--exact", "corpus::tests::child_loads_the_corpus", "--nocapture"])
                .env("CURATOR_TESTKIT_CHILD", "1")
                .env("CURATOR_CORPUS", &missing)
                .env("CI", ci)
                .output()
                .unwrap()
        };
        let desk = run("false");
        let stderr = String::from_utf8_lossy(&desk.stderr);
        assert!(
            desk.status.success() && stderr.contains("skipping: no transcript corpus"),
            "{stderr}"
        );
        let ci = run("true");
        let stderr = String::from_utf8_lossy(&ci.stderr);
        assert!(!ci.status.success() && stderr.contains("and CI is set"), "{stderr}");
    }
}
