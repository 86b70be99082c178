//! The competitor fleet: real WebSocket servers under `servers/`, each a folder with a tiny
//! echo server and a `server.toml` manifest (how to install it from its registry, how to
//! start it). This module reads the manifests, tells what is installed, runs the install
//! steps, and starts and stops a server for `wsbench compare`. The built-in server is the
//! fleet's first member and is always installed; [`front`] puts HAProxy before a server
//! that speaks only HTTP/1.1 when a comparison runs over HTTP/2.

pub mod front;
mod process;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde::Deserialize;
use wsbench_supervisor::Launch;

pub use process::{FleetServer, StartError};

/// The built-in server's name in `--servers` lists and tables.
pub const BUILTIN: &str = "builtin";

/// A server started for a comparison row over a transport that is always TLS (QUIC) finds
/// the certificate chain and key `compare` made for it, as PEM files, in these environment
/// variables, and serves that transport with them: the client trusts that certificate alone.
pub const TLS_CERT_ENV: &str = "WSBENCH_TLS_CERT";
/// See [`TLS_CERT_ENV`].
pub const TLS_KEY_ENV: &str = "WSBENCH_TLS_KEY";

#[derive(Debug, thiserror::Error)]
pub enum FleetError {
    #[error("cannot read the fleet in {dir} (run wsbench from the repository, or give --fleet-dir)")]
    ReadDir {
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: {message}")]
    Manifest { path: PathBuf, message: String },
    #[error("unknown server `{name}`: known servers are {known}")]
    Unknown { name: String, known: String },
    #[error("fleet install {name}: {tool} is not installed ({hint})")]
    MissingTool { name: String, tool: String, hint: String },
    #[error("fleet install {name}: step {step} of {steps} (`{command}`) failed: {status}")]
    StepFailed { name: String, step: usize, steps: usize, command: String, status: String },
    /// Every failed install's error, joined; the other servers were installed.
    #[error("{0}; the other servers are installed")]
    InstallsFailed(String),
}

/// One `servers/NAME/server.toml`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    pub name: String,
    pub language: String,
    pub library: String,
    pub version: String,
    pub description: String,
    /// Executables that must be on PATH to install and run it.
    pub requires: Vec<String>,
    /// Shell commands run in order, with the folder as working directory.
    pub install: Vec<String>,
    /// Shell command that exits 0 when the server is installed.
    pub installed: String,
    /// Shell command starting the server; `{port}` is replaced.
    pub start: String,
    pub threads: u32,
    /// Answers a plain HTTP GET with 200.
    pub http: bool,
    /// A WebSocket server (false for the HTTP-only baseline, nginx).
    #[serde(default = "yes")]
    pub websocket: bool,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Supports permessage-deflate (RFC 7692). A compressed run (`--compression`) starts it
    /// with `WSBENCH_DEFLATE=1` in its environment, which its program reads to turn
    /// compression on; without it the server keeps its default (off) for the plain echo rows.
    #[serde(default)]
    pub deflate: bool,
    /// The transports it serves itself besides the default one, by their names in the
    /// registry (`engine::dial`; e.g. `["http2"]`: RFC 8441, h2c with prior knowledge on its
    /// port; `["http3"]`: RFC 9220 on the UDP port of its port's number, with the certificate
    /// of [`TLS_CERT_ENV`] when that is set); `compare --transport` puts an HAProxy front
    /// before a server without HTTP/2, and skips one without HTTP/3 (HAProxy cannot front it).
    #[serde(default)]
    pub transports: Vec<String>,
    /// Speaks the pub/sub protocol of docs/protocols.md when started with `WSBENCH_PUBSUB=1`
    /// in its environment (its echo default is unchanged without it).
    #[serde(default)]
    pub pubsub: bool,
    /// The message protocols it speaks (`--protocol`): `["raw"]` unless it says otherwise
    /// (a broker: `["mqtt"]`). A run in another protocol skips it with a row saying so.
    #[serde(default = "raw_only")]
    pub protocols: Vec<String>,
    /// The URL path of each protocol where it is not `/` (NATS: `mqtt = "/mqtt"`).
    #[serde(default)]
    pub paths: BTreeMap<String, String>,
    /// The folder the manifest came from (not in the file).
    #[serde(skip)]
    pub dir: PathBuf,
}

