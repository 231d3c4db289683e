//! Project automation, run as `cargo xtask <command>`.
#![expect(clippy::print_stderr, reason = "xtask reports progress on stderr")]

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Some("ci") = args.first().map(String::as_str) {
        run_ci()
    } else {
        eprintln!("usage: cargo xtask ci");
        ExitCode::from(2)
    }
}

/// The workspace root, found from this crate's manifest directory.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
}

/// Runs what `.ci/run` runs.
fn run_ci() -> ExitCode {
    let status = Command::new("bash").arg(root().join(".ci/run")).current_dir(root()).status();
    match status {
        Ok(s) if s.success() => ExitCode::SUCCESS,
        Ok(_) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("cannot run .ci/run: {e}");
            ExitCode::FAILURE
        }
    }
}
