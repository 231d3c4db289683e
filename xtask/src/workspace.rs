//! Where the workspace is, and the cargo that runs this xtask.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The workspace root, found from this crate's manifest directory.
pub(crate) fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
}

/// The cargo that runs this xtask, so that toolchain overrides carry through.
pub(crate) fn cargo() -> Command {
    Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
}
