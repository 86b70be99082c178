//! The shape of the code, checked: the library's modules import each other without a cycle
//! (at the top level, and between the files of one folder), the library never reaches into
//! the binary's flag model, `main.rs` stays a thin entry point, no source file or function
//! grows past the size a reader can hold, and only `crates/supervisor` starts, signals and
//! reaps child processes. Reads the sources as text; builds nothing.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

#[path = "architecture/module_graph.rs"]
mod module_graph;

/// Longest source file, in lines.
const MAX_FILE_LINES: usize = 600;
/// Longest function, in lines.
const MAX_FUNCTION_LINES: usize = 80;
/// Longest `main.rs`, in lines.
const MAX_MAIN_LINES: usize = 60;
/// Modules of the binary, not of the library.
const BINARY_MODULES: [&str; 8] =
    ["main", "cli", "commands", "help", "series_args", "import_args", "record_args", "serve_args"];

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
        .filter(|path| !is_unit_test_file(path))
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

/// The crates whose folders are checked for import cycles, by their folder under `crates/`,
/// with the files of a binary the library does not contain.
const CYCLE_FREE_CRATES: [(&str, &[&str]); 2] = [("wsbench", &BINARY_MODULES), ("server", &[])];

#[test]
fn members_of_one_folder_import_each_other_without_a_cycle() {
    // A member is a file or a whole subfolder, its mod.rs included; an import reaching into
    // a subfolder, or through a name the folder re-exports, counts as one of that member.
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let mut cycles = Vec::new();
    for (name, binary) in CYCLE_FREE_CRATES {
        let modules = module_graph::crate_modules(&crates.join(name).join("src"), binary);
        let graphs = module_graph::folder_graphs(&modules);
        cycles.extend(
            module_graph::cycles(&graphs).into_iter().map(|cycle| format!("crates/{name}/src/{cycle}")),
        );
    }
    assert!(cycles.is_empty(), "import cycles:\n{}", cycles.join("\n"));
}

#[test]
fn the_cycle_check_reads_folder_roots_and_imports_across_folders() {
    // The check sees what it looks for: dial/mod.rs imports conn, and the server's conn.rs
    // imports compression.rs.
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let wsbench = module_graph::folder_graphs(&module_graph::crate_modules(&src_dir(), &BINARY_MODULES));
    let engine = &wsbench[&vec!["engine".to_owned()]];
    assert!(engine["dial"].contains("conn"), "engine/dial/mod.rs → conn not seen: {engine:?}");
    let server = module_graph::folder_graphs(&module_graph::crate_modules(&crates.join("server/src"), &[]));
    assert!(server[&Vec::new()]["conn"].contains("compression"), "server conn → compression not seen");
}

