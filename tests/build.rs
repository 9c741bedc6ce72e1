//! Builds the hostile test policies (`tests/hostile-guest/`) as wasm32-wasip2
//! components and hands their paths to the tests as `HOSTILE_WASM`,
//! `BROKEN_WASM`, `OTHER_WORLD_WASM`, `WRONG_VERSION_WASM`, `CONTRARY_WASM`
//! and `LEGACY_WASM` (a policy of contract 0.1.0).
//!
//! Same scheme as `host/build.rs`: a nested cargo with its own target
//! directory, `<workspace target>/guest-wasm`, shared with the default guest
//! so the wasm dependencies are compiled once. The outer cargo holds the lock
//! on its own target directory; the nested one locks only `guest-wasm`.

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

const TARGET: &str = "wasm32-wasip2";

/// Each bin of the hostile crate and the variable that carries its path.
const BINS: [(&str, &str); 6] = [
    ("hostile", "HOSTILE_WASM"),
    ("broken", "BROKEN_WASM"),
    ("other-world", "OTHER_WORLD_WASM"),
    ("wrong-version", "WRONG_VERSION_WASM"),
    ("contrary", "CONTRARY_WASM"),
    ("legacy", "LEGACY_WASM"),
];

fn main() {
    let manifest_dir =
        PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let workspace = manifest_dir
        .parent()
        .expect("tests/ sits in the workspace")
        .to_path_buf();
    let out_dir = PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    for watched in [
        "tests/hostile-guest/src",
        "tests/hostile-guest/Cargo.toml",
        "tests/hostile-guest/wit-other",
        "tests/hostile-guest/wit-v1",
        "guest/src",
        "wit",
    ] {
        println!(
            "cargo:rerun-if-changed={}",
            workspace.join(watched).display()
        );
    }

    let guest_target = guest_target_dir(&out_dir, &workspace);
    let cargo = env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(&workspace)
        .args(["build", "--release", "-p", "nomos-hostile-guest", "--bins"])
        .args(["--target", TARGET])
        .arg("--target-dir")
        .arg(&guest_target);
    // Flags meant for the host build must not leak into the wasm build.
    for var in [
        "CARGO_ENCODED_RUSTFLAGS",
        "RUSTFLAGS",
        "RUSTC_WORKSPACE_WRAPPER",
        "RUSTC_WRAPPER",
        "CARGO_TARGET_DIR",
        "CARGO_BUILD_TARGET",
        "CARGO_LLVM_COV",
    ] {
        cmd.env_remove(var);
    }
    let status = cmd
        .status()
        .expect("failed to run cargo for the hostile guests");
    assert!(
        status.success(),
        "building the hostile guests for {TARGET} failed (is the {TARGET} target installed?)"
    );

    for (bin, var) in BINS {
        let built = guest_target
            .join(TARGET)
            .join("release")
            .join(format!("{bin}.wasm"));
        let copied = out_dir.join(format!("{bin}.wasm"));
        std::fs::copy(&built, &copied).unwrap_or_else(|e| panic!("copy {}: {e}", built.display()));
        println!("cargo:rustc-env={var}={}", copied.display());
    }
}

/// `<workspace target dir>/guest-wasm`, found from OUT_DIR
/// (`<target>/<profile>/build/<pkg>-<hash>/out`), or under OUT_DIR if the
/// layout is unexpected.
fn guest_target_dir(out_dir: &Path, workspace: &Path) -> PathBuf {
    let target_root = out_dir
        .ancestors()
        .nth(4)
        .filter(|p| p.starts_with(workspace) || p.join("CACHEDIR.TAG").exists());
    match target_root {
        Some(root) => root.join("guest-wasm"),
        None => out_dir.join("guest-wasm"),
    }
}
