//! The tests' Python environments (`tests/python/venv.sh`), for checks made
//! the way a receiver in another language makes them: verifying webhook
//! signatures with the `standardwebhooks` package, the API with
//! schemathesis and a generated client, and the protocols against the real
//! SDKs' peers (`a2a-sdk`, `mcp`). The main one ([`python`]) holds all
//! that can share one environment; a named one ([`Venv::A2a03`]) holds an
//! SDK release that cannot.
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

/// A Python environment of the tests: its name is the argument of
/// `venv.sh` and the suffix of its requirements file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Venv {
    /// `requirements.txt`: standardwebhooks, schemathesis,
    /// openapi-python-client, a2a-sdk 1.x (A2A 1.0), mcp 1.30.
    Main,
    /// `requirements-a2a03.txt`: a2a-sdk 0.3.x (A2A 0.3), whose major
    /// cannot share an environment with 1.x.
    A2a03,
}

impl Venv {
    /// `venv.sh`'s argument; none for the main environment.
    fn name(self) -> Option<&'static str> {
        match self {
            Venv::Main => None,
            Venv::A2a03 => Some("a2a03"),
        }
    }
}

/// The scripts and requirements, in the repository.
pub fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("python")
}

/// The environment's interpreter, built (or found up to date) once per
/// test process. `None` (the test should return) when it cannot be built
/// outside CI; panics with the script's output under `CI=true`.
pub fn python() -> Option<PathBuf> {
    python_of(Venv::Main)
}

/// [`python`] for any of the environments, each built at most once per
/// test process.
pub fn python_of(venv: Venv) -> Option<PathBuf> {
    static MAIN: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    static A2A03: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let cell = match venv {
        Venv::Main => &MAIN,
        Venv::A2a03 => &A2A03,
    };
    match cell.get_or_init(|| build(venv)) {
        Ok(python) => Some(python.clone()),
        Err(why) if in_ci() => {
            panic!("CI=true but the Python environment {venv:?} is missing: {why}")
        }
        Err(why) => {
            eprintln!("skipped: no Python environment {venv:?}: {why}");
            None
        }
    }
}

fn build(venv: Venv) -> Result<PathBuf, String> {
    crate::setup::run_with(&dir().join("venv.sh"), venv.name())
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
