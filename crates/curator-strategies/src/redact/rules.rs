//! A secret-detection rule set in the gitleaks format: keywords found in one pass, each rule's
//! expression compiled on first need, entropy and allow-lists applied to what it finds.

use std::collections::BTreeSet;
use std::sync::OnceLock;

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};
use regex::Regex;
use serde::Deserialize;

use super::literals;

/// One rule as the gitleaks TOML format writes it (the fields redaction uses).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RuleToml {
    id: String,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    regex: Option<String>,
    #[serde(default)]
    secret_group: Option<usize>,
    #[serde(default)]
    entropy: Option<f64>,
    #[serde(default)]
    keywords: Vec<String>,
    #[serde(default)]
    allowlists: Vec<AllowToml>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct AllowToml {
    #[serde(default)]
    regexes: Vec<String>,
    #[serde(default)]
    regex_target: Option<String>,
    #[serde(default)]
    stopwords: Vec<String>,
    #[serde(default)]
    paths: Vec<String>,
    #[serde(default)]
    condition: Option<String>,
}

#[derive(Debug, Deserialize)]
struct FileToml {
    #[serde(default)]
    rules: Vec<RuleToml>,
    #[serde(default)]
    allowlist: Option<AllowToml>,
}

/// What an allow-list's expressions look at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Target {
    Secret,
    Match,
    Line,
}

/// A set of reasons not to report a finding.
#[derive(Debug)]
struct Allow {
    regexes: Vec<(Target, Regex)>,
    stopwords: Vec<String>,
    /// Every criterion must hold (gitleaks' `condition = "AND"`), instead of any.
    all: bool,
}

impl Allow {
    /// The allow-list, or `None` when it only concerns file paths (text has none). An
    /// expression that does not compile (gitleaks' Go syntax reads `{` before a non-digit as
    /// itself, which Rust's refuses) is left out of a list of which any criterion allows, so
    /// that the others still apply; a list whose criteria must all hold is then not used at
    /// all, since without that criterion it would allow more.
    fn build(toml: &AllowToml) -> Option<Self> {
        let all = toml.condition.as_deref().is_some_and(|c| c.eq_ignore_ascii_case("and"));
        if !toml.paths.is_empty() && (all || (toml.regexes.is_empty() && toml.stopwords.is_empty()))
        {
            return None;
        }
        let target = match toml.regex_target.as_deref() {
            Some("match") => Target::Match,
            Some("line") => Target::Line,
            _ => Target::Secret,
        };
        let compiled = toml.regexes.iter().map(|r| Regex::new(r).ok().map(|re| (target, re)));
        let regexes =
            if all { compiled.collect::<Option<Vec<_>>>()? } else { compiled.flatten().collect() };
        let stopwords = toml.stopwords.iter().map(|w| w.to_lowercase()).collect();
        Some(Self { regexes, stopwords, all })
    }

    fn allows(&self, secret: &str, whole: &str, line: &str) -> bool {
        let lower = secret.to_lowercase();
        let regex_hits = self.regexes.iter().map(|(target, re)| {
            re.is_match(match target {
                Target::Secret => secret,
                Target::Match => whole,
                Target::Line => line,
            })
        });
        let mut criteria = regex_hits.collect::<Vec<_>>();
        if !self.stopwords.is_empty() {
            criteria.push(self.stopwords.iter().any(|w| lower.contains(w.as_str())));
        }
        if self.all { criteria.iter().all(|c| *c) } else { criteria.iter().any(|c| *c) }
    }
}

