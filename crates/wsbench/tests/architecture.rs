//! The shape of the code, checked: the library's modules import each other without a cycle
//! (at the top level, and between the files of one folder), the library never reaches into
//! the binary's flag model, `main.rs` stays a thin entry point, no source file or function
//! grows past the size a reader can hold, and only `crates/supervisor` starts, signals and
//! reaps child processes. Reads the sources as text; builds nothing.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Longest source file, in lines.
const MAX_FILE_LINES: usize = 600;
/// Longest function, in lines.
const MAX_FUNCTION_LINES: usize = 80;
/// Longest `main.rs`, in lines.
const MAX_MAIN_LINES: usize = 60;
/// Modules of the binary, not of the library.
const BINARY_MODULES: [&str; 4] = ["main", "cli", "commands", "help"];

fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
    files.sort();
    files
}

/// The file's code without its comments (docs may link anywhere) and its unit tests (they
/// may import anything).
fn production_code(path: &Path) -> String {
    let code = without_unit_tests(path);
    code.lines().filter(|line| !line.trim_start().starts_with("//")).collect::<Vec<_>>().join("\n")
}

fn without_unit_tests(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    match text.find("#[cfg(test)]\nmod tests") {
        Some(at) => text[..at].to_owned(),
        None => text,
    }
}

/// Every `crate::NAME` the text refers to, including `crate::{a, b::c}` groups.
fn crate_references(text: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for (at, _) in text.match_indices("crate::") {
        let rest = &text[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let group = &group[..group.find('}').unwrap_or(group.len())];
            names.extend(group.split(',').filter_map(|item| first_identifier(item.trim())));
        } else {
            names.extend(first_identifier(rest));
        }
    }
    names
}

fn first_identifier(text: &str) -> Option<String> {
    let end = text.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(text.len());
    (end > 0).then(|| text[..end].to_owned())
}

/// The module a file belongs to, relative to `src/`: `engine/worker.rs` → `["engine", "worker"]`.
fn module_path(path: &Path) -> Vec<String> {
    let relative = path.strip_prefix(src_dir()).unwrap().with_extension("");
    let mut parts: Vec<String> = relative.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    parts
}

/// A cycle in `graph`, if there is one, as the list of nodes along it.
fn find_cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|n| n == node) {
            let mut cycle = path[at..].to_vec();
            cycle.push(node.to_owned());
            return Some(cycle);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_owned());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(cycle) = visit(next, graph, path, done) {
                return Some(cycle);
            }
        }
        path.pop();
        done.insert(node.to_owned());
        None
    }
    let mut done = BTreeSet::new();
    graph.keys().find_map(|node| visit(node, graph, &mut Vec::new(), &mut done))
}

fn library_files() -> Vec<(PathBuf, Vec<String>)> {
    rust_files(&src_dir())
        .into_iter()
        // A module's unit tests in a file of their own (`mod tests;`) may import anything.
        .filter(|path| path.file_name().is_none_or(|name| name != "tests.rs"))
        .map(|path| {
            let module = module_path(&path);
            (path, module)
        })
        .filter(|(_, module)| !module.is_empty() && !BINARY_MODULES.contains(&module[0].as_str()))
        .filter(|(_, module)| module != &["lib"])
        .collect()
}

#[test]
fn top_level_modules_import_each_other_without_a_cycle() {
    let files = library_files();
    let top_level: BTreeSet<String> = files.iter().map(|(_, module)| module[0].clone()).collect();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (path, module) in &files {
        let edges = graph.entry(module[0].clone()).or_default();
        for name in crate_references(&production_code(path)) {
            if name != module[0] && top_level.contains(&name) {
                edges.insert(name);
            }
        }
    }
    assert!(graph.len() > 10, "the library's modules were not found: {graph:?}");
    assert_eq!(find_cycle(&graph), None, "top-level modules form an import cycle");
}

#[test]
fn files_of_one_folder_import_each_other_without_a_cycle() {
    // Within a folder, siblings (not the folder's mod.rs, which declares them) refer to each
    // other as `super::NAME` or `crate::FOLDER::NAME`.
    let files = library_files();
    let mut folders: BTreeMap<Vec<String>, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    for (path, module) in &files {
        let is_folder_root = path.file_name().is_some_and(|n| n == "mod.rs");
        if module.len() < 2 || is_folder_root {
            continue;
        }
        let (folder, name) = module.split_at(module.len() - 1);
        let text = production_code(path);
        let prefix = format!("crate::{}::", folder.join("::"));
        let mut refers = BTreeSet::new();
        for marker in ["super::", prefix.as_str()] {
            for (at, _) in text.match_indices(marker) {
                refers.extend(first_identifier(&text[at + marker.len()..]));
            }
        }
        folders.entry(folder.to_vec()).or_default().insert(name[0].clone(), refers);
    }
    for (folder, mut graph) in folders {
        let siblings: BTreeSet<String> = graph.keys().cloned().collect();
        for edges in graph.values_mut() {
            edges.retain(|name| siblings.contains(name));
        }
        assert_eq!(find_cycle(&graph), None, "files of {} form an import cycle", folder.join("/"));
    }
}

