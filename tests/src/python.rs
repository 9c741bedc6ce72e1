//! The tests' Python environment (`tests/python/venv.sh`), for checks made
//! the way a receiver in another language makes them: verifying webhook
//! signatures with the `standardwebhooks` package, and later the API with
//! schemathesis and a generated client.
//!
//! Why a script builds it rather than each test: the packages are fetched
//! once per machine (CI builds it beside the Rust build, and the tests find
//! it ready), and a test process asks for it at most once.
//!
//! Like PostgreSQL and the browser: outside CI a test that cannot have it
//! says why and is skipped; under `CI=true` that is a failure.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use crate::db::in_ci;

/// The scripts and requirements, in the repository.
pub fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("python")
}

/// The environment's interpreter, built (or found up to date) once per
/// test process. `None` (the test should return) when it cannot be built
/// outside CI; panics with the script's output under `CI=true`.
pub fn python() -> Option<PathBuf> {
    static PYTHON: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    match PYTHON.get_or_init(build) {
        Ok(python) => Some(python.clone()),
        Err(why) if in_ci() => panic!("CI=true but the Python environment is missing: {why}"),
        Err(why) => {
            eprintln!("skipped: no Python environment: {why}");
            None
        }
    }
}

fn build() -> Result<PathBuf, String> {
    crate::setup::run(&dir().join("venv.sh"))
}

/// Runs `tests/python/<script>` with the environment's interpreter, `input`
/// on its stdin, and returns its stdout; panics with its stderr if it
/// fails (the script's failure is the test's).
pub fn run(python: &Path, script: &str, input: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let path = dir().join(script);
    let mut child = Command::new(python)
        .arg(&path)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("run {}: {e}", path.display()));
    if let Some(mut stdin) = child.stdin.take() {
        stdin
            .write_all(input)
            .unwrap_or_else(|e| panic!("write to {}: {e}", path.display()));
    }
    let output = child
        .wait_with_output()
        .unwrap_or_else(|e| panic!("wait for {}: {e}", path.display()));
    assert!(
        output.status.success(),
        "{} exited {}:\n{}",
        path.display(),
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    output.stdout
}
