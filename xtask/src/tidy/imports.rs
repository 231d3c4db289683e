//! No circle of modules, of any length, in any crate: modules that need each other (a pair
//! importing each other, or `a → b → c → a`) are one concept split up, or a further module
//! waiting to be named. Circles are the strongly connected components of the import graph.
//!
//! A module's imports are its `use` declarations and the `crate::`, `super::`, `self::` and
//! child-module paths in its code. A name imported through a re-export (`crate::View`, where
//! `lib.rs` says `pub use view::View`) counts as an import of the module that defines it, and
//! a module re-exporting what its own submodules define does not import them by that.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use super::use_tree::{Source, expand, paths, read};

/// A module path inside its crate: empty for the crate root.
type ModulePath = Vec<String>;

/// The modules of one crate, read from its `src/` folder.
#[derive(Debug, Default)]
struct Crate {
    modules: BTreeMap<ModulePath, (PathBuf, Source)>,
}

/// An import of one module by another, with the line that makes it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Edge {
    from: ModulePath,
    to: ModulePath,
    line: usize,
}

fn name(path: &ModulePath) -> String {
    if path.is_empty() { "crate".to_owned() } else { path.join("::") }
}

impl Crate {
    /// Reads every `.rs` file under `src` as the module its path makes it.
    fn read(src: &Path) -> Self {
        let mut files = Vec::new();
        super::rust_files(src, &mut files);
        let mut krate = Self::default();
        for file in files {
            let Ok(relative) = file.strip_prefix(src) else { continue };
            let mut path: ModulePath = relative
                .with_extension("")
                .iter()
                .map(|s| s.to_string_lossy().into_owned())
                .collect();
            if path.last().is_some_and(|last| last == "mod") || path == ["lib"] || path == ["main"]
            {
                path.pop();
            }
            let text = std::fs::read_to_string(&file).unwrap_or_default();
            krate.modules.insert(path, (file, read(&text)));
        }
        krate
    }

    /// From files given as (module path, text), for tests.
    fn of(files: &[(&str, &str)]) -> Self {
        let modules = files
            .iter()
            .map(|(path, text)| {
                let path: ModulePath =
                    path.split("::").filter(|s| !s.is_empty()).map(str::to_owned).collect();
                let file = PathBuf::from(name(&path));
                (path, (file, read(text)))
            })
            .collect();
        Self { modules }
    }

    fn is_module(&self, path: &[String]) -> bool {
        self.modules.contains_key(path)
    }

    /// The absolute path (from the crate root) that `path`, written in module `at` inside
    /// `depth` inline modules, names; `None` for a path outside the crate.
    fn absolute(&self, at: &[String], depth: usize, path: &[String]) -> Option<Vec<String>> {
        let (first, rest) = path.split_first()?;
        match first.as_str() {
            "crate" => Some(rest.to_vec()),
            "self" => Some(at.iter().chain(rest).cloned().collect()),
            "super" => {
                let ups = path.iter().take_while(|s| *s == "super").count();
                // The first `depth` of them leave inline modules (`mod tests`), staying in
                // this file.
                let ups = ups.saturating_sub(depth);
                let base = at.get(..at.len().checked_sub(ups)?)?;
                let rest = path.iter().skip_while(|s| *s == "super");
                Some(base.iter().chain(rest).cloned().collect())
            }
            _ => {
                let mut child = at.to_vec();
                child.push(first.clone());
                (depth == 0 && self.is_module(&child))
                    .then(|| child.into_iter().chain(rest.iter().cloned()).collect())
            }
        }
    }

    /// The module that defines what the absolute `path` names, following re-exports.
    fn target(&self, path: &[String], hops: usize) -> Vec<String> {
        let mut module = Vec::new();
        let mut rest = path;
        while let Some((first, tail)) = rest.split_first() {
            module.push(first.clone());
            if !self.is_module(&module) {
                module.pop();
                break;
            }
            rest = tail;
        }
        let Some((item, tail)) = rest.split_first() else { return module };
        if hops == 0 || item == "*" {
            return module;
        }
        let Some((_, source)) = self.modules.get(&module) else { return module };
        for decl in source.uses.iter().filter(|decl| decl.public && decl.depth == 0) {
            for import in expand(&decl.tree) {
                if import.name == *item
                    && let Some(mut resolved) = self.absolute(&module, 0, &import.path)
                {
                    resolved.extend(tail.iter().cloned());
                    return self.target(&resolved, hops - 1);
                }
            }
        }
        module
    }

