//! What the protocols' compare tests share: a fleet folder of one repository member in
//! several variants (its manifest with one setting changed, its files copied or linked), and
//! `compare --protocol P` over it beside the built-in server, every variant measured cleanly
//! and the built-in server skipped for not speaking P.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::harness::{arg, errors, read_result, repo_root, summary_of, uint};

/// One variant of a fleet member: its name, and the manifest text replaced (`from` → `to`).
pub struct Variant<'a> {
    pub name: &'a str,
    pub from: &'a str,
    pub to: &'a str,
}

/// `scratch/fleet`, holding `servers/MEMBER` as each variant: its `files` copied, `links`
/// (name, target) linked, its manifest renamed and changed.
pub fn fleet_of(
    scratch: &Path,
    member: &str,
    files: &[&str],
    links: &[(&str, &Path)],
    variants: &[Variant<'_>],
) -> PathBuf {
    let fleet = scratch.join("fleet");
    let source = repo_root().join("servers").join(member);
    for variant in variants {
        let dir = fleet.join(variant.name);
        std::fs::create_dir_all(&dir).unwrap();
        for file in files {
            std::fs::copy(source.join(file), dir.join(file)).unwrap();
        }
        for (name, target) in links {
            std::os::unix::fs::symlink(target, dir.join(name)).unwrap();
        }
        let manifest = std::fs::read_to_string(source.join("server.toml")).unwrap();
        let manifest = manifest
            .replace(&format!("name = \"{member}\""), &format!("name = \"{}\"", variant.name))
            .replace(variant.from, variant.to);
        std::fs::write(dir.join("server.toml"), manifest).unwrap();
    }
    fleet
}

/// `compare --protocol PROTOCOL` of 50 connections over `builtin` and `members` of `fleet`,
/// results in `out`: it exits 0, the built-in server's row says it does not speak the
/// protocol, and each member's run opened every connection and echoed with no error.
pub fn assert_compare_measures(fleet: &Path, out: &Path, protocol: &str, members: &[&str]) {
    let servers = format!("builtin,{}", members.join(","));
    let load = "--connections 50 --warmup 0s --duration 2s --connect-timeout 30s";
    let mut args = vec!["compare", "--protocol", protocol, "--servers", &servers];
    args.extend(["--fleet-dir", arg(fleet), "--out", arg(out)]);
    args.extend(load.split_whitespace());
    let finished = crate::harness::wsbench(&args, Duration::from_secs(240));
    assert_eq!(finished.code, Some(0), "{}", finished.describe());
    let row = |name: &str| {
        let row = finished.stdout.lines().find(|line| line.starts_with(&format!("{name} ")));
        row.unwrap_or_else(|| panic!("no row for {name}\n{}", finished.describe())).to_owned()
    };
    let skipped = format!("skipped: does not speak --protocol {protocol}");
    assert!(row("builtin").contains(&skipped), "{}", finished.describe());
    for name in members {
        assert!(row(name).contains("50/50"), "{}", finished.describe());
        let result = read_result(&out.join(format!("{name}-1.json")));
        assert_eq!(result["config"]["protocol"], protocol, "{}", finished.describe());
        assert_eq!(errors(&result), BTreeMap::new(), "{name}: {}", summary_of(&result));
        assert!(uint(&result, "/summary/latency_us/count") > 50, "{name}: {}", summary_of(&result));
    }
}