/// One rule, its expression compiled on first need.
#[derive(Debug)]
struct Rule {
    id: String,
    source: String,
    compiled: OnceLock<Option<Regex>>,
    secret_group: Option<usize>,
    /// The secret is the group named `secret`, or the whole match (patterns given in code).
    named_secret: bool,
    entropy: Option<f64>,
    allow: Vec<Allow>,
    /// Whether the set's global allow-list applies (rules read from TOML).
    global: bool,
    /// Whether the literals of the expression send texts to the rule, besides its keywords.
    #[cfg_attr(not(test), expect(dead_code, reason = "the coverage test reads how rules run"))]
    by_literals: bool,
    /// The declared keywords, lowercase.
    #[cfg_attr(not(test), expect(dead_code, reason = "the coverage test reads how rules run"))]
    keywords: Vec<String>,
    /// Sets of keywords (by index) of which every match holds one each (see
    /// [`literals::required_all`]): a text that lacks all of one set is not tried.
    gates: Vec<Vec<usize>>,
}

impl Rule {
    fn regex(&self) -> Option<&Regex> {
        self.compiled
            .get_or_init(|| {
                // The lazy DFA's cache: with the default (2 MiB), the broad rules
                // (`generic-api-key`, `[\w.-]{0,50}?` before its keywords, Unicode `\w`) run
                // out of room on ordinary text and fall back to the far slower PikeVM: 44 ms
                // instead of 0.46 ms on 200 KB of the corpus. The cache grows only as far as
                // a rule needs.
                regex::RegexBuilder::new(&self.source)
                    .size_limit(50 << 20)
                    .dfa_size_limit(DFA_CACHE_LIMIT)
                    .build()
                    .ok()
            })
            .as_ref()
    }
}

/// A secret found in a text: its byte range and the id of the rule that found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Finding {
    pub(crate) start: usize,
    pub(crate) end: usize,
    pub(crate) rule: usize,
}

/// A compiled rule set: gitleaks-format rules with a keyword prefilter.
#[derive(Debug)]
pub(crate) struct RuleSet {
    rules: Vec<Rule>,
    /// Keywords, lowercase, and for each the rules it triggers (`None` if the automaton could
    /// not be built: then every rule is tried).
    keywords: Option<AhoCorasick>,
    keyword_rules: Vec<Vec<usize>>,
    /// Rules without keywords: always tried.
    always: Vec<usize>,
    global: Vec<Allow>,
}

impl RuleSet {
    /// Reads rules in the gitleaks TOML format. Rules that only match file paths are left
    /// out; a rule whose expression does not compile is skipped when first needed.
    #[cfg(test)]
    pub(crate) fn from_toml(text: &str) -> Result<Self, toml::de::Error> {
        Self::from_patterns_then_toml(Vec::new(), text)
    }

    /// Rules given as (id, expression) pairs with no keywords: each is tried on every text, and
    /// replaces its group named `secret`, or its whole match.
    pub(crate) fn from_patterns(patterns: Vec<(String, Regex)>) -> Self {
        let mut builder = Builder::default();
        builder.patterns(patterns);
        builder.build(Vec::new())
    }

    /// The rules `patterns` (as [`from_patterns`](Self::from_patterns) reads them), then
    /// those of the gitleaks TOML `text` (as [`from_toml`](Self::from_toml) does, its global
    /// allow-list applying to its rules only), in one set: one pass over a text finds the
    /// keywords of both. The rules of `patterns` are the first, in their order.
    pub(crate) fn from_patterns_then_toml(
        patterns: Vec<(String, Regex)>,
        text: &str,
    ) -> Result<Self, toml::de::Error> {
        let file: FileToml = toml::from_str(text)?;
        let global = file.allowlist.iter().filter_map(Allow::build).collect();
        let mut builder = Builder::default();
        builder.patterns(patterns);
        for r in file.rules {
            let Some(source) = r.regex else { continue };
            // A rule its authors rate low in confidence runs only where its declared
            // keywords are (kingfisher's `username … password …` would find words).
            let low = r.description.is_some_and(|d| d.contains("confidence: low"));
            builder.toml_rule(TomlRule {
                id: r.id,
                source,
                secret_group: r.secret_group,
                entropy: r.entropy,
                keywords: r.keywords,
                allowlists: r.allowlists,
                use_literals: !low,
            });
        }
        Ok(builder.build(global))
    }

