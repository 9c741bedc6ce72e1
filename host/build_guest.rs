//! The wasm32-wasip2 guest build that `host/build.rs` (the built-in policy)
//! and `tests/build.rs` (the hostile test policies) both run: a nested
//! cargo with its own target directory, `<workspace target>/guest-wasm`,
//! shared by both so the wasm dependencies are compiled once. The outer
//! cargo holds the lock on its own target directory; the nested one locks
//! only `guest-wasm`. Included by each build script with `#[path]`.

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The guests' target.
pub const TARGET: &str = "wasm32-wasip2";

/// Runs `cargo build --release --target wasm32-wasip2 <args>` in
/// `workspace` and answers the directory the `.wasm` files are in; panics
/// with `what` in the message if the build fails.
pub fn build(workspace: &Path, out_dir: &Path, args: &[&str], what: &str) -> PathBuf {
    ensure_target_installed();
    let guest_target = guest_target_dir(out_dir, workspace);
    let cargo = env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(workspace)
        .args(["build", "--release"])
        .args(args)
        .args(["--target", TARGET])
        .arg("--target-dir")
        .arg(&guest_target);
    // Flags meant for the host build (clippy's wrapper, coverage or
    // sanitizer flags) must not leak into the wasm build.
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
        .unwrap_or_else(|e| panic!("failed to run cargo for {what}: {e}"));
    assert!(status.success(), "building {what} for {TARGET} failed");
    guest_target.join(TARGET).join("release")
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

/// rustup adds the targets of `rust-toolchain.toml` only when it installs the
/// toolchain; on a machine that already had 1.95 the wasm target is missing,
/// so add it here rather than fail with "can't find crate for `std`".
fn ensure_target_installed() {
    let rustc = env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let sysroot = Command::new(rustc)
        .args(["--print", "sysroot"])
        .output()
        .ok()
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()));
    let installed = sysroot.is_some_and(|root| root.join("lib/rustlib").join(TARGET).exists());
    if installed {
        return;
    }
    println!(
        "cargo:warning=adding the {TARGET} target with rustup (listed in rust-toolchain.toml)"
    );
    let mut cmd = Command::new("rustup");
    cmd.args(["target", "add", TARGET]);
    if let Ok(toolchain) = env::var("RUSTUP_TOOLCHAIN") {
        cmd.args(["--toolchain", &toolchain]);
    }
    match cmd.status() {
        Ok(s) if s.success() => {}
        _ => panic!("the {TARGET} target is missing; run `rustup target add {TARGET}`"),
    }
}
