//! The house stays as built: the layering rules of `ARCHITECTURE.md` ("Code map")
//! checked against the source, so a wire that runs the wrong way fails a
//! test instead of waiting for a reviewer.
//!
//! - storage knows nothing above it (no adapter, worker, API, policy);
//! - the policy sandbox knows no database and no deployment;
//! - the host meets the guest only through `wit/`: no dependency on the
//!   guest crate, in the manifest or in the code, and one `bindgen!`;
//! - the code map of `ARCHITECTURE.md` is the whole import graph;
//! - one assembly (`server`), and `main.rs` only parses arguments;
//! - the library's public surface is what its root re-exports;
//! - nothing cites a document outside the repository (and `seams`: no
//!   file or function over its length, every promise's test exists).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The workspace root (this crate sits in `tests/`).
pub(crate) fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ sits in the workspace")
        .to_path_buf()
}

/// Every `.rs` file under `dir`, recursively, sorted.
pub(crate) fn rust_files(dir: &Path) -> Vec<PathBuf> {
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
            "agent",
            "api",
            "worker",
            "policy",
            "deploy",
            "commands",
            "server",
            "clock",
            "signing",
            "classes",
            "console",
            "maintenance",
            "metrics",
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
            "store",
            "deploy",
            "worker",
            "api",
            "agent",
            "commands",
            "server",
            "classes",
            "console",
            "maintenance",
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

/// The top-level modules of `host/src` (a folder or a file), sorted.
fn top_level_modules() -> Vec<String> {
    let src = workspace().join("host/src");
    let mut out: Vec<String> = std::fs::read_dir(&src)
        .expect("host/src")
        .map(|e| e.expect("directory entry").path())
        .filter_map(|p| {
            let name = p.file_stem()?.to_str()?.to_owned();
            (p.is_dir() || p.extension().is_some_and(|e| e == "rs")).then_some(name)
        })
        .filter(|name| name != "lib" && name != "main")
        .collect();
    out.sort();
    out.dedup();
    out
}

/// What the module at `host/src/<module>` (folder or file) imports from its
/// siblings.
fn imports_of(module: &str) -> BTreeSet<String> {
    let src = workspace().join("host/src");
    let dir = src.join(module);
    let files = if dir.is_dir() {
        rust_files(&dir)
    } else {
        vec![src.join(format!("{module}.rs"))]
    };
    let mut found = BTreeSet::new();
    for file in files {
        let source = std::fs::read_to_string(&file).expect("readable source");
        found.extend(crate_modules(&source));
    }
    found.remove(module);
    found
}

/// The code map of `ARCHITECTURE.md`: each module and the modules it may
/// use, from the table headed `| module | owns | may use |`.
fn code_map() -> Vec<(String, BTreeSet<String>)> {
    let text =
        std::fs::read_to_string(workspace().join("ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    let names = |cell: &str| -> BTreeSet<String> {
        cell.split(',')
            .map(|n| n.trim().trim_matches('`').to_owned())
            .filter(|n| !n.is_empty() && n != "—")
            .collect()
    };
    let mut rows = Vec::new();
    let mut in_table = false;
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with("| module | owns | may use |") {
            in_table = true;
            continue;
        }
        if !in_table || line.starts_with("| ---") {
            continue;
        }
        if !line.starts_with('|') {
            break;
        }
        let cells: Vec<&str> = line.trim_matches('|').split('|').collect();
        assert_eq!(cells.len(), 3, "a code-map row has three cells: {line}");
        rows.push((
            cells[0].trim().trim_matches('`').to_owned(),
            names(cells[2]),
        ));
    }
    rows
}

/// `ARCHITECTURE.md` draws the whole import graph: one row per module of
/// `host/src`, and each row's "may use" is exactly what the module
/// imports. A new import either is allowed there, in review, or fails here.
#[test]
fn the_code_map_is_the_import_graph() {
    let map = code_map();
    let listed: Vec<String> = map.iter().map(|(m, _)| m.clone()).collect();
    let mut sorted = listed.clone();
    sorted.sort();
    assert_eq!(sorted, top_level_modules(), "the code map's modules");
    let wrong: Vec<String> = map
        .iter()
        .filter_map(|(module, allowed)| {
            let used = imports_of(module);
            (used != *allowed)
                .then(|| format!("{module}: imports {used:?}, the map says {allowed:?}"))
        })
        .collect();
    assert!(
        wrong.is_empty(),
        "ARCHITECTURE.md's code map is not the import graph:\n{}",
        wrong.join("\n")
    );
}

/// The library's public surface is what the crate root re-exports: every
/// other module is public only under `test-support` (the tests' view), and
/// the binary's `commands` is hidden from the docs.
#[test]
fn the_library_exports_what_its_root_lists() {
    let lib = std::fs::read_to_string(workspace().join("host/src/lib.rs")).expect("lib.rs");
    let lines: Vec<&str> = lib.lines().collect();
    let mut exported = BTreeSet::new();
    let mut open_modules = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let before = if i > 0 { lines[i - 1].trim() } else { "" };
        if let Some(module) = line.strip_prefix("pub mod ") {
            let module = module.trim_end_matches(';');
            let gated = before == "#[cfg(feature = \"test-support\")]";
            let hidden = before == "#[doc(hidden)]";
            if !gated && !hidden {
                open_modules.push(module.to_owned());
            }
            if hidden {
                exported.insert(format!("{module} (hidden)"));
            }
        }
    }
    // Each `pub use` statement, over as many lines as rustfmt gave it.
    for statement in lib.split(';') {
        let Some(at) = statement.find("\npub use ") else {
            continue;
        };
        let uses = statement[at + "\npub use ".len()..].replace('\n', " ");
        let (path, items) = uses
            .split_once("::{")
            .unwrap_or_else(|| uses.rsplit_once("::").expect("pub use a::b"));
        for item in items.trim_end_matches(['}', ' ']).split(',') {
            let item = item.trim();
            if !item.is_empty() {
                exported.insert(format!("{}::{}", path.trim(), item));
            }
        }
    }
    assert!(
        open_modules.is_empty(),
        "modules public without the feature: {open_modules:?}"
    );
    let expected: BTreeSet<String> = [
        "agent::async_trait",
        "agent::Agent",
        "agent::AgentError",
        "agent::Continuation",
        "agent::ExecutionReport",
        "agent::HistoryError",
        "agent::Notice",
        "agent::NotifyFormat",
        "agent::Operator",
        "agent::OperatorConfig",
        "agent::SecretError",
        "agent::WebhookSecret",
        "api::PushLimits",
        "api::Rate",
        "commands (hidden)",
        "intake::Intake",
        "intake::IntakeError",
        "intake::Linked",
        "intake::McpRecorded",
        "intake::PushConfiguration",
        "intake::Recorded",
        "intake::SessionPushConfiguration",
        "intake::TaskRegistered",
        "intake::TaskRegistration",
        "policy::Limits",
        "policy::Revision",
        "server::serve",
        "server::Insecure",
        "server::Running",
        "server::ServeConfig",
        "server::Server",
        "server::TlsError",
        "server::TlsFiles",
        "store::Backend",
        "store::Claim",
        "store::Database",
        "store::Delivery",
        "store::DeliveryKind",
        "store::DeliveryState",
        "store::Execution",
        "store::LinkOutcome",
        "store::LinkTask",
        "store::OperatorNotice",
        "store::Role",
        "store::Route",
        "store::StoreError",
        "store::TaskSource",
        "store::Turn",
        "store::Window",
        "telemetry::InvalidTraceparent",
        "telemetry::TraceContext",
        "worker::NotifyConfig",
        "worker::WorkerConfig",
    ]
    .into_iter()
    .map(String::from)
    .collect();
    assert_eq!(exported, expected, "the crate root's public items");
}