    /// The id of rule `rule`.
    pub(crate) fn id(&self, rule: usize) -> &str {
        &self.rules[rule].id
    }

    /// Number of rules.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.rules.len()
    }

    /// The secrets in `text`, in no particular order, possibly overlapping.
    pub(crate) fn find(&self, text: &str) -> Vec<Finding> {
        // A set of no rules (no patterns of your own) finds nothing: no pass over the text.
        if self.rules.is_empty() {
            return Vec::new();
        }
        let mut out = Vec::new();
        for k in self.tried(text, true) {
            self.find_by(k, text, &mut out);
        }
        out
    }

    /// The rules `text` is sent to: those without keywords, and those whose keywords it
    /// holds; with `gated`, not those that need a literal from a set it holds none of.
    fn tried(&self, text: &str, gated: bool) -> BTreeSet<usize> {
        let mut candidates: BTreeSet<usize> = self.always.iter().copied().collect();
        let Some(keywords) = &self.keywords else {
            candidates.extend(0..self.rules.len());
            return candidates;
        };
        let mut held = vec![false; self.keyword_rules.len()];
        for hit in keywords.find_overlapping_iter(text) {
            let k = hit.pattern().as_usize();
            if !held[k] {
                held[k] = true;
                candidates.extend(&self.keyword_rules[k]);
            }
        }
        if gated {
            candidates
                .retain(|&k| self.rules[k].gates.iter().all(|set| set.iter().any(|&w| held[w])));
        }
        candidates
    }

    /// The secrets in `text` that the rules it is sent to find, none left out because the
    /// text lacks a literal they need.
    #[cfg(test)]
    pub(crate) fn find_ungated(&self, text: &str) -> Vec<Finding> {
        let mut out = Vec::new();
        for k in self.tried(text, false) {
            self.find_by(k, text, &mut out);
        }
        out
    }

    /// How many rules a trigger sends `text` to that the literals they need keep out.
    #[cfg(test)]
    pub(crate) fn left_out_by_gates(&self, text: &str) -> usize {
        self.tried(text, false).len() - self.tried(text, true).len()
    }

    /// The ids of the rules `text` is sent to.
    #[cfg(test)]
    pub(crate) fn tried_ids(&self, text: &str) -> Vec<&str> {
        self.tried(text, true).into_iter().map(|k| self.id(k)).collect()
    }

    /// The expression of rule `rule`, and whether it compiles.
    #[cfg(test)]
    pub(crate) fn source(&self, rule: usize) -> (&str, bool) {
        (&self.rules[rule].source, self.rules[rule].regex().is_some())
    }

    /// Whether the prefilter sends texts to rule `rule` on the literals of its expression,
    /// and its declared keywords.
    #[cfg(test)]
    pub(crate) fn triggers(&self, rule: usize) -> (bool, &[String]) {
        (self.rules[rule].by_literals, &self.rules[rule].keywords)
    }

    /// The secrets rule `rule` finds in `text`, whether or not the prefilter would try it.
    #[cfg(test)]
    pub(crate) fn find_with(&self, rule: usize, text: &str) -> Vec<Finding> {
        let mut out = Vec::new();
        self.find_by(rule, text, &mut out);
        out
    }

    /// Adds what rule `k` finds in `text` to `out`: its secret group, where entropy and the
    /// allow-lists let it stand.
    fn find_by(&self, k: usize, text: &str, out: &mut Vec<Finding>) {
        let rule = &self.rules[k];
        let Some(re) = rule.regex() else { return };
        for caps in re.captures_iter(text) {
            let Some(whole) = caps.get(0) else { continue };
            // The secret: the rule's group, else (a rule of alternatives whose other branch
            // matched) the first group that matched, else all.
            let first = || (1..caps.len()).find_map(|g| caps.get(g));
            let secret = if rule.named_secret {
                caps.name("secret")
            } else {
                match rule.secret_group {
                    Some(g) if g > 0 => caps.get(g).or_else(first),
                    _ => first(),
                }
            }
            .unwrap_or(whole);
            if secret.as_str().is_empty() {
                continue;
            }
            if rule.entropy.is_some_and(|min| entropy(secret.as_str()) < min) {
                continue;
            }
            let line = line_of(text, whole.start(), whole.end());
            let global = if rule.global { &self.global[..] } else { &[] };
            let allowed = rule
                .allow
                .iter()
                .chain(global)
                .any(|a| a.allows(secret.as_str(), whole.as_str(), line));
            if !allowed {
                // A rule without a group whose expression ends on the character after the
                // secret (`(?:[^a-zA-Z0-9+/]|\z)`) finds that quote or space too: replacing a
                // quote would end a JSON string.
                let end = if secret == whole && !rule.named_secret {
                    secret.start()
                        + secret
                            .as_str()
                            .trim_end_matches(|c: char| c.is_whitespace() || "\"'`,;".contains(c))
                            .len()
                } else {
                    secret.end()
                };
                if end > secret.start() {
                    out.push(Finding { start: secret.start(), end, rule: k });
                }
            }
        }
    }
}