    /// Every import of one module by another.
    fn edges(&self) -> BTreeSet<Edge> {
        let mut edges = BTreeSet::new();
        for (at, (_, source)) in &self.modules {
            let mut add = |depth: usize, line: usize, path: &[String], re_export: bool| {
                if let Some(absolute) = self.absolute(at, depth, path) {
                    let to = self.target(&absolute, 8);
                    // A module publishing what its own submodules define (`pub use
                    // bpe::Bpe` in `tokens/mod.rs`) adds no dependency to `mod bpe;`.
                    let publishes_own = re_export && to.len() > at.len() && to.starts_with(at);
                    if to != *at && !publishes_own {
                        edges.insert(Edge { from: at.clone(), to, line });
                    }
                }
            };
            for decl in &source.uses {
                for import in expand(&decl.tree) {
                    add(decl.depth, decl.line, &import.path, decl.public);
                }
            }
            for line in &source.code {
                for path in paths(&line.code) {
                    add(line.depth, line.line, &path, false);
                }
            }
        }
        edges
    }

    /// Each circle of modules that import one another, of any length (a strongly connected
    /// component of the import graph with more than one module), as its shortest cycle
    /// through its first module: `a (file:line) → b (file:line) → a`, each line the first
    /// import of the module that follows.
    fn cycles(&self) -> Vec<String> {
        let edges = self.edges();
        let first: BTreeMap<(&ModulePath, &ModulePath), usize> =
            edges.iter().rev().map(|e| ((&e.from, &e.to), e.line)).collect();
        let mut graph: BTreeMap<&ModulePath, Vec<&ModulePath>> = BTreeMap::new();
        for &(from, to) in first.keys() {
            graph.entry(from).or_default().push(to);
        }
        let file = |path: &ModulePath| {
            self.modules.get(path).map(|(file, _)| file.display().to_string()).unwrap_or_default()
        };
        components(&graph)
            .into_iter()
            .filter(|component| component.len() > 1)
            .map(|component| {
                let cycle = shortest_cycle(&graph, &component);
                let mut parts: Vec<String> = cycle
                    .windows(2)
                    .map(|pair| {
                        let line = first.get(&(pair[0], pair[1])).copied().unwrap_or_default();
                        format!("{} ({}:{line})", name(pair[0]), file(pair[0]))
                    })
                    .collect();
                parts.push(name(cycle[0]));
                parts.join(" → ")
            })
            .collect()
    }
}

/// The strongly connected components of `graph` (Tarjan's algorithm), each sorted.
fn components<'a>(
    graph: &BTreeMap<&'a ModulePath, Vec<&'a ModulePath>>,
) -> Vec<BTreeSet<&'a ModulePath>> {
    #[derive(Default)]
    struct Walk<'a> {
        next: usize,
        index: BTreeMap<&'a ModulePath, usize>,
        low: BTreeMap<&'a ModulePath, usize>,
        stack: Vec<&'a ModulePath>,
        on_stack: BTreeSet<&'a ModulePath>,
        found: Vec<BTreeSet<&'a ModulePath>>,
    }
    fn visit<'a>(
        graph: &BTreeMap<&'a ModulePath, Vec<&'a ModulePath>>,
        walk: &mut Walk<'a>,
        node: &'a ModulePath,
    ) {
        walk.index.insert(node, walk.next);
        walk.low.insert(node, walk.next);
        walk.next += 1;
        walk.stack.push(node);
        walk.on_stack.insert(node);
        for &next in graph.get(node).into_iter().flatten() {
            if !walk.index.contains_key(next) {
                visit(graph, walk, next);
                let low = walk.low[node].min(walk.low[next]);
                walk.low.insert(node, low);
            } else if walk.on_stack.contains(next) {
                let low = walk.low[node].min(walk.index[next]);
                walk.low.insert(node, low);
            }
        }
        if walk.low[node] == walk.index[node] {
            let mut component = BTreeSet::new();
            while let Some(member) = walk.stack.pop() {
                walk.on_stack.remove(member);
                component.insert(member);
                if member == node {
                    break;
                }
            }
            walk.found.push(component);
        }
    }
    let mut walk = Walk::default();
    for &node in graph.keys() {
        if !walk.index.contains_key(node) {
            visit(graph, &mut walk, node);
        }
    }
    walk.found.sort();
    walk.found
}

