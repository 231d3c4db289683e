//! Literals that every match of a regular expression contains, read from its source, so that
//! the keyword prefilter can find a rule whose declared keywords its secrets do not contain.
//!
//! The rules merged from kingfisher carry one keyword named after their family (`dockerhub`,
//! `google`, `azuresastoken`), which a `dckr_pat_…`, `ya29.…` or `sig=…` secret does not
//! contain: without the literals of the expression itself those rules never run.

/// At most this many alternatives in a set of literals; beyond it the set is given up.
const MAX_SET: usize = 64;

/// A class of at most this many plain characters counts as alternatives (`gh[pousr]_`).
const MAX_CLASS: usize = 8;

/// What is known of the strings a piece of an expression matches.
#[derive(Clone, Debug, Default)]
struct Info {
    /// Every string the piece can match, when they are few and all literal.
    exact: Option<Vec<String>>,
    /// Strings one of which is in every match of the piece.
    cover: Option<Vec<String>>,
    /// More such sets, each required too (the pieces of a concatenation each have theirs).
    all: Vec<Vec<String>>,
}

impl Info {
    const fn unknown() -> Self {
        Self { exact: None, cover: None, all: Vec::new() }
    }

    fn literal(s: String) -> Self {
        Self { exact: Some(vec![s]), cover: None, all: Vec::new() }
    }

    /// The better of the cover and the exact set, as a cover.
    fn best(&self) -> Option<&Vec<String>> {
        match (&self.exact, &self.cover) {
            (Some(e), Some(c)) => Some(if score(c) > score(e) { c } else { e }),
            (e, c) => e.as_ref().or(c.as_ref()),
        }
    }
}

/// How useful a set is as a prefilter: the length of its shortest string, in characters.
fn score(set: &[String]) -> usize {
    set.iter().map(|s| s.chars().count()).min().unwrap_or(0)
}

/// Literals, each at least `min_len` characters, one of which is in every match of
/// `pattern`, or `None` when the expression has none (or uses syntax this reader does not
/// know: then nothing is claimed).
pub(crate) fn required(pattern: &str, min_len: usize) -> Option<Vec<String>> {
    usable(parse(pattern)?.best()?.clone(), min_len)
}

/// Every set of literals, each at least `min_len` characters, that [`required`] could
/// claim of `pattern`: every match of it holds one literal of each set (`line`, then one
/// of `key` and `token`, in `line.{0,32}(?:key|token)`). Empty when nothing is known.
pub(crate) fn required_all(pattern: &str, min_len: usize) -> Vec<Vec<String>> {
    let Some(info) = parse(pattern) else { return Vec::new() };
    let mut sets: Vec<Vec<String>> = info
        .best()
        .into_iter()
        .chain(&info.all)
        .filter_map(|set| usable(set.clone(), min_len))
        .collect();
    sets.sort_unstable();
    sets.dedup();
    sets
}

/// What is known of the strings `pattern` matches, or `None` for syntax this reader does
/// not know.
fn parse(pattern: &str) -> Option<Info> {
    let mut parser = Parser { chars: pattern.chars().collect(), at: 0, extended: false };
    let info = parser.alternation()?;
    (parser.at == parser.chars.len()).then_some(info)
}

/// `set` lower-cased, sorted and without repeats, if it serves a prefilter: each literal
/// at least `min_len` characters, and all ASCII (the prefilter ignores case in ASCII only,
/// so a literal beyond it could be missed in another case).
fn usable(mut set: Vec<String>, min_len: usize) -> Option<Vec<String>> {
    if score(&set) < min_len || !set.iter().all(|s| s.is_ascii()) {
        return None;
    }
    for s in &mut set {
        *s = s.to_lowercase();
    }
    set.sort_unstable();
    set.dedup();
    Some(set)
}

struct Parser {
    chars: Vec<char>,
    at: usize,
    /// The `x` flag: whitespace and `#` comments are ignored.
    extended: bool,
}

