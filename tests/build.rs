//! Builds the hostile test policies (`tests/hostile-guest/`) as wasm32-wasip2
//! components and hands their paths to the tests as `HOSTILE_WASM`,
//! `BROKEN_WASM`, `OTHER_WORLD_WASM`, `WRONG_VERSION_WASM`, `CONTRARY_WASM`
//! and `LEGACY_WASM` (a policy of contract 0.1.0).
//!
//! The same guest build as `host/build.rs` (`host/build_guest.rs`).

use std::env;
use std::path::PathBuf;

#[path = "../host/build_guest.rs"]
mod guest;

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
        "host/build_guest.rs",
    ] {
        println!(
            "cargo:rerun-if-changed={}",
            workspace.join(watched).display()
        );
    }

    let release = guest::build(
        &workspace,
        &out_dir,
        &["-p", "nomos-hostile-guest", "--bins"],
        "the hostile guests",
    );
    for (bin, var) in BINS {
        let built = release.join(format!("{bin}.wasm"));
        let copied = out_dir.join(format!("{bin}.wasm"));
        std::fs::copy(&built, &copied).unwrap_or_else(|e| panic!("copy {}: {e}", built.display()));
        println!("cargo:rustc-env={var}={}", copied.display());
    }
}
