//! Every `wasmtime run` example in README.md works exactly as written, from
//! the workspace root, so the policy author's guide cannot rot.

use std::path::Path;
use std::process::Command;

use anyhow::{ensure, Context, Result};

#[test]
fn readme_wasmtime_examples_run_as_written() -> Result<()> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .context("workspace root")?;
    let readme = std::fs::read_to_string(root.join("README.md")).context("read README.md")?;
    let examples: Vec<&str> = readme
        .lines()
        .filter(|l| l.starts_with("wasmtime run "))
        .collect();
    ensure!(
        examples.len() >= 6,
        "README shows only {} wasmtime examples",
        examples.len()
    );
    // The host's build script has built the component by the time this test
    // binary exists; the README names the default target directory.
    let component = root.join("target/guest-wasm/wasm32-wasip2/release/policy.wasm");
    ensure!(
        component.exists(),
        "{} is missing (is CARGO_TARGET_DIR set elsewhere?)",
        component.display()
    );
    for example in examples {
        let output = Command::new("sh")
            .arg("-c")
            .arg(example)
            .current_dir(root)
            .output()
            .context("run sh")?;
        let stdout = String::from_utf8_lossy(&output.stdout);
        ensure!(
            output.status.success() && !stdout.trim().is_empty(),
            "README example failed: {example}\nstatus {}\nstdout {stdout}\nstderr {}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
    }
    Ok(())
}

/// CI runs the README's two commands for a fresh machine as written: the
/// test command (after its parts were started early, beside the build) and
/// the demo, on the binary the tests built.
#[test]
fn ci_runs_the_readme_commands() -> Result<()> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .context("workspace root")?;
    let readme = std::fs::read_to_string(root.join("README.md")).context("read README.md")?;
    let ci = std::fs::read_to_string(root.join(".ci/run")).context("read .ci/run")?;
    let test_command = readme
        .lines()
        .find(|l| l.starts_with("tests/wasmtime-cli.sh") && l.ends_with("tests/run.py"))
        .context("README's test command")?;
    ensure!(
        ci.lines().any(|l| l.trim() == format!("({test_command})")),
        ".ci/run does not run README's test command: {test_command}"
    );
    ensure!(
        readme.lines().any(|l| l == "cargo run -- demo"),
        "README's first command is not `cargo run -- demo`"
    );
    ensure!(
        ci.contains("./target/debug/nomos-continue demo"),
        ".ci/run does not run the demo"
    );
    Ok(())
}
