//! Where the workspace is, the cargo that runs this xtask, and what cargo says the
//! workspace holds.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

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

/// `cargo metadata` of the workspace's own packages (`--no-deps`: what each declares, without
/// resolving the registry).
pub(crate) fn metadata() -> Result<Value, String> {
    let output = cargo()
        .args(["metadata", "--format-version", "1", "--no-deps", "--manifest-path"])
        .arg(root().join("Cargo.toml"))
        .output()
        .map_err(|e| format!("cannot run cargo metadata: {e}"))?;
    if !output.status.success() {
        return Err(format!("cargo metadata: {}", String::from_utf8_lossy(&output.stderr)));
    }
    serde_json::from_slice(&output.stdout).map_err(|e| format!("cargo metadata: {e}"))
}

/// The packages of the workspace that have a library target, by name.
pub(crate) fn library_crates(metadata: &Value) -> Vec<&str> {
    let packages = metadata["packages"].as_array().map(Vec::as_slice).unwrap_or_default();
    let is_lib = |target: &Value| {
        target["kind"].as_array().is_some_and(|kinds| kinds.iter().any(|k| k == "lib"))
    };
    let mut names: Vec<&str> = packages
        .iter()
        .filter(|p| p["targets"].as_array().is_some_and(|targets| targets.iter().any(is_lib)))
        .filter_map(|p| p["name"].as_str())
        .collect();
    names.sort_unstable();
    names
}

/// The features of the facade (`curator`), sorted, without `default`.
pub(crate) fn facade_features(metadata: &Value) -> Vec<&str> {
    let packages = metadata["packages"].as_array().map(Vec::as_slice).unwrap_or_default();
    let mut names: Vec<&str> = packages
        .iter()
        .find(|p| p["name"] == "curator")
        .and_then(|p| p["features"].as_object())
        .map(|features| features.keys().map(String::as_str).filter(|f| *f != "default").collect())
        .unwrap_or_default();
    names.sort_unstable();
    names
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_facade_features_are_listed() {
        let metadata = super::metadata().unwrap();
        let features = super::facade_features(&metadata);
        for name in [
            "anthropic",
            "coalesce",
            "loop",
            "openai",
            "postgres",
            "postgres-tls",
            "sqlite",
            "tasks",
            "tiktoken",
            "tokio",
        ] {
            assert!(features.contains(&name), "{name} missing from {features:?}");
        }
        assert!(!features.contains(&"default"));
    }

    #[test]
    fn every_library_crate_is_listed_and_only_those() {
        let metadata = super::metadata().unwrap();
        let libraries = super::library_crates(&metadata);
        for name in [
            "curator",
            "curator-agent",
            "curator-client",
            "curator-coalesce",
            "curator-model",
            "curator-session",
            "curator-sqlite",
            "curator-strategies",
            "curator-tasks",
        ] {
            assert!(libraries.contains(&name), "{name} missing from {libraries:?}");
        }
        assert!(!libraries.contains(&"curator-cli") && !libraries.contains(&"xtask"));
    }
}