/// The rest of the layering rules: one `bindgen!` (the host's one view of
/// `wit/`), one assembly (the worker and the router are put together in
/// `server` only), and `main.rs` parses arguments and calls `commands`.
#[test]
fn one_bindgen_one_assembly_and_a_thin_main() {
    let src = workspace().join("host/src");
    let mut bindgens = Vec::new();
    let mut assemblies = Vec::new();
    for file in rust_files(&src) {
        let source = std::fs::read_to_string(&file).expect("readable source");
        let code: String = source
            .lines()
            .filter(|l| !l.trim_start().starts_with("//"))
            .collect::<Vec<_>>()
            .join("\n");
        if code.contains("bindgen!(") {
            bindgens.push(file.display().to_string());
        }
        let in_server = file.starts_with(src.join("server"));
        if !in_server && (code.contains("Worker::builder(") || code.contains("api::router(")) {
            assemblies.push(file.display().to_string());
        }
    }
    assert_eq!(bindgens.len(), 1, "one bindgen!: {bindgens:?}");
    assert!(
        assemblies.is_empty(),
        "assembled outside server: {assemblies:?}"
    );
    let main = std::fs::read_to_string(src.join("main.rs")).expect("main.rs");
    let library: BTreeSet<&str> = main
        .match_indices("nomos_continue::")
        .map(|(at, _)| {
            let rest = &main[at + "nomos_continue::".len()..];
            rest.split(|c: char| !c.is_alphanumeric() && c != '_')
                .next()
                .unwrap_or("")
        })
        .collect();
    assert_eq!(
        library,
        BTreeSet::from(["commands"]),
        "main.rs reaches past commands"
    );
}

/// No source file is a room of its own: ~500 lines at most.
/// The repository stands alone: nothing cites the original design
/// document, which a clone does not contain.
#[test]
fn nothing_cites_a_document_outside_the_repository() {
    let root = workspace();
    let mut found = Vec::new();
    let mut stack = vec![root.clone()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("readable directory") {
            let path = entry.expect("directory entry").path();
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if path.is_dir() {
                if !name.starts_with('.') && name != "target" && name != "node_modules" {
                    stack.push(path);
                }
                continue;
            }
            let text_like = ["rs", "md", "sql", "toml", "wit", "sh", "py", "js", "json"]
                .iter()
                .any(|e| path.extension().is_some_and(|x| x == *e));
            if !text_like || path.ends_with("tests/tests/service/house.rs") {
                continue;
            }
            let Ok(text) = std::fs::read_to_string(&path) else {
                continue;
            };
            if text.contains("DESIGN.md") {
                found.push(
                    path.strip_prefix(&root)
                        .unwrap_or(&path)
                        .display()
                        .to_string(),
                );
            }
        }
    }
    assert!(found.is_empty(), "cite DESIGN.md: {found:?}");
}