impl Parser {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.at).copied()
    }

    fn skip_ignored(&mut self) {
        while self.extended {
            match self.peek() {
                Some(c) if c.is_whitespace() => self.at += 1,
                Some('#') => {
                    while self.peek().is_some_and(|c| c != '\n') {
                        self.at += 1;
                    }
                }
                _ => break,
            }
        }
    }

    /// Branches separated by `|`, up to a `)` or the end.
    fn alternation(&mut self) -> Option<Info> {
        let saved = self.extended;
        let mut branches = vec![self.concat()?];
        while self.peek() == Some('|') {
            self.at += 1;
            branches.push(self.concat()?);
        }
        self.extended = saved;
        if branches.len() == 1 {
            return branches.pop();
        }
        let exact = branches.iter().try_fold(Vec::new(), |mut all, b| {
            all.extend(b.exact.clone()?);
            (all.len() <= MAX_SET).then_some(all)
        });
        let cover = branches.iter().try_fold(Vec::new(), |mut all, b| {
            all.extend(b.best()?.iter().cloned());
            (all.len() <= MAX_SET).then_some(all)
        });
        Some(Info { exact, cover, all: Vec::new() })
    }

    /// Pieces one after another, up to a `|`, a `)` or the end.
    fn concat(&mut self) -> Option<Info> {
        let mut run: Option<Vec<String>> = Some(vec![String::new()]);
        let mut all_exact = true;
        let mut best: Option<Vec<String>> = None;
        // Every set considered is required: each stands for a piece of the concatenation.
        let mut all: Vec<Vec<String>> = Vec::new();
        // And those the pieces hold within them.
        let mut nested: Vec<Vec<String>> = Vec::new();
        let mut consider = |best: &mut Option<Vec<String>>, candidate: Option<&Vec<String>>| {
            if let Some(c) = candidate {
                all.push(c.clone());
                if best.as_ref().is_none_or(|b| score(c) > score(b)) {
                    *best = Some(c.clone());
                }
            }
        };
        loop {
            self.skip_ignored();
            match self.peek() {
                None | Some('|' | ')') => break,
                _ => {}
            }
            let piece = self.quantified()?;
            nested.extend(piece.all.iter().cloned());
            match (&piece.exact, run.take()) {
                (Some(exact), Some(before)) if before.len() * exact.len() <= MAX_SET => {
                    run = Some(
                        before
                            .iter()
                            .flat_map(|b| exact.iter().map(move |e| format!("{b}{e}")))
                            .collect(),
                    );
                }
                (Some(exact), before) => {
                    all_exact = false;
                    consider(&mut best, before.as_ref());
                    run = Some(exact.clone());
                }
                (None, before) => {
                    all_exact = false;
                    consider(&mut best, before.as_ref());
                    consider(&mut best, piece.cover.as_ref());
                    run = Some(vec![String::new()]);
                }
            }
        }
        consider(&mut best, run.as_ref());
        all.extend(nested);
        Some(Info { exact: if all_exact { run } else { None }, cover: best, all })
    }

    /// One atom and its repetition, if any.
    fn quantified(&mut self) -> Option<Info> {
        let atom = self.atom()?;
        self.skip_ignored();
        let (min, max) = match self.peek() {
            Some('?') => (0, Some(1)),
            Some('*') => (0, None),
            Some('+') => (1, None),
            Some('{') => {
                let close = self.chars[self.at..].iter().position(|&c| c == '}')? + self.at;
                let inner: String = self.chars[self.at + 1..close].iter().collect();
                let (lo, hi) = if let Some((lo, hi)) = inner.split_once(',') {
                    let hi = hi.trim();
                    (
                        lo.trim().parse::<usize>().ok()?,
                        if hi.is_empty() { None } else { Some(hi.parse().ok()?) },
                    )
                } else {
                    let n = inner.trim().parse::<usize>().ok()?;
                    (n, Some(n))
                };
                self.at = close;
                (lo, hi)
            }
            _ => return Some(atom),
        };
        self.at += 1;
        // A lazy (`?`) repetition matches the same strings.
        if self.peek() == Some('?') {
            self.at += 1;
        }
        Some(match (min, max) {
            (0, _) => Info::unknown(),
            (1, Some(1)) => atom,
            // At least once: what each repetition requires, the whole requires.
            _ => Info { exact: None, cover: atom.best().cloned(), all: atom.all },
        })
    }

    fn atom(&mut self) -> Option<Info> {
        let c = self.peek()?;
        self.at += 1;
        match c {
            '(' => self.group(),
            '[' => {
                let start = self.at;
                if let Some(members) = self.small_class() {
                    return Some(Info { exact: Some(members), cover: None, all: Vec::new() });
                }
                self.at = start;
                self.skip_class()?;
                Some(Info::unknown())
            }
            '\\' => self.escape(),
            '.' => Some(Info::unknown()),
            '^' | '$' => Some(Info::literal(String::new())),
            c => Some(Info::literal(c.to_string())),
        }
    }

    /// After `(`: a group, or a flag setting `(?x)` that holds to the end of the group.
    fn group(&mut self) -> Option<Info> {
        let saved = self.extended;
        if self.peek() == Some('?') {
            self.at += 1;
            match self.peek()? {
                'P' | '<' => {
                    let close = self.chars[self.at..].iter().position(|&c| c == '>')? + self.at;
                    self.at = close + 1;
                }
                ':' => self.at += 1,
                _ => {
                    // Flags: `(?ix)` or `(?i-x:`.
                    let mut on = true;
                    loop {
                        match self.peek()? {
                            '-' => on = false,
                            'x' => self.extended = on,
                            'i' | 'm' | 's' | 'U' | 'u' | 'R' => {}
                            ')' => {
                                // The flags hold for the rest of the enclosing group.
                                self.at += 1;
                                return Some(Info::literal(String::new()));
                            }
                            ':' => {
                                self.at += 1;
                                break;
                            }
                            _ => return None,
                        }
                        self.at += 1;
                    }
                }
            }
        }
        let info = self.alternation()?;
        self.extended = saved;
        (self.peek() == Some(')')).then(|| {
            self.at += 1;
            info
        })
    }

    /// The members of a class of a few plain characters (`[pousr]`), read past it, or `None`
    /// for any other class (ranges, negations, escapes of classes, nesting).
    fn small_class(&mut self) -> Option<Vec<String>> {
        let mut members = Vec::new();
        loop {
            match self.peek()? {
                ']' if !members.is_empty() => {
                    self.at += 1;
                    break;
                }
                '^' | '[' | '-' | ']' => return None,
                '\\' => {
                    let c = *self.chars.get(self.at + 1)?;
                    if c.is_ascii_alphanumeric() {
                        return None;
                    }
                    members.push(c.to_string());
                    self.at += 2;
                }
                c => {
                    members.push(c.to_string());
                    self.at += 1;
                }
            }
        }
        (members.len() <= MAX_CLASS).then_some(members)
    }

    /// Past a character class, whose opening `[` has been read.
    fn skip_class(&mut self) -> Option<()> {
        let mut depth = 1;
        if self.peek() == Some('^') {
            self.at += 1;
        }
        if self.peek() == Some(']') {
            self.at += 1;
        }
        while depth > 0 {
            match self.peek()? {
                '\\' => self.at += 1,
                '[' => depth += 1,
                ']' => depth -= 1,
                _ => {}
            }
            self.at += 1;
        }
        Some(())
    }

    /// After `\`: a literal, a class or an assertion.
    fn escape(&mut self) -> Option<Info> {
        let c = self.peek()?;
        self.at += 1;
        Some(match c {
            'b' | 'B' | 'A' | 'z' | '<' | '>' => Info::literal(String::new()),
            'd' | 'D' | 'w' | 'W' | 's' | 'S' => Info::unknown(),
            'p' | 'P' => {
                if self.peek() == Some('{') {
                    self.at += self.chars[self.at..].iter().position(|&c| c == '}')? + 1;
                } else {
                    self.at += 1;
                }
                Info::unknown()
            }
            'x' | 'u' | 'U' => {
                let digits: String = if self.peek() == Some('{') {
                    let close = self.chars[self.at..].iter().position(|&c| c == '}')? + self.at;
                    let d = self.chars[self.at + 1..close].iter().collect();
                    self.at = close + 1;
                    d
                } else {
                    let n = match c {
                        'x' => 2,
                        'u' => 4,
                        _ => 8,
                    };
                    let d = self.chars.get(self.at..self.at + n)?.iter().collect();
                    self.at += n;
                    d
                };
                Info::literal(char::from_u32(u32::from_str_radix(&digits, 16).ok()?)?.to_string())
            }
            'n' => Info::literal("\n".into()),
            'r' => Info::literal("\r".into()),
            't' => Info::literal("\t".into()),
            c if c.is_ascii_alphanumeric() => return None,
            c => Info::literal(c.to_string()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(pattern: &str, expected: Option<&[&str]>) {
        let found = required(pattern, 3);
        let expected = expected.map(|e| e.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>());
        assert_eq!(found, expected, "{pattern}");
    }

    #[test]
    fn literals_of_expressions() {
        check(r"\b(dckr_pat_[A-Z0-9_-]{27})(?: $ | [^A-Z0-9_-] )", Some(&["dckr_pat_"]));
        check(
            "(?xi)\n\\b\n(\n  dckr_pat_[A-Z0-9_-]{27} # the token\n)\n(?: $ | [^A-Z0-9_-] )",
            Some(&["dckr_pat_"]),
        );
        check(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b", Some(&["akia", "asia"]));
        check(
            r"(?i)(?:sv|SharedAccessSignature\s+sr)=\d{4}(?:&[a-z]{2}=[^&]+){2,}&sig=[a-z%]+",
            Some(&["&sig="]),
        );
        check(r"ya29\.(?i:[a-zA-Z0-9_-]{30,})", Some(&["ya29."]));
        check(r"(?:ghp|gho)_[A-Za-z0-9]{36}", Some(&["gho_", "ghp_"]));
        check(
            r"\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})",
            Some(&["gho_", "ghp_", "ghr_", "ghs_", "ghu_", "github_pat_"]),
        );
        check(r"https?://hooks\.slack\.com/x", Some(&["://hooks.slack.com/x"]));
        check(r"(?:abc)+def", Some(&["abc"]));
        check(r"[MNO][A-Z0-9_-]{23}\.[A-Z0-9_-]{6}\.[A-Z0-9_-]{27}", None);
        check(r"(?:foo|[a-z]+)bar", Some(&["bar"]));
        check(r"(?:ab|[a-z]+)", None);
        check(r"x(?=y)", None);
        check(r"\b(?:sq[pua])_[a-z0-9]{40}", Some(&["sqa_", "sqp_", "squ_"]));
        check(r"[a-z]ab[cd]", Some(&["abc", "abd"]));
    }

    #[track_caller]
    fn check_all(pattern: &str, expected: &[&[&str]]) {
        let expected: Vec<Vec<String>> =
            expected.iter().map(|set| set.iter().map(|s| (*s).to_owned()).collect()).collect();
        assert_eq!(required_all(pattern, 3), expected, "{pattern}");
    }

    #[test]
    fn every_set_of_literals_a_match_needs() {
        check_all(
            "(?xi)\n\\b\nline\n(?:.|[\\n\\r]){0,32}?\n(?:SECRET|PRIVATE|ACCESS|KEY|TOKEN)\n\
             (?:.|[\\n\\r]){0,32}?\n\\b\n(\n  (?:[0-9A-Z+/]{57}){3}=?\n)",
            &[&["access", "key", "private", "secret", "token"], &["line"]],
        );
        check_all(r"(?:abc)+def", &[&["abc"], &["def"]]);
        // Inside a group, and repeated at least once.
        check_all(r"x(?:abc.+def){2,}", &[&["abc"], &["def"]]);
        // What an optional piece or one branch of several holds is not required.
        check_all(r"(?:foo|[a-z]+)bar(?:qux)?", &[&["bar"]]);
        check_all(r"(?:abc.def|ghi)", &[&["abc", "ghi"]]);
        check_all(r"ab.cd", &[]);
        check_all(r"x(?=y)", &[]);
    }
}
