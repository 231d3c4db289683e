//! Rules about the tree itself, checked by `cargo test --workspace`.

mod exports;
mod imports;
mod layers;
mod use_tree;

use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir`, outside build output and proptest regressions.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    files_ending(dir, "rs", out);
}

/// Every file under `dir` whose extension is `extension`, outside build output, proptest
/// regressions and installed packages.
fn files_ending(dir: &Path, extension: &str, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.filter_map(Result::ok) {
        let path = entry.path();
        if path.is_dir() {
            if path.file_name().is_some_and(|n| {
                n != "target" && n != "proptest-regressions" && n != "node_modules" && n != ".venv"
            }) {
                files_ending(&path, extension, out);
            }
        } else if path.extension().is_some_and(|e| e == extension) {
            out.push(path);
        }
    }
}

#[test]
fn every_rust_file_starts_with_a_module_doc_line() {
    let root = crate::workspace::root();
    let mut files = Vec::new();
    for dir in ["crates", "benches", "xtask"] {
        rust_files(&root.join(dir), &mut files);
    }
    assert!(files.len() > 20, "found only {} files", files.len());
    let missing: Vec<_> = files
        .iter()
        .filter(|f| !std::fs::read_to_string(f).is_ok_and(|text| text.starts_with("//!")))
        .map(|f| f.strip_prefix(&root).unwrap_or(f).display().to_string())
        .collect();
    assert!(missing.is_empty(), "files without a `//!` first line: {missing:?}");
}

/// The most lines a source file holds: past it, a file holds more than one thing.
const MAX_LINES: usize = 1_000;

#[test]
fn no_source_or_guide_is_longer_than_a_thousand_lines() {
    let root = crate::workspace::root();
    let mut files = vec![root.join("README.md")];
    for dir in ["crates", "benches", "xtask"] {
        rust_files(&root.join(dir), &mut files);
        files_ending(&root.join(dir), "py", &mut files);
    }
    files_ending(&root.join("docs"), "md", &mut files);
    let long: Vec<String> = files
        .iter()
        .filter_map(|f| {
            let lines = std::fs::read_to_string(f).ok()?.lines().count();
            (lines > MAX_LINES)
                .then(|| format!("{} ({lines})", f.strip_prefix(&root).unwrap_or(f).display()))
        })
        .collect();
    assert!(
        long.is_empty(),
        "files over {MAX_LINES} lines (split them by what they hold): {long:?}"
    );
}