/// The most memory one rule's lazy DFA may take (see [`Rule::regex`]); 16 MiB was enough for
/// the corpus, 8 MiB was not.
const DFA_CACHE_LIMIT: usize = 32 << 20;

/// The shortest literal read from an expression that the prefilter looks for: shorter ones
/// would send nearly every text to the rule.
const MIN_LITERAL: usize = 3;

/// The fields of a TOML rule that redaction uses.
struct TomlRule {
    id: String,
    source: String,
    secret_group: Option<usize>,
    entropy: Option<f64>,
    keywords: Vec<String>,
    allowlists: Vec<AllowToml>,
    /// Whether the literals of its expression send texts to it, besides its keywords.
    use_literals: bool,
}

/// A rule set being put together: its rules, and the keywords that send texts to them.
#[derive(Default)]
struct Builder {
    rules: Vec<Rule>,
    keyword_index: Vec<String>,
    keyword_rules: Vec<Vec<usize>>,
    always: Vec<usize>,
}

impl Builder {
    /// The index of keyword `word` (lowercase), added if new (sending texts to no rule yet).
    fn keyword(&mut self, word: String) -> usize {
        self.keyword_index.iter().position(|w| *w == word).unwrap_or_else(|| {
            self.keyword_index.push(word);
            self.keyword_rules.push(Vec::new());
            self.keyword_index.len() - 1
        })
    }

    /// Records that `triggers` (lowercase) send texts to rule `rule`.
    fn triggers(&mut self, triggers: Vec<String>, rule: usize) {
        for trigger in triggers {
            let at = self.keyword(trigger);
            if !self.keyword_rules[at].contains(&rule) {
                self.keyword_rules[at].push(rule);
            }
        }
    }

    /// Indexes the sets of literals every match of `source` needs (see
    /// [`literals::required_all`]) as keywords that send texts to no rule by themselves, and
    /// gives the sets as keyword indices.
    fn gates(&mut self, source: &str) -> Vec<Vec<usize>> {
        literals::required_all(source, MIN_LITERAL)
            .into_iter()
            .map(|set| set.into_iter().map(|literal| self.keyword(literal)).collect())
            .collect()
    }

    /// Adds rules given as (id, expression) pairs (see [`RuleSet::from_patterns`]).
    fn patterns(&mut self, patterns: Vec<(String, Regex)>) {
        for (id, re) in patterns {
            let k = self.rules.len();
            // A pattern every match of which holds a known literal is tried only where one
            // is found; any other, on every text.
            match literals::required(re.as_str(), MIN_LITERAL) {
                Some(triggers) => self.triggers(triggers, k),
                None => self.always.push(k),
            }
            let gates = self.gates(re.as_str());
            let compiled = OnceLock::new();
            let _ = compiled.set(Some(re.clone()));
            self.rules.push(Rule {
                id,
                source: re.as_str().to_owned(),
                compiled,
                secret_group: None,
                named_secret: true,
                entropy: None,
                allow: Vec::new(),
                global: false,
                by_literals: true,
                keywords: Vec::new(),
                gates,
            });
        }
    }

