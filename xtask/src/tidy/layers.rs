//! Dependencies point down, checked on the dependencies cargo reports (`cargo metadata`)
//! rather than on the text of the manifests.
//!
//! `model ← strategies ← client ← session ← {agent, sqlite, postgres, loop} ← curator ← curator-cli`;
//! `curator-coalesce` and `curator-tasks` sit beside them on the lower crates; an external
//! crate belongs to one layer. Only normal (and build) dependencies count: a test may reach
//! anywhere.

use std::collections::BTreeMap;

use serde_json::Value;

/// The workspace crates each crate may depend on. A crate missing here fails the check, so
/// that a new crate gets its place in the layers decided.
const ALLOWED: &[(&str, &[&str])] = &[
    ("curator-model", &[]),
    ("curator-strategies", &["curator-model"]),
    // The one crate that talks to model servers; the summarizer over any client is a
    // strategies' `Summarizer`.
    ("curator-client", &["curator-model", "curator-strategies"]),
    // The record; the usage the clients report (never the HTTP clients: the crate owns them).
    ("curator-session", &["curator-model", "curator-strategies", "curator-client"]),
    // The agent: a model client and tools around the recorded conversation.
    (
        "curator-agent",
        &["curator-model", "curator-strategies", "curator-client", "curator-session"],
    ),
    ("curator-sqlite", &["curator-model", "curator-strategies", "curator-session"]),
    ("curator-postgres", &["curator-model", "curator-strategies", "curator-session"]),
    // Conversational loops: checkpoints in a session store, bounds and redaction from the
    // strategies; never the SQLite store (a program chooses its store).
    ("curator-loop", &["curator-model", "curator-strategies", "curator-client", "curator-session"]),
    // Token counting; the session driver for `CoalescedConversation` (#16 plugs it in).
    ("curator-coalesce", &["curator-model", "curator-strategies", "curator-session"]),
    // Counting and summarizers, checkpoints.
    ("curator-tasks", &["curator-model", "curator-strategies", "curator-session"]),
    (
        "curator",
        &[
            "curator-model",
            "curator-strategies",
            "curator-client",
            "curator-session",
            "curator-agent",
            "curator-sqlite",
            "curator-postgres",
            "curator-loop",
            "curator-coalesce",
            "curator-tasks",
        ],
    ),
    // The facade only: what the CLI can do, a user of the facade can.
    ("curator-cli", &["curator"]),
    // The Python package, beside the CLI: what Python can do, a user of the facade can.
    ("curator-py", &["curator"]),
    // Test fixtures sit on the crates they build fixtures for, never on the facade.
    ("curator-testkit", &["curator-model", "curator-strategies", "curator-session"]),
    (
        "curator-benches",
        &[
            "curator-model",
            "curator-strategies",
            "curator-client",
            "curator-session",
            "curator-sqlite",
            "curator-postgres",
            "curator-loop",
            "curator-coalesce",
            "curator-tasks",
            "curator-testkit",
        ],
    ),
    ("xtask", &[]),
];

/// External crates and the only workspace crates that may depend on them.
const OWNED: &[(&str, &[&str])] = &[
    ("rusqlite", &["curator-sqlite"]),
    // Redaction's patterns; the model stays free of it.
    ("regex", &["curator-strategies"]),
    // HTTP: only the model clients talk to model servers.
    ("ureq", &["curator-client"]),
    ("postgres", &["curator-postgres"]),
    ("tokio-postgres", &["curator-postgres"]),
    ("sqlx", &["curator-postgres"]),
    ("clap", &["curator-cli"]),
    ("minijinja", &["curator-loop"]),
    ("criterion", &["curator-benches"]),
    ("anyhow", &["curator-cli", "xtask"]),
    // The async faces of the driver, the agent and the loop; stores stay synchronous
    // (PostgreSQL's asks tokio only whether a call runs on a runtime's thread, where its
    // blocking client cannot: that client is built on tokio already).
    (
        "tokio",
        &["curator-client", "curator-session", "curator-agent", "curator-loop", "curator-postgres"],
    ),
    ("ctrlc", &["curator-cli"]),
    ("pyo3", &["curator-py"]),
];

