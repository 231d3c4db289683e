//! The built-in rule sets as redaction uses them: the literals rules need keep nothing
//! from being found, and curator's own rules and the bundled ones in one set find what the
//! two sets find apart.

use regex::Regex;

use super::rules::{Finding, RuleSet};
use super::{OWN, builtin, bundled};

/// The texts of `n` synthetic agent messages (seed `seed`), then some written secrets and
/// the texts `more`.
fn texts(n: usize, seed: u64, more: &[&str]) -> Vec<String> {
    let history = curator_testkit::synthetic::agent_history(n, seed);
    let written = [
        "export GITHUB_TOKEN=ghp_0123456789abcdefghijklmnopqrstuvwxyz",
        "curl -H 'Authorization: Bearer sk-proj-abcdefghijklmnopqrstuvwx0123456789'",
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    ];
    (history.iter().map(|m| m.text().into_owned()))
        .chain(written.iter().chain(more).map(|t| (*t).to_owned()))
        .collect()
}

#[test]
fn the_bundled_rules_find_the_same_with_and_without_the_literals_they_need() {
    let Some(set) = bundled() else { panic!("the bundled rules load") };
    let texts = texts(
        400,
        5,
        &["line 12: SECRET_KEY = 'dGhpcyBpcyBub3QgYSBzZWNyZXQgYnV0IGxvbmcgZW5vdWdoIHRvIGNvdW50'"],
    );
    let sorted = |mut found: Vec<Finding>| {
        found.sort_by_key(|f| (f.start, f.end, f.rule));
        found
    };
    let mut gated = 0;
    for text in &texts {
        assert_eq!(sorted(set.find(text)), sorted(set.find_ungated(text)), "{text}");
        gated += set.left_out_by_gates(text);
    }
    assert!(gated > 0, "some rule was sent a text it could not match");
}

#[test]
fn the_built_in_rules_in_one_set_find_what_their_two_sets_find_apart() {
    let own_patterns: Vec<(String, Regex)> = OWN
        .iter()
        .map(|(kind, pattern)| ((*kind).to_owned(), Regex::new(pattern).unwrap()))
        .collect();
    let own = RuleSet::from_patterns(own_patterns);
    let Some(bundled) = bundled() else { panic!("the bundled rules load") };
    let (both, own_count) = builtin();
    assert_eq!(*own_count, own.len());
    assert_eq!(both.len(), own.len() + bundled.len());
    let texts = texts(
        300,
        9,
        &[
            "PGPASSWORD='hunter2hunter2' psql postgres://admin:s3cr3tpass@db:5432/app",
            // What the bundled set's global allow-list lets pass (`false` in a secret, the
            // alphabet), which curator's own rules still find.
            "PASSWORD=falsehood123x and Authorization: Bearer abcdefghijklmnopqrstuvwxyz0123",
        ],
    );
    let found = |set: &RuleSet, text: &str| {
        let mut found: Vec<(usize, usize, String)> = set
            .find(text)
            .into_iter()
            .map(|f| (f.start, f.end, set.id(f.rule).to_owned()))
            .collect();
        found.sort();
        found
    };
    for text in &texts {
        let mut apart = found(&own, text);
        apart.extend(found(bundled, text));
        apart.sort();
        assert_eq!(found(both, text), apart, "{text}");
    }
}