fn yes() -> bool {
    true
}

fn raw_only() -> Vec<String> {
    vec![crate::protocol::DEFAULT.to_owned()]
}

impl Manifest {
    /// Whether the manifest says the server has the capability named `key` (the manifest
    /// key that says so: `deflate`, `pubsub`).
    pub fn offers(&self, key: &str) -> bool {
        match key {
            "deflate" => self.deflate,
            "pubsub" => self.pubsub,
            _ => false,
        }
    }

    /// Whether it speaks message protocol `protocol`.
    pub fn speaks(&self, protocol: &str) -> bool {
        self.protocols.iter().any(|spoken| spoken == protocol)
    }

    /// Whether it serves the transport `name` (a name of the registry) itself; every server
    /// serves the registry's first.
    pub fn serves_transport(&self, name: &str) -> bool {
        name == crate::engine::dial::DIALS[0].name() || self.transports.iter().any(|served| served == name)
    }

    /// The URL path a run in `protocol` requests.
    pub fn path(&self, protocol: &str) -> &str {
        self.paths.get(protocol).map_or("/", String::as_str)
    }
}

/// Where `servers/` is: `--fleet-dir`, else `./servers`, else next to the source tree.
pub fn default_dir() -> PathBuf {
    let here = PathBuf::from("servers");
    if here.is_dir() {
        return here;
    }
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../servers")
}

/// Every manifest under `dir`, sorted by name, after the built-in server.
pub fn load(dir: &Path) -> Result<Vec<Manifest>, FleetError> {
    let entries =
        std::fs::read_dir(dir).map_err(|source| FleetError::ReadDir { dir: dir.to_owned(), source })?;
    let mut fleet = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path().join("server.toml");
        if !path.is_file() {
            continue;
        }
        let text = std::fs::read_to_string(&path)
            .map_err(|e| FleetError::Manifest { path: path.clone(), message: e.to_string() })?;
        let mut manifest: Manifest = toml::from_str(&text)
            .map_err(|e| FleetError::Manifest { path: path.clone(), message: e.message().to_owned() })?;
        let folder = entry.file_name().to_string_lossy().into_owned();
        if manifest.name != folder {
            return Err(FleetError::Manifest {
                path,
                message: format!("name `{}` differs from its folder `{folder}`", manifest.name),
            });
        }
        if !manifest.start.contains("{port}") {
            return Err(FleetError::Manifest { path, message: "`start` has no {port} placeholder".into() });
        }
        let named = manifest.protocols.iter().chain(manifest.paths.keys());
        if let Some(unknown) = named.into_iter().find(|name| crate::protocol::by_name(name).is_none()) {
            let message = format!(
                "protocol `{unknown}` is not one wsbench speaks: use {}",
                crate::protocol::names().join(", ")
            );
            return Err(FleetError::Manifest { path, message });
        }
        let dials = crate::engine::dial::DIALS;
        if let Some(unknown) =
            manifest.transports.iter().find(|name| crate::engine::dial::by_name(name).is_none())
        {
            let known: Vec<&str> = dials.iter().map(|dial| dial.name()).collect();
            let message = format!("transport `{unknown}` is not one wsbench opens: use {}", known.join(", "));
            return Err(FleetError::Manifest { path, message });
        }
        manifest.dir = entry.path();
        fleet.push(manifest);
    }
    fleet.sort_by(|a, b| a.name.cmp(&b.name));
    fleet.insert(0, builtin());
    Ok(fleet)
}

/// The built-in server as a fleet member: this very binary.
pub fn builtin() -> Manifest {
    let exe = std::env::current_exe().map(|p| p.display().to_string()).unwrap_or_else(|_| "wsbench".into());
    Manifest {
        name: BUILTIN.into(),
        language: "Rust".into(),
        library: "wsbench-server".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        description: "wsbench's own echo server".into(),
        requires: Vec::new(),
        install: Vec::new(),
        installed: "true".into(),
        // `WSBENCH_PUBSUB=1` (compare's pubsub rows) adds `--pubsub`; a certificate (a row
        // over HTTP/3) makes it serve wss and HTTP/3 with it.
        start: format!(
            "exec '{exe}' serve --port {{port}} ${{WSBENCH_PUBSUB:+--pubsub}} \
             ${{{TLS_CERT_ENV}:+--h3 --cert \"${TLS_CERT_ENV}\" --key \"${TLS_KEY_ENV}\"}}"
        ),
        threads: 1,
        http: true,
        websocket: true,
        env: BTreeMap::new(),
        transports: crate::engine::dial::DIALS[1..].iter().map(|dial| dial.name().to_owned()).collect(),
        deflate: true,
        pubsub: true,
        protocols: raw_only(),
        paths: BTreeMap::new(),
        dir: std::env::temp_dir(),
    }
}