    /// Adds a rule read from the gitleaks TOML format.
    fn toml_rule(&mut self, rule: TomlRule) {
        let k = self.rules.len();
        // The declared keywords, and the literals every match holds: some rules declare a
        // keyword their secrets need not contain (see `literals`).
        let literal =
            if rule.use_literals { literals::required(&rule.source, MIN_LITERAL) } else { None };
        let keywords: Vec<String> = rule.keywords.iter().map(|w| w.to_lowercase()).collect();
        if keywords.is_empty() && literal.is_none() {
            self.always.push(k);
        } else {
            let mut triggers = keywords.clone();
            triggers.extend(literal.iter().flatten().cloned());
            self.triggers(triggers, k);
        }
        let gates = self.gates(&rule.source);
        self.rules.push(Rule {
            id: rule.id,
            source: rule.source,
            compiled: OnceLock::new(),
            secret_group: rule.secret_group,
            named_secret: false,
            entropy: rule.entropy,
            allow: rule.allowlists.iter().filter_map(Allow::build).collect(),
            global: true,
            by_literals: literal.is_some(),
            keywords,
            gates,
        });
    }

    /// The rule set, with `global` the allow-list of the rules read from TOML.
    fn build(self, global: Vec<Allow>) -> RuleSet {
        RuleSet {
            rules: self.rules,
            keywords: build_keywords(&self.keyword_index),
            keyword_rules: self.keyword_rules,
            always: self.always,
            global,
        }
    }
}

/// The keyword automaton, ASCII case-insensitive: a DFA, the fastest to search (the
/// bundled rules' 1,386 keywords take about 3.9 MB, built once per process; one loop
/// iteration of the default pipeline at 10,000 messages went from 72 µs to 58 µs against
/// the automaton the builder picks itself).
fn build_keywords(index: &[String]) -> Option<AhoCorasick> {
    AhoCorasickBuilder::new()
        .ascii_case_insensitive(true)
        .match_kind(MatchKind::Standard)
        .kind(Some(aho_corasick::AhoCorasickKind::DFA))
        .build(index)
        .ok()
}

/// The line around `start..end` of `text`.
fn line_of(text: &str, start: usize, end: usize) -> &str {
    let from = text[..start].rfind('\n').map_or(0, |i| i + 1);
    let to = text[end..].find('\n').map_or(text.len(), |i| end + i);
    &text[from..to]
}

