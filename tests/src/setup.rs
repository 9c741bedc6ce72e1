//! The scripts that install what a test needs from a package registry
//! (`tests/python/venv.sh`, `tests/js/axe.sh`): each prints the path of
//! what it made on its last line, and is run at most once per test process
//! by its caller.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Runs `script` with bash and returns the path its last line names, or
/// why not (with the script's output) when it fails or names no file.
pub fn run(script: &Path) -> Result<PathBuf, String> {
    run_with(script, None)
}

/// [`run`] with one argument for the script (which of its things to make).
pub fn run_with(script: &Path, argument: Option<&str>) -> Result<PathBuf, String> {
    let output = Command::new("bash")
        .arg(script)
        .args(argument)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("run {}: {e}", script.display()))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    if !output.status.success() {
        return Err(format!(
            "{} exited {}:\n{stdout}{stderr}",
            script.display(),
            output.status
        ));
    }
    match stdout.lines().last().map(PathBuf::from) {
        Some(path) if path.exists() => Ok(path),
        _ => Err(format!(
            "{} named no file that exists:\n{stdout}{stderr}",
            script.display()
        )),
    }
}