#[test]
fn the_library_never_imports_the_binary() {
    for (path, _) in library_files() {
        let references = crate_references(&production_code(&path));
        for binary in BINARY_MODULES {
            assert!(!references.contains(binary), "{} imports crate::{binary}", path.display());
        }
    }
}

#[test]
fn main_is_a_thin_entry_point() {
    let main = std::fs::read_to_string(src_dir().join("main.rs")).unwrap();
    let lines = main.lines().count();
    assert!(lines <= MAX_MAIN_LINES, "main.rs has {lines} lines (at most {MAX_MAIN_LINES})");
}

/// Every `.rs` file under `crates/*/src`.
fn workspace_sources() -> Vec<PathBuf> {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let mut files = Vec::new();
    for entry in std::fs::read_dir(crates).unwrap().flatten() {
        let src = entry.path().join("src");
        if src.is_dir() {
            files.extend(rust_files(&src));
        }
    }
    assert!(files.len() > 50, "the workspace's sources were not found");
    files
}

#[test]
fn every_source_file_says_why_it_exists_and_stays_small() {
    let mut problems = Vec::new();
    for path in workspace_sources() {
        let text = std::fs::read_to_string(&path).unwrap();
        if !text.starts_with("//!") {
            problems.push(format!("{} does not open with a module doc (//!)", path.display()));
        }
        let lines = text.lines().count();
        if lines > MAX_FILE_LINES {
            problems.push(format!("{} has {lines} lines (at most {MAX_FILE_LINES})", path.display()));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn no_function_is_longer_than_a_screen() {
    let mut long = Vec::new();
    for path in workspace_sources() {
        let text = without_unit_tests(&path);
        let lines: Vec<&str> = text.lines().collect();
        for (start, line) in lines.iter().enumerate() {
            let trimmed = line.trim_start();
            let is_fn =
                ["fn ", "pub fn ", "pub(crate) fn ", "pub(super) fn ", "unsafe fn ", "pub unsafe fn "]
                    .iter()
                    .any(|p| trimmed.starts_with(p));
            if !is_fn || trimmed.ends_with(';') {
                continue;
            }
            // The function ends at the first later line that closes at its own indentation.
            let indent = line.len() - trimmed.len();
            let closing = " ".repeat(indent) + "}";
            if let Some(length) =
                lines[start + 1..].iter().position(|l| l.starts_with(&closing) && l.trim() == "}")
                && length + 2 > MAX_FUNCTION_LINES
            {
                long.push(format!("{}:{} ({} lines)", path.display(), start + 1, length + 2));
            }
        }
    }
    assert!(long.is_empty(), "functions over {MAX_FUNCTION_LINES} lines:\n{}", long.join("\n"));
}

/// What starts, signals or reaps a child process. (`Launch::start` of the supervisor crate
/// is how everyone else does it: `.start()` is not among these.)
const CHILD_PROCESS_CALLS: [&str; 7] =
    ["Command::new", ".spawn()", ".output()", ".status()", "fork(", "libc::kill", "waitpid"];
/// The one crate that starts, signals and reaps child processes.
const SUPERVISOR_CRATE: &str = "supervisor";

/// Whether `path` is test code: a `tests.rs` declared as `#[cfg(test)] mod tests;`.
fn is_unit_test_file(path: &Path) -> bool {
    path.file_name().is_some_and(|name| name == "tests.rs")
}

#[test]
fn only_the_supervisor_crate_starts_child_processes() {
    let supervisor = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().join(SUPERVISOR_CRATE);
    let mut found_in_supervisor = BTreeSet::new();
    let mut elsewhere = Vec::new();
    for path in workspace_sources() {
        if is_unit_test_file(&path) {
            continue;
        }
        let code = production_code(&path);
        for call in CHILD_PROCESS_CALLS.iter().filter(|call| code.contains(**call)) {
            if path.starts_with(&supervisor) {
                found_in_supervisor.insert(*call);
            } else {
                elsewhere.push(format!("{}: {call}", path.display()));
            }
        }
    }
    // The check sees what it looks for: the supervisor itself makes these calls.
    for call in ["Command::new", ".spawn()", "libc::kill"] {
        assert!(found_in_supervisor.contains(call), "{call} not found in crates/{SUPERVISOR_CRATE}");
    }
    assert!(
        elsewhere.is_empty(),
        "child processes are started through crates/{SUPERVISOR_CRATE} (wsbench_supervisor::Launch), \
         not here:\n{}",
        elsewhere.join("\n")
    );
}

/// The layers a scenario plugs into: they reach scenarios through the registry only.
const SCENARIO_BLIND: [&str; 8] =
    ["engine", "result", "report", "live", "metrics", "merge", "compare", "session"];

/// The scenarios: the folders of `src/scenario/`.
fn scenario_names() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(src_dir().join("scenario"))
        .unwrap()
        .flatten()
        .filter(|entry| entry.path().is_dir())
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// Whole-word occurrences of `word` in `code` (identifiers and string contents alike).
fn mentions(code: &str, word: &str) -> usize {
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    code.match_indices(word)
        .filter(|&(at, _)| {
            let before = code[..at].chars().next_back();
            let after = code[at + word.len()..].chars().next();
            !before.is_some_and(ident) && !after.is_some_and(ident)
        })
        .count()
}

#[test]
fn only_the_scenario_folder_names_a_scenario() {
    let names = scenario_names();
    assert!(names.len() >= 8, "the scenario folders were not found: {names:?}");
    let mut found = Vec::new();
    for (path, module) in library_files() {
        if !SCENARIO_BLIND.contains(&module[0].as_str()) {
            continue;
        }
        let code = production_code(&path);
        for name in &names {
            if mentions(&code, name) > 0 {
                found.push(format!("{} names the scenario `{name}`", path.display()));
            }
        }
        if code.contains("Scenario::") {
            found.push(format!("{} branches on a scenario (`Scenario::`)", path.display()));
        }
    }
    assert!(found.is_empty(), "scenario-specific code outside scenario/:\n{}", found.join("\n"));
}

/// Modules that reach message protocols through their registry only, never by name.
const PROTOCOL_BLIND: [&str; 10] =
    ["engine", "result", "report", "live", "metrics", "merge", "compare", "session", "scenario", "fleet"];

#[test]
fn only_the_protocol_folder_names_a_protocol() {
    // Every registered protocol but the default, which shared code names through
    // `protocol::DEFAULT` (and whose name, `raw`, is an everyday word).
    let names: Vec<String> = wsbench::protocol::names()
        .into_iter()
        .filter(|name| *name != wsbench::protocol::DEFAULT)
        .flat_map(|name| [name.to_owned(), name.replace('-', "_")])
        .collect();
    assert!(names.len() >= 2, "the protocols were not found: {names:?}");
    let mut found = Vec::new();
    for (path, module) in library_files() {
        if !PROTOCOL_BLIND.contains(&module[0].as_str()) {
            continue;
        }
        let code = production_code(&path);
        for name in &names {
            if mentions(&code, name) > 0 {
                found.push(format!("{} names the protocol `{name}`", path.display()));
            }
        }
    }
    assert!(found.is_empty(), "protocol-specific code outside protocol/:\n{}", found.join("\n"));
}

/// The top-level modules `start` imports, directly or through others.
fn reachable_from(start: &str) -> BTreeSet<String> {
    let files = library_files();
    let top_level: BTreeSet<String> = files.iter().map(|(_, module)| module[0].clone()).collect();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (path, module) in &files {
        let edges = graph.entry(module[0].clone()).or_default();
        for name in crate_references(&production_code(path)) {
            if name != module[0] && top_level.contains(&name) {
                edges.insert(name);
            }
        }
    }
    let mut seen = BTreeSet::new();
    let mut todo = vec![start.to_owned()];
    while let Some(node) = todo.pop() {
        for next in graph.get(&node).into_iter().flatten() {
            if seen.insert(next.clone()) {
                todo.push(next.clone());
            }
        }
    }
    seen
}

#[test]
fn the_report_never_reaches_the_session() {
    // Results are files and reports read files: the report layer imports nothing that runs
    // a measurement, directly or through another module.
    let reached = reachable_from("report");
    assert!(reached.contains("result"), "the import graph was not read: {reached:?}");
    for runner in ["session", "live", "compare"] {
        assert!(!reached.contains(runner), "report reaches `{runner}` (through {reached:?})");
    }
}
