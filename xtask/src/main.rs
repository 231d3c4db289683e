//! Project automation, run as `cargo xtask <command>`.
//!
//! - `cargo xtask bench [--quick] [--filter TEXT]`: runs the benchmark suite, compares every
//!   scenario with its target, prints a table, writes `target/bench-report.json`, and exits
//!   non-zero when a target is missed.
//! - `cargo xtask ci`: runs what `.ci/run` runs.
//! - `cargo xtask demo-data`: regenerates the session `curator demo` replays.
//! - `cargo xtask front-page`: pastes the facade's front-page example into a new crate
//!   outside the workspace (a path dependency on `curator`), builds and runs it.
//! - `cargo xtask facade-features`: prints the facade's features, one per line (for
//!   `.ci/run`, which builds the facade with each alone).
//! - `cargo xtask lib-crates`: prints the workspace's library crates, one per line (for
//!   `.ci/run`, which builds each without default features).
#![expect(clippy::print_stdout, clippy::print_stderr, reason = "xtask reports to the terminal")]

mod bench;
mod demo_data;
mod front_page;
mod targets;
#[cfg(test)]
mod tidy;
mod workspace;

use std::process::{Command, ExitCode};

use crate::workspace::root;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("ci") => run_ci(),
        Some("demo-data") => match std::fs::write(demo_data::path(), demo_data::generate()) {
            Ok(()) => {
                println!("wrote {}", demo_data::path().display());
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("cannot write {}: {e}", demo_data::path().display());
                ExitCode::FAILURE
            }
        },
        Some("front-page") => front_page::run(),
        Some("facade-features") => match workspace::metadata() {
            Ok(metadata) => {
                for name in workspace::facade_features(&metadata) {
                    println!("{name}");
                }
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("{e}");
                ExitCode::FAILURE
            }
        },
        Some("lib-crates") => match workspace::metadata() {
            Ok(metadata) => {
                for name in workspace::library_crates(&metadata) {
                    println!("{name}");
                }
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("{e}");
                ExitCode::FAILURE
            }
        },
        Some("bench") => match bench::Options::parse(&args[1..]) {
            Ok(options) => bench::run(&root(), &options),
            Err(e) => {
                eprintln!("{e}\nusage: cargo xtask bench [--quick] [--filter TEXT]");
                ExitCode::from(2)
            }
        },
        _ => {
            eprintln!(
                "usage: cargo xtask bench [--quick] [--filter TEXT] | ci | demo-data | front-page | \
                 facade-features | lib-crates"
            );
            ExitCode::from(2)
        }
    }
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