/// The shortest cycle inside `component` through its first module (breadth first), from
/// that module back to it: `[a, b, c, a]`.
fn shortest_cycle<'a>(
    graph: &BTreeMap<&'a ModulePath, Vec<&'a ModulePath>>,
    component: &BTreeSet<&'a ModulePath>,
) -> Vec<&'a ModulePath> {
    let Some(&start) = component.first() else { return Vec::new() };
    let mut parent: BTreeMap<&ModulePath, &ModulePath> = BTreeMap::new();
    let mut queue = std::collections::VecDeque::from([start]);
    while let Some(node) = queue.pop_front() {
        for &next in graph.get(node).into_iter().flatten() {
            if next == start {
                // The path back from `node` to `start` by parents, then turned around.
                let mut cycle = vec![start, node];
                let mut at = node;
                while let Some(&up) = parent.get(at) {
                    cycle.push(up);
                    at = up;
                }
                cycle.reverse();
                return cycle;
            }
            if component.contains(next) && next != start && !parent.contains_key(next) {
                parent.insert(next, node);
                queue.push_back(next);
            }
        }
    }
    vec![start, start]
}

#[test]
fn no_modules_import_each_other_in_a_circle() {
    let root = crate::workspace::root();
    let mut sources: Vec<PathBuf> = vec![root.join("benches/src"), root.join("xtask/src")];
    for entry in std::fs::read_dir(root.join("crates")).into_iter().flatten().flatten() {
        sources.push(entry.path().join("src"));
    }
    let mut cycles = Vec::new();
    for src in sources.iter().filter(|src| src.is_dir()) {
        let krate = Crate::read(src);
        for cycle in krate.cycles() {
            cycles.push(cycle.replace(&format!("{}/", root.display()), ""));
        }
    }
    assert!(
        cycles.is_empty(),
        "modules that import each other in a circle:\n{}",
        cycles.join("\n")
    );
}

#[test]
fn pairs_are_found_through_uses_paths_and_re_exports() {
    let krate = Crate::of(&[
        ("", "mod a;\nmod b;\nmod c;\npub use a::A;\npub use b::B;\npub struct Root;\n"),
        ("a", "use crate::B;\npub struct A;\n#[cfg(test)]\nmod tests {\n    use super::*;\n}\n"),
        ("b", "pub struct B;\nfn f() {\n    crate::a::helper();\n}\n"),
        ("c", "use crate::Root;\nmod d;\n"),
        ("c::d", "use super::super::A;\n// crate::b::B in a comment\n"),
    ]);
    let edges: Vec<String> =
        krate.edges().into_iter().map(|e| format!("{} → {}", name(&e.from), name(&e.to))).collect();
    // The root's `pub use a::A` publishes its own module and adds no edge; `crate::B` in `a`
    // is `b`'s, through the root's re-export; `mod tests` importing `super::*` stays in `a`.
    assert_eq!(edges, ["a → b", "b → a", "c → crate", "c::d → a"]);
    assert_eq!(krate.cycles(), ["a (a:1) → b (b:3) → a"]);
    // The crate root calling into a module that imports an item of the root is a pair too.
    let krate = Crate::of(&[
        ("", "mod commands;\npub enum Command {}\nfn main() {\n    commands::run();\n}\n"),
        ("commands", "use crate::Command;\npub fn run() {}\n"),
    ]);
    assert_eq!(krate.cycles(), ["crate (crate:4) → commands (commands:1) → crate"]);
}

#[test]
fn circles_of_any_length_are_found() {
    // a → b → c → a, which no pair of modules shows, beside d → e with no way back.
    let krate = Crate::of(&[
        ("", "mod a;\nmod b;\nmod c;\nmod d;\nmod e;\n"),
        ("a", "use crate::b::B;\npub struct A;\n"),
        ("b", "pub struct B;\nuse crate::c::C;\n"),
        ("c", "pub struct C;\n\nuse crate::a::A;\n"),
        ("d", "use crate::e::E;\n"),
        ("e", "pub struct E;\n"),
    ]);
    assert_eq!(krate.cycles(), ["a (a:1) → b (b:2) → c (c:3) → a"]);
}
