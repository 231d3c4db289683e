//! A small reader of Rust source for the tidy rules: `use` declarations (groups over several
//! lines, nested groups, `as` renames, globs) and the code lines around them.
//!
//! It reads rustfmt-formatted code line by line and is not a parser: it is exact enough for
//! the rules of this workspace, and a rule that it misreads fails loudly rather than silently.

/// One `use` declaration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct UseDecl {
    /// Whether it is `pub`, `pub(crate)` or `pub(super)`: a re-export.
    pub(super) public: bool,
    /// How many inline modules (`mod tests { … }`) enclose it.
    pub(super) depth: usize,
    /// The line it starts on, from 1.
    pub(super) line: usize,
    /// What follows `use`, without the final `;`, on one line.
    pub(super) tree: String,
}

/// A line of code that is neither a comment nor part of a `use` declaration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct CodeLine {
    /// How many inline modules enclose it.
    pub(super) depth: usize,
    /// Its number, from 1.
    pub(super) line: usize,
    /// The code, with any trailing `//` comment cut off.
    pub(super) code: String,
}

/// A file, read into its `use` declarations and its other code lines.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Source {
    pub(super) uses: Vec<UseDecl>,
    pub(super) code: Vec<CodeLine>,
}

/// One name a declaration brings into scope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Import {
    /// The full path it names; a glob ends with `*`.
    pub(super) path: Vec<String>,
    /// The name in scope: the path's last segment, the `as` name, or `*`.
    pub(super) name: String,
}

/// Code without its trailing `//` comment.
fn without_comment(line: &str) -> &str {
    line.find("//").map_or(line, |at| &line[..at])
}

/// What follows the visibility of a declaration, and whether there was one.
fn strip_visibility(line: &str) -> (bool, &str) {
    if let Some(rest) = line.strip_prefix("pub(") {
        return (true, rest.split_once(')').map_or(rest, |(_, rest)| rest.trim_start()));
    }
    match line.strip_prefix("pub ") {
        Some(rest) => (true, rest),
        None => (false, line),
    }
}

/// Whether `line` (trimmed) opens an inline module: `mod tests {`, `pub mod prelude {`.
fn opens_inline_module(line: &str) -> bool {
    let (_, rest) = strip_visibility(line);
    rest.strip_prefix("mod ").is_some_and(|rest| rest.ends_with('{'))
}

/// Reads `text` into declarations and code lines.
pub(super) fn read(text: &str) -> Source {
    let mut source = Source::default();
    // The indentation of each inline module still open: rustfmt closes one with a `}` at the
    // indentation it was opened at.
    let mut open: Vec<usize> = Vec::new();
    let mut pending: Option<UseDecl> = None;
    for (index, raw) in text.lines().enumerate() {
        let line = index + 1;
        let indent = raw.len() - raw.trim_start().len();
        let trimmed = without_comment(raw.trim_start()).trim_end();
        if let Some(mut decl) = pending.take() {
            decl.tree.push(' ');
            decl.tree.push_str(trimmed);
            finish(decl, &mut pending, &mut source.uses);
            continue;
        }
        if trimmed.is_empty() || raw.trim_start().starts_with("//") {
            continue;
        }
        let (public, rest) = strip_visibility(trimmed);
        if let Some(tree) = rest.strip_prefix("use ") {
            let decl = UseDecl { public, depth: open.len(), line, tree: tree.to_owned() };
            finish(decl, &mut pending, &mut source.uses);
            continue;
        }
        if opens_inline_module(trimmed) {
            open.push(indent);
        } else if trimmed == "}" && open.last() == Some(&indent) {
            open.pop();
        }
        source.code.push(CodeLine { depth: open.len(), line, code: trimmed.to_owned() });
    }
    source
}

/// Stores `decl` once its `;` is read, else keeps it pending.
fn finish(mut decl: UseDecl, pending: &mut Option<UseDecl>, uses: &mut Vec<UseDecl>) {
    match decl.tree.find(';') {
        Some(end) => {
            decl.tree.truncate(end);
            decl.tree = decl.tree.split_whitespace().collect::<Vec<_>>().join(" ");
            uses.push(decl);
        }
        None => *pending = Some(decl),
    }
}

/// Every name a `use` tree brings into scope.
pub(super) fn expand(tree: &str) -> Vec<Import> {
    let mut out = Vec::new();
    expand_into(&[], tree, &mut out);
    out
}

fn segments(path: &str) -> impl Iterator<Item = String> + '_ {
    path.split("::").map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned)
}