/// Picks servers by name: `all` means every WebSocket server of the fleet.
pub fn select<'a>(fleet: &'a [Manifest], names: &[String]) -> Result<Vec<&'a Manifest>, FleetError> {
    if names.iter().any(|n| n == "all") {
        return Ok(fleet.iter().filter(|m| m.websocket).collect());
    }
    names
        .iter()
        .map(|name| {
            fleet.iter().find(|m| &m.name == name).ok_or_else(|| FleetError::Unknown {
                name: name.clone(),
                known: fleet.iter().map(|m| m.name.as_str()).collect::<Vec<_>>().join(", "),
            })
        })
        .collect()
}

/// Whether an executable is on PATH.
pub fn on_path(tool: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(tool).is_file()))
}

/// What is missing to run a server, if anything.
pub fn missing_tools(manifest: &Manifest) -> Vec<&str> {
    manifest.requires.iter().map(String::as_str).filter(|tool| !on_path(tool)).collect()
}

/// How long a manifest's `installed` check may take.
const CHECK_TIMEOUT: Duration = Duration::from_secs(60);
/// How long one install step may take (a release build of a Rust or Java server on a busy
/// 2-core machine takes minutes; a hung download must not block `fleet install` forever).
const STEP_TIMEOUT: Duration = Duration::from_secs(3600);

/// `sh -c COMMAND` in `dir`, in the foreground: a terminal's Ctrl-C reaches it as it
/// reaches wsbench.
fn shell(name: String, command: &str, dir: &Path) -> Launch {
    let mut shell = Launch::shell(name, command).foreground();
    shell.command_mut().current_dir(dir).stdin(Stdio::null());
    shell
}

/// Whether the manifest's `installed` check passes.
pub fn is_installed(manifest: &Manifest) -> bool {
    if !missing_tools(manifest).is_empty() {
        return false;
    }
    let mut check =
        shell(format!("the `installed` check of {}", manifest.name), &manifest.installed, &manifest.dir);
    check.command_mut().stdout(Stdio::null()).stderr(Stdio::null());
    check.run_to_completion(CHECK_TIMEOUT).is_ok_and(|s| s.success())
}

/// The table of `wsbench fleet list`: name, language, library, version, status.
pub fn list_table(servers: &[Manifest]) -> String {
    let mut text = format!("{:<24} {:<11} {:<22} {:<16} status\n", "name", "language", "library", "version");
    for manifest in servers {
        text.push_str(&status_line(manifest));
        text.push('\n');
    }
    text
}

/// Installs the named servers (none named: every manifest, the HTTP-only baseline nginx
/// included), going on past a failure; the error names every server that failed.
pub fn install_all(
    servers: &[Manifest],
    names: &[String],
    force: bool,
    log: &mut dyn FnMut(&str),
) -> Result<(), FleetError> {
    let selected = if names.is_empty() { servers.iter().collect() } else { select(servers, names)? };
    let mut failed = Vec::new();
    for manifest in selected {
        if let Err(error) = install(manifest, force, log) {
            failed.push(crate::causes::with_causes(&error));
        }
    }
    if failed.is_empty() { Ok(()) } else { Err(FleetError::InstallsFailed(failed.join("; "))) }
}

/// A line of `wsbench fleet list`.
pub fn status_line(manifest: &Manifest) -> String {
    let status = match missing_tools(manifest).as_slice() {
        [] if is_installed(manifest) => "installed".to_owned(),
        [] => "not installed (wsbench fleet install NAME)".to_owned(),
        missing => format!("unavailable: needs {}", missing.join(", ")),
    };
    format!(
        "{:<24} {:<11} {:<22} {:<16} {status}",
        manifest.name, manifest.language, manifest.library, manifest.version
    )
}