/// Every broken rule of the workspace `metadata` describes, one line each, naming the edge.
fn violations(metadata: &Value) -> Vec<String> {
    let packages = metadata["packages"].as_array().map(Vec::as_slice).unwrap_or_default();
    let members: BTreeMap<&str, &Value> =
        packages.iter().filter_map(|p| Some((p["name"].as_str()?, p))).collect();
    let allowed: BTreeMap<&str, &[&str]> = ALLOWED.iter().copied().collect();
    let mut out = Vec::new();
    for (&name, package) in &members {
        let Some(&may) = allowed.get(name) else {
            out.push(format!("{name}: not in the layering table of xtask/src/tidy/layers.rs"));
            continue;
        };
        // `publish = false` reads as an empty list of registries.
        let published = package["publish"].as_array().is_none_or(|r| !r.is_empty());
        let dependencies =
            package["dependencies"].as_array().map(Vec::as_slice).unwrap_or_default();
        for dependency in dependencies.iter().filter(|d| d["kind"].as_str() != Some("dev")) {
            let Some(on) = dependency["name"].as_str() else { continue };
            if members.contains_key(on) {
                if on == "curator-testkit" && published {
                    out.push(format!(
                        "{name} → {on}: the test fixtures are never a normal dependency of a \
                         published crate (make it a dev-dependency)"
                    ));
                } else if name == "curator-cli" && !may.contains(&on) {
                    out.push(format!(
                        "{name} → {on}: the CLI depends on the facade `curator` only"
                    ));
                } else if !may.contains(&on) {
                    out.push(format!(
                        "{name} → {on}: not a dependency that points down (allowed: {})",
                        if may.is_empty() { "none".to_owned() } else { may.join(", ") }
                    ));
                }
            } else if let Some((_, owners)) = OWNED.iter().find(|(external, _)| *external == on)
                && !owners.contains(&name)
            {
                out.push(format!("{name} → {on}: `{on}` belongs to {} only", owners.join(", ")));
            }
        }
    }
    out
}

#[test]
fn layers_point_down() {
    let metadata = crate::workspace::metadata().unwrap();
    assert!(
        metadata["packages"].as_array().is_some_and(|p| p.len() >= 9),
        "cargo metadata lists too few packages"
    );
    let violations = violations(&metadata);
    assert!(
        violations.is_empty(),
        "dependencies that break the layers:\n{}",
        violations.join("\n")
    );
}

#[test]
fn each_broken_rule_names_its_edge() {
    let dependency =
        |name: &str, kind: Option<&str>| serde_json::json!({"name": name, "kind": kind});
    let package = |name: &str, publish: Option<Vec<&str>>, dependencies: Vec<Value>| serde_json::json!({"name": name, "publish": publish, "dependencies": dependencies});
    let metadata = serde_json::json!({"packages": [
        package("curator-model", None, vec![
            dependency("curator-session", None),
            dependency("curator-testkit", Some("dev")),
            dependency("rusqlite", None),
        ]),
        package("curator-session", None, vec![dependency("curator-testkit", None)]),
        package("curator-strategies", None, vec![dependency("ureq", None)]),
        package("curator-client", None, vec![
            dependency("ureq", None),
            dependency("curator-session", None),
        ]),
        package("curator-sqlite", None, vec![dependency("rusqlite", None)]),
        package("curator-testkit", Some(vec![]), vec![dependency("curator-model", None)]),
        package("curator", None, vec![dependency("curator-model", None)]),
        package("curator-cli", None, vec![
            dependency("curator", None),
            dependency("curator-model", None),
            dependency("clap", None),
            dependency("rusqlite", Some("dev")),
        ]),
        package("curator-extra", None, vec![]),
    ]});
    assert_eq!(
        violations(&metadata),
        [
            "curator-cli → curator-model: the CLI depends on the facade `curator` only",
            "curator-client → curator-session: not a dependency that points down (allowed: \
         curator-model, curator-strategies)",
            "curator-extra: not in the layering table of xtask/src/tidy/layers.rs",
            "curator-model → curator-session: not a dependency that points down (allowed: none)",
            "curator-model → rusqlite: `rusqlite` belongs to curator-sqlite only",
            "curator-session → curator-testkit: the test fixtures are never a normal dependency of \
         a published crate (make it a dev-dependency)",
            "curator-strategies → ureq: `ureq` belongs to curator-client only",
        ]
    );
}