fn expand_into(prefix: &[String], tree: &str, out: &mut Vec<Import>) {
    let tree = tree.trim();
    if tree.is_empty() {
        return;
    }
    if let Some(open) = tree.find('{') {
        let mut prefix = prefix.to_vec();
        prefix.extend(segments(&tree[..open]));
        let inner = &tree[open + 1..];
        let inner = inner.trim_end().strip_suffix('}').unwrap_or(inner);
        for part in split_top_level(inner) {
            expand_into(&prefix, part, out);
        }
        return;
    }
    let (path, alias) = match tree.split_once(" as ") {
        Some((path, alias)) => (path, Some(alias.trim())),
        None => (tree, None),
    };
    let mut path: Vec<String> = prefix.iter().cloned().chain(segments(path)).collect();
    // `a::{self, B}` names `a` itself.
    if path.last().is_some_and(|s| s == "self") {
        path.pop();
    }
    let name = alias.map(str::to_owned).or_else(|| path.last().cloned()).unwrap_or_default();
    out.push(Import { path, name });
}

/// Splits a group's inside at the commas outside nested groups.
fn split_top_level(text: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0usize, 0);
    for (at, c) in text.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                parts.push(&text[start..at]);
                start = at + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts
}

/// The paths of at least two segments in a line of code, such as `crate::view::push_item`
/// (stopping before generics and calls).
pub(super) fn paths(code: &str) -> Vec<Vec<String>> {
    let bytes = code.as_bytes();
    let ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let mut out = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let starts = ident(bytes[at])
            && (at == 0 || !(ident(bytes[at - 1]) || bytes[at - 1] == b':'))
            && !bytes[at].is_ascii_digit();
        if !starts {
            at += 1;
            continue;
        }
        let mut path = Vec::new();
        loop {
            let begin = at;
            while at < bytes.len() && ident(bytes[at]) {
                at += 1;
            }
            path.push(code[begin..at].to_owned());
            let more = code[at..].starts_with("::")
                && bytes.get(at + 2).is_some_and(|&b| ident(b) || b == b'*');
            if !more {
                break;
            }
            at += 2;
            if bytes[at] == b'*' {
                path.push("*".to_owned());
                at += 1;
                break;
            }
        }
        if path.len() > 1 {
            out.push(path);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{Import, expand, paths, read};

    #[track_caller]
    fn check(tree: &str, expected: &[(&str, &str)]) {
        let got: Vec<(String, String)> =
            expand(tree).into_iter().map(|Import { path, name }| (path.join("::"), name)).collect();
        let expected: Vec<(String, String)> =
            expected.iter().map(|(p, n)| ((*p).to_owned(), (*n).to_owned())).collect();
        assert_eq!(got, expected);
    }

    #[test]
    fn trees_expand_to_names() {
        check("a::B", &[("a::B", "B")]);
        check("a::{B, C}", &[("a::B", "B"), ("a::C", "C")]);
        check("curator_model as model", &[("curator_model", "model")]);
        check(
            "a::{self, b::{C, D as E}, *}",
            &[("a", "a"), ("a::b::C", "C"), ("a::b::D", "E"), ("a::*", "*")],
        );
    }

    #[test]
    fn declarations_span_lines_and_inline_modules_nest() {
        let source = read(
            "//! Doc.\n\npub use compression::{\n    Compression, // the trait\n    Uncompressed,\n};\nuse crate::x::Y;\n\nfn f() {\n    crate::z::g(); // crate::not::this\n}\n\n#[cfg(test)]\nmod tests {\n    use super::*;\n}\n",
        );
        let uses: Vec<_> =
            source.uses.iter().map(|u| (u.public, u.depth, u.line, u.tree.as_str())).collect();
        assert_eq!(
            uses,
            [
                (true, 0, 3, "compression::{ Compression, Uncompressed, }"),
                (false, 0, 7, "crate::x::Y"),
                (false, 1, 15, "super::*"),
            ]
        );
        let code: Vec<_> = source.code.iter().map(|c| (c.depth, c.code.as_str())).collect();
        assert!(code.contains(&(0, "crate::z::g();")), "{code:?}");
        assert!(code.contains(&(1, "mod tests {")) && code.contains(&(0, "}")), "{code:?}");
        let owned = |p: &[&str]| p.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        assert_eq!(
            paths("crate::z::g(); x::<T>::y; 3::4; self::*"),
            [owned(&["crate", "z", "g"]), owned(&["self", "*"])]
        );
    }
}
