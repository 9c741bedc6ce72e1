//! Builds the default policy guest (`guest/`) as a wasm32-wasip2 component,
//! so `cargo build`, `cargo run` and `cargo test` need no hand-run step.
//!
//! The guest is built by a nested cargo with its own target directory (next
//! to the workspace's), as wasmtime's test-programs do: the outer cargo holds
//! the lock on its own target directory, and a separate directory keeps the
//! wasm build incremental across debug, release and clippy runs. The path of
//! the component is handed to the crate as `NOMOS_BUILTIN_POLICY`.
//!
//! It also writes two Rust files into OUT_DIR for the crate to include: the
//! list of migrations (`migrations.rs`, see [`embed_migrations`]) and the
//! golden `decide` inputs (`golden_decide.rs`).

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

#[path = "build_guest.rs"]
mod guest;

/// Hands the crate the commit it is built from as `NOMOS_CONTINUE_COMMIT`
/// (for `nomos_continue_build_info`): `git rev-parse`'s short hash, or
/// `unknown` outside a git checkout (a source tarball, a vendored crate).
/// Rebuilt when `HEAD` or the branch it names moves, so it is never stale.
fn embed_commit(workspace: &Path) {
    let git = |args: &[&str]| {
        Command::new("git")
            .current_dir(workspace)
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
            .filter(|text| !text.is_empty())
    };
    let commit = git(&["rev-parse", "--short=12", "HEAD"]).unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=NOMOS_CONTINUE_COMMIT={commit}");
    let mut watched = vec![
        git(&["rev-parse", "--git-path", "HEAD"]),
        git(&["rev-parse", "--git-path", "packed-refs"]),
    ];
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
        watched.push(git(&["rev-parse", "--git-path", &branch]));
    }
    // A path that does not exist would make cargo rerun this every build.
    for path in watched.into_iter().flatten() {
        let path = workspace.join(path);
        if path.exists() {
            println!("cargo:rerun-if-changed={}", path.display());
        }
    }
}

fn main() {
    let manifest_dir =
        PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let workspace = manifest_dir
        .parent()
        .expect("host/ sits in the workspace")
        .to_path_buf();
    let out_dir = PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    embed_migrations(&workspace, &out_dir);
    embed_commit(&workspace);
    for watched in [
        "guest/src",
        "guest/Cargo.toml",
        "wit",
        "host/build_guest.rs",
    ] {
        println!(
            "cargo:rerun-if-changed={}",
            workspace.join(watched).display()
        );
    }

    let built = guest::build(
        &workspace,
        &out_dir,
        &["-p", "nomos-policy-default", "--bin", "policy"],
        "the policy guest",
    )
    .join("policy.wasm");
    let copied = out_dir.join("policy.wasm");
    std::fs::copy(&built, &copied).unwrap_or_else(|e| panic!("copy {}: {e}", built.display()));
    println!("cargo:rustc-env=NOMOS_BUILTIN_POLICY={}", copied.display());
    embed_golden_inputs(&workspace, &out_dir);
}

/// The backends, each with its folder under `migrations/`, in the order
/// `migrations.rs` lists them.
const MIGRATION_DIRS: [(&str, &str); 2] = [("POSTGRES", "postgres"), ("SQLITE", "sqlite")];

/// Writes `migrations.rs`: for each backend a `&[Embedded]` constant
/// (`POSTGRES`, `SQLITE`; the struct is `host/src/store/migrate`'s) with
/// every migration file of its folder, named as sqlx names them:
/// `<version>_<description>.up.sql` / `.down.sql`, the description with `_`
/// read as a space, and a file whose first line is `-- no-transaction` run
/// outside a transaction. The text is `include_str!`ed, so the checksum the
/// store computes from it is the one `sqlx migrate` records.
fn embed_migrations(workspace: &Path, out_dir: &Path) {
    let mut code = String::new();
    for (name, folder) in MIGRATION_DIRS {
        let dir = workspace.join("migrations").join(folder);
        // A directory: cargo reruns this script when a file in it is added,
        // removed or changed.
        println!("cargo:rerun-if-changed={}", dir.display());
        let mut files: Vec<(i64, bool, String)> = Vec::new();
        let mut lines = Vec::new();
        for path in std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
            .filter_map(|entry| entry.ok().map(|e| e.path()))
            .filter(|p| p.is_file())
        {
            let file = path
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or_else(|| panic!("{}: not a UTF-8 name", path.display()));
            let Some((version, rest)) = file.split_once('_') else {
                continue;
            };
            // As sqlx: a file that does not end in `.sql` is not a migration.
            if !rest.ends_with(".sql") {
                continue;
            }
            let (description, up) = if let Some(d) = rest.strip_suffix(".up.sql") {
                (d, true)
            } else if let Some(d) = rest.strip_suffix(".down.sql") {
                (d, false)
            } else {
                panic!(
                    "{}: every migration is reversible (.up.sql and .down.sql)",
                    path.display()
                );
            };
            let version: i64 = version
                .parse()
                .unwrap_or_else(|e| panic!("{}: version {version:?}: {e}", path.display()));
            let sql = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
            let kind = if up { "ReversibleUp" } else { "ReversibleDown" };
            files.push((version, up, file.to_owned()));
            lines.push((
                (version, !up),
                format!(
                    "    Embedded {{ version: {version}, description: {:?}, \
                     kind: sqlx::migrate::MigrationType::{kind}, sql: include_str!({:?}), \
                     no_tx: {} }},\n",
                    description.replace('_', " "),
                    path.display().to_string(),
                    sql.starts_with("-- no-transaction"),
                ),
            ));
        }
        for (version, up, file) in &files {
            let pair = files.iter().any(|(v, u, _)| v == version && u != up);
            assert!(
                pair,
                "{folder}/{file} has no {} script",
                if *up { "down" } else { "up" }
            );
        }
        lines.sort();
        code.push_str(&format!("pub(super) const {name}: &[Embedded] = &[\n"));
        code.extend(lines.into_iter().map(|(_, line)| line));
        code.push_str("];\n");
    }
    let out = out_dir.join("migrations.rs");
    std::fs::write(&out, code).unwrap_or_else(|e| panic!("write {}: {e}", out.display()));
}

/// Writes `golden_decide.rs`: the name and input of every golden `decide`
/// case with an expected answer, which the console's playground offers as
/// inputs to start from (the contract's own examples, so they stay true).
fn embed_golden_inputs(workspace: &Path, out_dir: &Path) {
    let dir = workspace.join("tests").join("golden").join("decide");
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut cases: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "in") && p.with_extension("out").exists())
        .collect();
    cases.sort();
    let mut code = String::from("&[\n");
    for case in cases {
        let name = case
            .file_stem()
            .and_then(|n| n.to_str())
            .expect("golden case names are UTF-8");
        code.push_str(&format!(
            "    ({name:?}, include_str!({:?})),\n",
            case.display().to_string()
        ));
    }
    code.push_str("]\n");
    let out = out_dir.join("golden_decide.rs");
    std::fs::write(&out, code).unwrap_or_else(|e| panic!("write {}: {e}", out.display()));
}
