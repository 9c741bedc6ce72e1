//! Stand-in on branch `peers` (the `webhook` branch's module replaces it):
//! the shared Python environment, built once per process by
//! `tests/python/venv.sh`.

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

/// The venv's python, or `None` (the caller skips) when it cannot be
/// built; under `CI=true` a venv that cannot be built fails the test.
pub fn python() -> Option<PathBuf> {
    static PYTHON: OnceLock<Option<PathBuf>> = OnceLock::new();
    PYTHON.get_or_init(build).clone()
}

fn build() -> Option<PathBuf> {
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let script = repo.join("tests/python/venv.sh");
    let why = match Command::new("bash").arg(&script).status() {
        Ok(status) if status.success() => {
            return Some(repo.join("target/python-venv/bin/python"));
        }
        Ok(status) => format!("{} exited {status}", script.display()),
        Err(e) => format!("run {}: {e}", script.display()),
    };
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!("the Python venv could not be built: {why}");
    }
    eprintln!("skipping: the Python venv could not be built: {why}");
    None
}