#[test]
fn the_cycle_check_finds_a_cycle_through_a_folder_root_and_a_re_export() {
    // a.rs → b/ (through the name b/mod.rs re-exports from b/inner.rs) → c.rs → a.rs.
    let src = std::env::temp_dir().join(format!("wsbench-cycle-check-{}", std::process::id()));
    std::fs::create_dir_all(src.join("b")).unwrap();
    let files = [
        ("lib.rs", "//! root\nmod a;\nmod b;\nmod c;\n"),
        ("a.rs", "//! a\nuse crate::b::Inner;\n"),
        ("b/mod.rs", "//! b\nmod inner;\npub use inner::Inner;\n"),
        ("b/inner.rs", "//! inner\nuse crate::c::C;\npub struct Inner;\n"),
        ("c.rs", "//! c\npub struct C(super::a::A);\n"),
    ];
    for (path, text) in files {
        std::fs::write(src.join(path), text).unwrap();
    }
    let cycles = module_graph::cycles(&module_graph::folder_graphs(&module_graph::crate_modules(&src, &[])));
    std::fs::remove_dir_all(&src).unwrap();
    assert_eq!(cycles, [": a → b → c → a"]);
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
    for path in workspace_sources().into_iter().filter(|path| !is_unit_test_file(path)) {
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

/// Whether `path` is test code: a `tests.rs` (or `NAME_tests.rs`, the tests of `NAME.rs`
/// beside it) declared as `#[cfg(test)] mod tests;`.
fn is_unit_test_file(path: &Path) -> bool {
    path.file_name()
        .and_then(|name| name.to_str())
        .is_some_and(|name| name == "tests.rs" || name.ends_with("_tests.rs"))
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

/// Scenario names that the shared layers use as words of their own, and why. Such a name is
/// found by what only code reaching the scenario itself writes: its module path
/// (`scenario::NAME`), a comparison with its name (`== "NAME"`), or a type its folder declares
/// under its name (`StreamSpec`, `StreamSection`, …; not the bare `Stream`, a word of the live
/// layer too).
const EVERYDAY_NAMES: [(&str, &str); 1] =
    [("stream", "a WebSocket's byte stream, HTTP/2's streams and the --stream output say it")];

/// The types scenario `name`'s folder declares (`struct`, `enum`) whose names begin with its
/// own, but its bare name.
fn scenario_types(name: &str) -> Vec<String> {
    let mut capitalised = name.to_owned();
    capitalised[..1].make_ascii_uppercase();
    let mut types = Vec::new();
    for path in rust_files(&src_dir().join("scenario").join(name)) {
        let code = production_code(&path);
        for kind in ["struct ", "enum "] {
            for (at, _) in code.match_indices(kind) {
                let rest = &code[at + kind.len()..];
                let end = rest.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(rest.len());
                if rest[..end].starts_with(&capitalised) && rest[..end] != capitalised {
                    types.push(rest[..end].to_owned());
                }
            }
        }
    }
    types
}

/// Whether `code` names scenario (or member) `name`: as a whole word, or for an everyday
/// name as [`EVERYDAY_NAMES`] says.
fn names_scenario(code: &str, name: &str) -> bool {
    if !EVERYDAY_NAMES.iter().any(|(everyday, _)| *everyday == name) {
        return mentions(code, name) > 0;
    }
    code.contains(&format!("scenario::{name}"))
        || code.contains(&format!("== \"{name}\""))
        || scenario_types(name).iter().any(|kind| mentions(code, kind) > 0)
}

#[test]
fn everyday_scenario_names_are_found_by_their_paths_and_types() {
    let types = scenario_types("stream");
    assert!(types.iter().any(|kind| kind == "StreamSpec"), "{types:?}");
    assert!(!types.iter().any(|kind| kind == "Stream"), "{types:?}");
    assert!(names_scenario("use crate::scenario::stream::section::StreamSection;", "stream"));
    assert!(names_scenario("if load.scenario == \"stream\" {", "stream"));
    assert!(names_scenario("let spec: &StreamSpec = todo!();", "stream"));
    assert!(!names_scenario("let stream = ByteStream::Own(socket); live::stream::Stream::new();", "stream"));
    assert!(names_scenario("pubsub::figures", "pubsub") && !names_scenario("pubsubs", "pubsub"));
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
            if names_scenario(&code, name) {
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
    // a measurement or a search, directly or through another module.
    let reached = reachable_from("report");
    assert!(reached.contains("result"), "the import graph was not read: {reached:?}");
    for runner in ["session", "live", "compare", "find_rate"] {
        assert!(!reached.contains(runner), "report reaches `{runner}` (through {reached:?})");
    }
}

/// The shared layers: each reaches scenarios, protocols and transports through their
/// registries only, and their options through `members`.
const MEMBER_BLIND: [&str; 8] =
    ["config", "engine", "result", "report", "live", "merge", "session", "compare"];

/// What a shared layer still names, and why: (the layer, the word, the reason). Each must
/// still be found (else the exception goes), so the list cannot go stale.
const STILL_NAMED: [(&str, &str, &str); 9] = [
    // A header whose name says auth is a secret the result hides: the word, not Socket.IO's
    // `--auth`.
    ("config", "auth", "a secret header's name may say auth (config/handshake.rs)"),
    // WebSockets per TCP connection is the shape of every transport (1: one each): the
    // engine plans connections by it and result files record it under this key.
    ("config", "streams_per_connection", "the transport's shape, recorded in config.transport"),
    ("engine", "streams_per_connection", "the transport's shape the engine plans by"),
    ("result", "streams_per_connection", "a field of the result file's transport block"),
    ("report", "streams_per_connection", "the report's transport line"),
    // A word that jsonrpc's `--params` shares with a thing of the engine's own.
    ("config", "params", "permessage-deflate's parameters (`.params`), not jsonrpc's --params"),
    ("engine", "params", "permessage-deflate's parameters (`.params`), not jsonrpc's --params"),
    // A header whose name says password holds a secret, whatever protocol MQTT's shares it.
    ("config", "password", "a word that makes a header's value a secret"),
    // `--reconnect signalr` copies the SignalR client's automatic reconnect delays, whatever
    // protocol the connections speak.
    ("config", "signalr", "a --reconnect policy named after SignalR's client (config/reconnect.rs)"),
];

/// Whole-word mentions of a member's name: its identifiers and its strings alike.
fn names_member(code: &str, name: &str) -> bool {
    names_scenario(code, name)
}

/// Whether `code` names the option `word` (a flag, a TOML key, a field): as a string of its
/// own (`"qos"`), as a flag (`--qos`), as a field read (`.qos`, not the method call
/// `.retain(`) or declared (`pub qos:`). Everyday words (`hold`, `event`, `method`) are
/// otherwise free to use.
fn names_option(code: &str, word: &str) -> bool {
    let ident = |c: char| c.is_alphanumeric() || c == '_' || c == '-';
    let after = |at: usize, len: usize| code[at + len..].chars().next();
    let bounded = |at: usize, len: usize| !after(at, len).is_some_and(ident);
    let flag = format!("--{word}");
    let field = format!(".{word}");
    code.contains(&format!("\"{word}\""))
        || code.contains(&format!("pub {word}:"))
        || code.match_indices(flag.as_str()).any(|(at, _)| bounded(at, flag.len()))
        || code
            .match_indices(field.as_str())
            .any(|(at, _)| bounded(at, field.len()) && after(at, field.len()) != Some('('))
}

/// Every member's name (scenario folders, protocols but the default, transports by their
/// recorded names), read from the registries and folders.
fn member_names() -> Vec<String> {
    let mut names = scenario_names();
    for name in wsbench::protocol::names().into_iter().filter(|name| *name != wsbench::protocol::DEFAULT) {
        names.extend([name.to_owned(), name.replace('-', "_")]);
    }
    names.extend(wsbench::engine::dial::DIALS.iter().map(|dial| dial.name().to_owned()));
    names.sort();
    names.dedup();
    names
}

/// Every option a member declares (its flag, its key, the key as a field), and the names
/// `--transport` takes, read from the registries.
fn option_words() -> Vec<String> {
    let mut words: Vec<String> =
        wsbench::engine::dial::DIALS.iter().map(|dial| dial.flag_name().to_owned()).collect();
    for (option, _) in wsbench::members::declared() {
        words.extend([option.flag.to_owned(), option.key.to_owned(), option.key.replace('-', "_")]);
    }
    words.sort();
    words.dedup();
    words
}

#[test]
fn shared_layers_name_no_member_nor_an_option_of_one() {
    let (names, words) = (member_names(), option_words());
    assert!(names.len() >= 14 && words.len() >= 10, "the members were not found: {names:?} {words:?}");
    let mut found = Vec::new();
    let mut excepted = std::collections::BTreeSet::new();
    for (path, module) in library_files() {
        // The transports live in `engine/dial/`, their own folder.
        if !MEMBER_BLIND.contains(&module[0].as_str())
            || module.starts_with(&["engine".into(), "dial".into()])
        {
            continue;
        }
        let code = production_code(&path);
        let named = names.iter().filter(|name| names_member(&code, name));
        let optioned = words.iter().filter(|word| names_option(&code, word));
        for word in named.chain(optioned) {
            match STILL_NAMED.iter().find(|(layer, still, _)| *layer == module[0] && still == word) {
                Some((layer, still, _)) => _ = excepted.insert((*layer, *still)),
                None => found.push(format!("{} names `{word}`", path.display())),
            }
        }
    }
    assert!(found.is_empty(), "a member or its option named outside its folder:\n{}", found.join("\n"));
    for (layer, word, why) in STILL_NAMED {
        assert!(
            excepted.contains(&(layer, word)),
            "{layer} no longer names `{word}` ({why}): drop the exception"
        );
    }
}