/// Runs the install steps of a server that is not installed yet (all of them with
/// `force`), printing each step; errors name the failing step.
pub fn install(manifest: &Manifest, force: bool, log: &mut dyn FnMut(&str)) -> Result<(), FleetError> {
    if let Some(tool) = missing_tools(manifest).first() {
        return Err(FleetError::MissingTool {
            name: manifest.name.clone(),
            tool: (*tool).to_owned(),
            hint: format!("install {tool} first; the manifest needs {}", manifest.requires.join(", ")),
        });
    }
    if !force && is_installed(manifest) {
        log(&format!("{}: already installed", manifest.name));
        return Ok(());
    }
    let steps = manifest.install.len();
    for (i, step) in manifest.install.iter().enumerate() {
        log(&format!("{}: [{}/{steps}] {step}", manifest.name, i + 1));
        let name = format!("fleet install {}: step {}", manifest.name, i + 1);
        let failure = match shell(name, step, &manifest.dir).run_to_completion(STEP_TIMEOUT) {
            Ok(status) if status.success() => continue,
            Ok(status) => status.to_string(),
            Err(error) => crate::causes::with_causes(&error),
        };
        return Err(FleetError::StepFailed {
            name: manifest.name.clone(),
            step: i + 1,
            steps,
            command: step.clone(),
            status: failure,
        });
    }
    if !is_installed(manifest) {
        return Err(FleetError::StepFailed {
            name: manifest.name.clone(),
            step: steps,
            steps,
            command: manifest.installed.clone(),
            status: "the install steps succeeded but the `installed` check still fails".into(),
        });
    }
    log(&format!("{}: installed", manifest.name));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write_manifest(root: &Path, name: &str, body: &str) {
        std::fs::create_dir_all(root.join(name)).unwrap();
        std::fs::write(root.join(name).join("server.toml"), body).unwrap();
    }

    fn manifest_text(name: &str, installed: &str, install: &str) -> String {
        format!(
            "name = \"{name}\"\nlanguage = \"C\"\nlibrary = \"x\"\nversion = \"1\"\ndescription = \"d\"\n\
             requires = [\"sh\"]\ninstall = [{install}]\ninstalled = \"{installed}\"\nstart = \"echo {{port}}\"\n\
             threads = 1\nhttp = false\n"
        )
    }

    #[test]
    fn loads_manifests_after_the_builtin_server() {
        let dir = std::env::temp_dir().join(format!("wsbench-fleet-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        write_manifest(&dir, "zeta", &manifest_text("zeta", "true", ""));
        write_manifest(&dir, "alpha", &manifest_text("alpha", "test -f done", "\"touch done\""));
        let fleet = load(&dir).unwrap();
        let names: Vec<&str> = fleet.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(names, ["builtin", "alpha", "zeta"]);
        assert!(!is_installed(&fleet[1]));
        install(&fleet[1], false, &mut |_| {}).unwrap();
        assert!(is_installed(&fleet[1]));
        assert!(select(&fleet, &["nope".into()]).unwrap_err().to_string().contains("alpha"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_failing_step_is_named() {
        let dir = std::env::temp_dir().join(format!("wsbench-fleet-fail-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        write_manifest(&dir, "broken", &manifest_text("broken", "false", "\"true\", \"exit 3\""));
        let fleet = load(&dir).unwrap();
        let error = install(&fleet[1], false, &mut |_| {}).unwrap_err().to_string();
        assert!(error.contains("step 2 of 2 (`exit 3`)"), "{error}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn bad_manifests_are_refused_with_the_file_named() {
        let dir = std::env::temp_dir().join(format!("wsbench-fleet-bad-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        write_manifest(&dir, "typo", &manifest_text("typo", "true", "").replace("threads", "thread"));
        let error = load(&dir).unwrap_err().to_string();
        assert!(error.contains("server.toml") && error.contains("thread"), "{error}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_repository_fleet_parses() {
        let fleet = load(&default_dir()).unwrap();
        assert!(fleet.len() > 1, "servers/ has manifests");
    }

    #[test]
    fn the_fleet_pubsub_servers_are_flagged() {
        let fleet = load(&default_dir()).unwrap();
        let pubsub: Vec<&str> = fleet.iter().filter(|m| m.pubsub).map(|m| m.name.as_str()).collect();
        assert_eq!(pubsub, ["builtin", "bun", "go-gorilla", "node-ws", "python-websockets"]);
    }
}
