//! No two library crates export one name: through the facade, `curator::tasks::Turn` and
//! `curator::coalesce::Turn` would be two different things under one name.

use std::collections::{BTreeMap, BTreeSet};

use super::use_tree::{expand, read};

/// Names every crate exports by design, one per crate.
const PER_CRATE: &[&str] = &["Error", "Result"];

/// The names a crate root re-exports, each with the crate it comes from: the crate named by
/// the path's first segment when that is a workspace crate (a facade re-exporting it), else
/// `krate` itself.
fn exports(krate: &str, lib_rs: &str, workspace: &BTreeSet<String>) -> Vec<(String, String)> {
    read(lib_rs)
        .uses
        .iter()
        .filter(|decl| decl.public)
        .flat_map(|decl| expand(&decl.tree))
        .filter(|import| import.name != "*" && import.name != "_")
        .map(|import| {
            let origin = import
                .path
                .first()
                .filter(|first| workspace.contains(*first))
                .map_or_else(|| krate.to_owned(), Clone::clone);
            (import.name, origin)
        })
        .collect()
}

/// Each name exported with more than one origin, as `name: crate, crate`.
fn collisions(libs: &[(String, String)]) -> Vec<String> {
    let workspace: BTreeSet<String> = libs.iter().map(|(krate, _)| krate.clone()).collect();
    let mut origins: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (krate, text) in libs {
        for (name, origin) in exports(krate, text, &workspace) {
            origins.entry(name).or_default().insert(origin);
        }
    }
    origins
        .into_iter()
        .filter(|(name, from)| from.len() > 1 && !PER_CRATE.contains(&name.as_str()))
        .map(|(name, from)| format!("{name}: {}", from.into_iter().collect::<Vec<_>>().join(", ")))
        .collect()
}

#[test]
fn no_two_library_crates_export_one_name() {
    let root = crate::workspace::root();
    let mut libs = Vec::new();
    for entry in std::fs::read_dir(root.join("crates")).into_iter().flatten().flatten() {
        let lib = entry.path().join("src/lib.rs");
        if let Ok(text) = std::fs::read_to_string(&lib) {
            libs.push((entry.file_name().to_string_lossy().replace('-', "_"), text));
        }
    }
    assert!(libs.len() >= 7, "found only {} library crates", libs.len());
    let collisions = collisions(&libs);
    assert!(
        collisions.is_empty(),
        "names exported by more than one crate (rename one, so the facade never shows two \
         things under one name): {collisions:?}"
    );
}

#[test]
fn collisions_are_found_across_crates_and_facades_are_not_collisions() {
    let libs = [
        ("curator_model", "pub use role::{Role, ParseRoleError};\npub use error::{Error, Result};"),
        (
            "curator_tasks",
            "pub use history::{\n    Role,\n    StepHistory,\n};\npub use error::{Error, Result};",
        ),
        ("curator_other", "pub use x::Thing as Role;\nuse private::Hidden;"),
        (
            "curator",
            "pub use curator_model as model;\npub mod prelude {\n    pub use curator_model::{Role};\n}",
        ),
    ]
    .map(|(krate, text)| (krate.to_owned(), text.to_owned()));
    assert_eq!(collisions(&libs), ["Role: curator_model, curator_other, curator_tasks"]);
}
