//! The house stays as built: the layering rules of `ARCHITECTURE.md` ("Code map")
//! checked against the source, so a wire that runs the wrong way fails a
//! test instead of waiting for a reviewer.
//!
//! - storage knows nothing above it (no adapter, worker, API, policy);
//! - the policy sandbox knows no database and no deployment;
//! - the host meets the guest only through `wit/`: no dependency on the
//!   guest crate, in the manifest or in the code.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The workspace root (this crate sits in `tests/`).
fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ sits in the workspace")
        .to_path_buf()
}

/// Every `.rs` file under `dir`, recursively, sorted.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display())) {
            let path = entry.expect("directory entry").path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// The top-level modules of the crate a source text names through
/// `crate::`, including those inside a `use crate::{a::X, b};` group.
/// Comment lines are skipped: a doc comment may name a neighbour.
fn crate_modules(source: &str) -> BTreeSet<String> {
    let code: String = source
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n");
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    };
    let mut found = BTreeSet::new();
    for (at, _) in code.match_indices("crate::") {
        let rest = code[at + "crate::".len()..].trim_start();
        if let Some(group) = rest.strip_prefix('{') {
            // Top-level names of the group: split on commas at depth 0.
            let mut depth = 0usize;
            let mut start = 0usize;
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => {
                        found.insert(ident(group[start..i].trim()));
                        break;
                    }
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        found.insert(ident(group[start..i].trim()));
                        start = i + 1;
                    }
                    _ => {}
                }
            }
        } else {
            found.insert(ident(rest));
        }
    }
    found.retain(|m| !m.is_empty());
    found
}

/// The files under `host/src/<layer>` that name one of `forbidden`.
fn violations(layer: &str, forbidden: &[&str]) -> Vec<String> {
    let dir = workspace().join("host/src").join(layer);
    let mut out = Vec::new();
    for file in rust_files(&dir) {
        let source = std::fs::read_to_string(&file).expect("readable source");
        for module in crate_modules(&source) {
            if forbidden.contains(&module.as_str()) {
                out.push(format!("{} uses crate::{module}", file.display()));
            }
        }
    }
    out
}

#[test]
fn the_scanner_sees_plain_paths_groups_and_skips_comments() {
    let source = "use crate::agent::Agent;\n\
                  use crate::{clock::Clock, store::{Store, Db}, metrics};\n\
                  // see crate::deploy\n\
                  fn f() { crate::worker::run(); }\n";
    let found: Vec<String> = crate_modules(source).into_iter().collect();
    assert_eq!(found, ["agent", "clock", "metrics", "store", "worker"]);
}

#[test]
fn storage_knows_nothing_above_it() {
    let found = violations(
        "store",
        &[
            "agent", "api", "worker", "policy", "deploy", "demo", "commands", "server", "clock",
            "signing",
        ],
    );
    assert!(
        found.is_empty(),
        "storage imports a layer above it:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_sandbox_knows_no_database() {
    let found = violations(
        "policy",
        &[
            "store", "deploy", "worker", "api", "agent", "demo", "commands", "server",
        ],
    );
    assert!(
        found.is_empty(),
        "the policy sandbox imports:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_host_meets_the_guest_only_through_wit() {
    let manifest = std::fs::read_to_string(workspace().join("host/Cargo.toml")).expect("manifest");
    let deps: Vec<&str> = manifest
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("nomos-policy-default"))
        .collect();
    assert!(
        deps.is_empty(),
        "host/Cargo.toml depends on the guest crate: {deps:?}"
    );
    let dirs = ["host/src", "host/benches", "host/examples"];
    let mut found = Vec::new();
    for dir in dirs {
        for file in rust_files(&workspace().join(dir)) {
            let source = std::fs::read_to_string(&file).expect("readable source");
            if source.contains("nomos_policy_default") {
                found.push(file.display().to_string());
            }
        }
    }
    assert!(
        found.is_empty(),
        "host code names the guest crate:\n{}",
        found.join("\n")
    );
}