/// Shannon entropy of `text`, in bits per character.
#[expect(clippy::cast_precision_loss, reason = "character counts of a secret")]
fn entropy(text: &str) -> f64 {
    let mut counts = std::collections::HashMap::new();
    let mut n = 0usize;
    for c in text.chars() {
        *counts.entry(c).or_insert(0usize) += 1;
        n += 1;
    }
    counts
        .values()
        .map(|&k| {
            let p = k as f64 / n as f64;
            -p * p.log2()
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    const RULES: &str = r#"
[allowlist]
stopwords = ["example"]

[[rules]]
id = "demo-token"
regex = '''\b(demo_[a-z0-9]{8,})\b'''
keywords = ["demo_"]
entropy = 2.0

[[rules]]
id = "kv"
regex = '''(?i)secret\s*=\s*"([^"]+)"'''
secretGroup = 1
keywords = ["secret"]
[[rules.allowlists]]
regexes = ['''^\$\{''']

[[rules]]
id = "path-only"
path = '''\.pem$'''
"#;

    #[test]
    fn keywords_entropy_groups_and_allow_lists() {
        let set = RuleSet::from_toml(RULES).unwrap();
        assert_eq!(set.len(), 2, "the path-only rule is left out");
        let text =
            "a demo_k3y9x8w7v6 and demo_aaaaaaaa, SECRET = \"hunter22\" and secret=\"${VAR}\"";
        let mut found: Vec<(&str, &str)> =
            set.find(text).iter().map(|f| (set.id(f.rule), &text[f.start..f.end])).collect();
        found.sort_unstable();
        // Low entropy (demo_aaaaaaaa) and an allowed value (${VAR}) are not secrets.
        assert_eq!(found, [("demo-token", "demo_k3y9x8w7v6"), ("kv", "hunter22")]);
        assert!(set.find("an example: demo_example12345").is_empty(), "a global stopword");
        assert!(set.find("nothing to see").is_empty());
    }

    #[test]
    fn a_rule_is_not_tried_on_a_text_without_a_literal_every_match_needs() {
        let rules = r#"
[[rules]]
id = "line-secret"
regex = '''(?i)\bline.{0,32}?(?:secret|token)\W{1,3}([a-z0-9]{20})'''
secretGroup = 1
keywords = ["line"]
"#;
        let set = RuleSet::from_toml(rules).unwrap();
        // Its keyword sends the text to it; the missing `secret` or `token` keeps it out.
        assert!(set.tried_ids("error at line 42 of parser.rs").is_empty());
        assert_eq!(set.tried_ids("LINE 3: TOKEN = ab"), ["line-secret"]);
        let text = "line 3: token = 0123456789abcdefghij";
        let found: Vec<&str> = set.find(text).iter().map(|f| &text[f.start..f.end]).collect();
        assert_eq!(found, ["0123456789abcdefghij"]);
    }

    #[test]
    fn a_global_allow_list_read_from_toml_spares_only_the_toml_rules() {
        let pattern = Regex::new(r"(?P<secret>tok_[a-z0-9]{6,})").unwrap();
        let set = RuleSet::from_patterns_then_toml(vec![("mine".into(), pattern)], RULES).unwrap();
        assert_eq!(set.id(0), "mine");
        // `example` is a global stopword of the TOML: its rules let it pass, the pattern not.
        let text = "tok_example1 demo_example12345";
        let found: Vec<(&str, &str)> =
            set.find(text).iter().map(|f| (set.id(f.rule), &text[f.start..f.end])).collect();
        assert_eq!(found, [("mine", "tok_example1")]);
    }

    #[test]
    fn an_allow_list_keeps_its_other_criteria_when_one_expression_does_not_compile() {
        let rules = r#"
[allowlist]
regexes = ['''^\${(?:[A-Z_]+)}$''', '''^/home/''']
stopwords = ["example"]

[[rules]]
id = "demo-token"
regex = '''\b(demo_[a-z0-9/]{8,})'''
keywords = ["demo_"]

[[rules]]
id = "both"
regex = '''\b(both_[a-z0-9]{8,})'''
keywords = ["both_"]
[[rules.allowlists]]
condition = "AND"
regexes = ['''^\${(?:[A-Z_]+)}$''']
stopwords = ["sample"]
"#;
        let set = RuleSet::from_toml(rules).unwrap();
        let ids = |text: &str| -> Vec<String> {
            set.find(text).iter().map(|f| text[f.start..f.end].to_owned()).collect()
        };
        // The global list's stopword and its other expression still allow; Go's `${` does not
        // compile in Rust and is left out.
        assert!(ids("demo_example12345").is_empty());
        assert_eq!(ids("demo_k3y9x8w7v6"), ["demo_k3y9x8w7v6"]);
        // A list whose criteria must all hold is not used without one of them.
        assert_eq!(ids("both_sample12345"), ["both_sample12345"]);
    }

    #[test]
    fn entropy_of_known_strings() {
        assert!(entropy("aaaa").abs() < 1e-9);
        assert!((entropy("abcd") - 2.0).abs() < 1e-9);
    }
}
