//! `cargo xtask front-page`: builds and runs the facade's front-page example as a new user
//! would: pasted into the `main.rs` of a new crate outside the workspace that depends on
//! `curator` by path, with its default features.

use std::path::Path;
use std::process::ExitCode;

use crate::workspace::{cargo, root};

/// The front page's example ("The main job"), as the program a user would paste: the code
/// of the doc comment's first Rust block after that heading, hidden lines included, inside
/// a `main` that returns the facade's `Error`.
pub(crate) fn program(lib_rs: &str) -> Result<String, String> {
    let doc: Vec<&str> = lib_rs
        .lines()
        .map_while(|l| l.strip_prefix("//!"))
        .map(|l| l.strip_prefix(' ').unwrap_or(l))
        .collect();
    let heading = doc
        .iter()
        .position(|l| *l == "# The main job")
        .ok_or("the facade's front page has no `# The main job` section")?;
    let open = doc[heading..]
        .iter()
        .position(|l| *l == "```" || *l == "```rust")
        .map(|i| heading + i)
        .ok_or("`# The main job` has no code block")?;
    let close = doc[open + 1..]
        .iter()
        .position(|l| l.starts_with("```"))
        .map(|i| open + 1 + i)
        .ok_or("the main job's code block is not closed")?;
    let mut program = String::from("fn main() -> Result<(), curator::Error> {\n");
    for line in &doc[open + 1..close] {
        // Hidden lines (`# ...`) are part of the program rustdoc runs.
        let line = if *line == "#" { "" } else { line.strip_prefix("# ").unwrap_or(line) };
        program.push_str(line);
        program.push('\n');
    }
    program.push_str("}\n");
    Ok(program)
}

/// Writes the crate into `target/front-page` and runs it.
pub(crate) fn run() -> ExitCode {
    match try_run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("front page: {e}");
            ExitCode::FAILURE
        }
    }
}

fn try_run() -> Result<(), String> {
    let root = root();
    let facade = root.join("crates/curator");
    let lib_rs = std::fs::read_to_string(facade.join("src/lib.rs"))
        .map_err(|e| format!("cannot read the facade's lib.rs: {e}"))?;
    let program = program(&lib_rs)?;
    let dir = root.join("target/front-page");
    let write = |path: &Path, text: &str| {
        std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
    };
    std::fs::create_dir_all(dir.join("src"))
        .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    // `[workspace]`: a crate of its own, not a member of the repository's workspace.
    write(
        &dir.join("Cargo.toml"),
        &format!(
            "[package]\nname = \"front-page\"\nversion = \"0.1.0\"\nedition = \"2024\"\n\
             publish = false\n\n[dependencies]\ncurator = {{ path = {:?} }}\n\n[workspace]\n",
            facade.display().to_string()
        ),
    )?;
    write(&dir.join("src/main.rs"), &program)?;
    // The repository's lock file: the same versions as the workspace, nothing to resolve.
    std::fs::copy(root.join("Cargo.lock"), dir.join("Cargo.lock"))
        .map_err(|e| format!("cannot copy Cargo.lock: {e}"))?;
    println!("front page: running the main job's example in {}", dir.display());
    let status = cargo()
        .arg("run")
        .arg("--quiet")
        .arg("--manifest-path")
        .arg(dir.join("Cargo.toml"))
        .env("CARGO_TARGET_DIR", root.join("target"))
        .status()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if status.success() {
        println!("front page: the example built and ran in a new crate");
        Ok(())
    } else {
        Err(format!("the example failed in {} ({status})", dir.display()))
    }
}

#[cfg(test)]
mod tests {
    use super::program;

    #[test]
    fn the_main_job_is_taken_with_its_hidden_lines_inside_main() {
        let lib = "//! Intro.\n//!\n//! ```\n//! not this\n//! ```\n//!\n//! # The main job\n//!\n\
                   //! ```\n//! use curator::prelude::*;\n//! let x = 1;\n//! # let y = x;\n//! #\n\
                   //! Ok::<(), curator::Error>(())\n//! ```\n\nmod error;\n";
        assert_eq!(
            program(lib).unwrap(),
            "fn main() -> Result<(), curator::Error> {\nuse curator::prelude::*;\nlet x = 1;\n\
             let y = x;\n\nOk::<(), curator::Error>(())\n}\n"
        );
        assert!(program("//! # Other\n").unwrap_err().contains("The main job"));
        assert!(
            program("//! # The main job\n//! ```\n//! open\n").unwrap_err().contains("not closed")
        );
    }

    #[test]
    fn the_facade_has_a_main_job_to_run() {
        let lib =
            std::fs::read_to_string(crate::workspace::root().join("crates/curator/src/lib.rs"))
                .unwrap();
        let program = program(&lib).unwrap();
        assert!(program.contains("SqliteStore::open") && program.contains("Conversation::open"));
    }
}
