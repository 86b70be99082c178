//! Which module of a crate imports which, read from the sources as text, and the import
//! cycles between the members of one folder. A member is a file or a whole subfolder (its
//! `mod.rs` and everything under it), so a cycle that runs through a folder's `mod.rs` or
//! through a file deeper in a subfolder counts like one between two files; a name a folder
//! re-exports (`pub use child::Name`) counts as an import of the child that defines it.
//! A folder's own `mod.rs` declares its members and is not one of them, and a member's use
//! of what its parent defines is no edge between siblings.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A module's path below the crate root: `engine/dial/mod.rs` → `["engine", "dial"]`.
pub type ModulePath = Vec<String>;

/// The edges between the members of each folder: folder → member → members it imports.
pub type FolderGraphs = BTreeMap<ModulePath, BTreeMap<String, BTreeSet<String>>>;

/// The modules of the crate whose sources are under `src` (its root `lib.rs` is `[]`),
/// leaving out the files `skip` names (a binary's modules) and unit-test files.
pub fn crate_modules(src: &Path, skip: &[&str]) -> BTreeMap<ModulePath, PathBuf> {
    super::rust_files(src)
        .into_iter()
        .filter(|path| path.file_name().is_none_or(|name| name != "tests.rs"))
        .map(|path| {
            let relative = path.strip_prefix(src).unwrap().with_extension("");
            let mut module: ModulePath = relative.iter().map(|p| p.to_string_lossy().into_owned()).collect();
            if module.last().is_some_and(|p| p == "mod" || p == "lib") {
                module.pop();
            }
            (module, path)
        })
        .filter(|(module, _)| module.first().is_none_or(|top| !skip.contains(&top.as_str())))
        .collect()
}

/// Every path the code names from `crate::`, `super::` or `self::`, groups expanded
/// (`super::{a::B, c as D}` → `super::a::B`, `super::c`), each with the name it is used by.
fn named_paths(code: &str) -> Vec<(ModulePath, String)> {
    let mut paths = Vec::new();
    for start in ["crate::", "super::", "self::"] {
        for (at, _) in code.match_indices(start) {
            let before = code[..at].chars().next_back();
            if !before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                expand(&code[at..], Vec::new(), &mut paths);
            }
        }
    }
    paths
}

/// Expands the path (or group of paths) at the start of `text` onto `prefix` into `out`;
/// returns how many bytes it read.
fn expand(text: &str, mut path: ModulePath, out: &mut Vec<(ModulePath, String)>) -> usize {
    let mut at = 0;
    loop {
        if text[at..].starts_with('{') {
            at += 1;
            loop {
                at += text[at..].len() - text[at..].trim_start().len();
                if text[at..].is_empty() || text[at..].starts_with('}') {
                    return (at + 1).min(text.len());
                }
                at += expand(&text[at..], path.clone(), out);
                // Past an `as` alias or a stray token, on to the next item of the group.
                at += text[at..].find([',', '}']).unwrap_or(text.len() - at);
                if text[at..].starts_with(',') {
                    at += 1;
                }
            }
        }
        let Some(name) = super::first_identifier(&text[at..]) else {
            let used_as = path.last().cloned().unwrap_or_default();
            out.push((path, used_as));
            return at + usize::from(text[at..].starts_with('*'));
        };
        at += name.len();
        path.push(name.clone());
        if text[at..].starts_with("::") {
            at += 2;
            continue;
        }
        let used_as = text[at..].strip_prefix(" as ").and_then(super::first_identifier).unwrap_or(name);
        out.push((path, used_as));
        return at;
    }
}

/// What a crate's modules name: which modules exist, and what each folder re-exports.
struct Names<'a> {
    modules: &'a BTreeMap<ModulePath, PathBuf>,
    /// (module, name it re-exports) → the module the name comes from.
    reexports: BTreeMap<(ModulePath, String), ModulePath>,
}

impl Names<'_> {
    /// The module a path named in `from` lands in: as deep as modules and re-exports go.
    fn resolve(&self, named: &[String], from: &[String]) -> ModulePath {
        let mut module: ModulePath = match named[0].as_str() {
            "crate" => Vec::new(),
            "super" => from[..from.len().saturating_sub(1)].to_vec(),
            "self" => from.to_vec(),
            // A path relative to `from`, as in `pub use child::Name`.
            _ => {
                let mut relative = from.to_vec();
                relative.push(named[0].clone());
                if !self.modules.contains_key(&relative) {
                    return from.to_vec();
                }
                relative
            }
        };
        for segment in &named[1..] {
            if segment == "super" {
                module.pop();
                continue;
            }
            let mut deeper = module.clone();
            deeper.push(segment.clone());
            if self.modules.contains_key(&deeper) {
                module = deeper;
            } else if let Some(origin) = self.reexports.get(&(module.clone(), segment.clone())) {
                module = origin.clone();
            } else {
                break;
            }
        }
        module
    }
}

/// The crate's import edges between siblings, grouped by the folder they share.
pub fn folder_graphs(modules: &BTreeMap<ModulePath, PathBuf>) -> FolderGraphs {
    let code: BTreeMap<&ModulePath, String> =
        modules.iter().map(|(module, path)| (module, super::production_code(path))).collect();
    let mut names = Names { modules, reexports: BTreeMap::new() };
    // Re-exports of re-exports settle within a few rounds.
    for _ in 0..4 {
        let mut reexports = BTreeMap::new();
        for (module, text) in &code {
            for statement in reexport_statements(text) {
                let mut found = Vec::new();
                expand(statement, Vec::new(), &mut found);
                for (path, used_as) in found {
                    let origin = names.resolve(&path[..path.len() - 1], module);
                    if origin.len() > module.len() || !origin.starts_with(module) {
                        reexports.insert(((*module).clone(), used_as), origin);
                    }
                }
            }
        }
        names.reexports = reexports;
    }
    let mut graphs = FolderGraphs::new();
    for (from, text) in &code {
        for (path, _) in named_paths(text) {
            let to = names.resolve(&path, from);
            let shared = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
            if shared < from.len() && shared < to.len() {
                let folder = graphs.entry(from[..shared].to_vec()).or_default();
                folder.entry(from[shared].clone()).or_default().insert(to[shared].clone());
            }
        }
    }
    graphs
}

/// The path trees of the `pub use` statements (of any visibility) in `code`.
fn reexport_statements(code: &str) -> Vec<&str> {
    let mut statements = Vec::new();
    for line_start in code.match_indices("pub").map(|(at, _)| at) {
        let rest = &code[line_start..];
        let Some(after_use) = rest.find("use ") else { continue };
        let visibility = &rest[..after_use];
        if !(visibility == "pub " || visibility.starts_with("pub(") && visibility.ends_with(") ")) {
            continue;
        }
        let tree = &rest[after_use + "use ".len()..];
        statements.push(&tree[..tree.find(';').unwrap_or(tree.len())]);
    }
    statements
}

/// Every import cycle between the members of one folder, as `folder: a → b → a`.
pub fn cycles(graphs: &FolderGraphs) -> Vec<String> {
    graphs
        .iter()
        .filter_map(|(folder, graph)| {
            let cycle = super::find_cycle(graph)?;
            let folder: String = folder.iter().map(|name| format!("{name}/")).collect();
            Some(format!("{folder}: {}", cycle.join(" → ")))
        })
        .collect()
}
