//! Runs every `sh` block of docs/policy-tutorial.md, in order, in one bash
//! with `set -euo pipefail`, so the policy author's tutorial cannot rot.

use std::path::Path;
use std::process::Command;

use anyhow::{ensure, Context, Result};

fn sh_blocks(markdown: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in markdown.lines() {
        match (&mut current, line.trim_end()) {
            (None, "```sh") => current = Some(String::new()),
            (Some(block), "```") => {
                blocks.push(std::mem::take(block));
                current = None;
            }
            (Some(block), text) => {
                block.push_str(text);
                block.push('\n');
            }
            (None, _) => {}
        }
    }
    blocks
}

#[test]
fn the_policy_tutorial_runs_as_written() -> Result<()> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .context("workspace root")?;
    let tutorial = std::fs::read_to_string(root.join("docs/policy-tutorial.md"))?;
    let blocks = sh_blocks(&tutorial);
    ensure!(
        blocks.len() >= 6,
        "the tutorial has only {} sh blocks",
        blocks.len()
    );

    let binary = nomos_continue_tests::replica::binary();
    let bin_dir = binary.parent().context("binary directory")?;
    let target = bin_dir.parent().context("target directory")?;
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let work = tempfile::tempdir()?;
    let script = format!("set -euo pipefail\n{}", blocks.join("\n"));
    let output = Command::new("bash")
        .arg("-c")
        .arg(&script)
        .current_dir(root)
        .env("PATH", path)
        .env("POLICY_DIR", work.path().join("my-policy"))
        // Reuse compiled dependencies across runs of this test.
        .env("CARGO_TARGET_DIR", target.join("tutorial-wasm"))
        .output()
        .context("run the tutorial")?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    ensure!(
        output.status.success(),
        "tutorial failed ({})\nstdout:\n{stdout}\nstderr:\n{stderr}",
        output.status
    );
    ensure!(
        stdout.contains(r#"{"terminal":true,"outcome":"failed"}"#),
        "degraded is not a failure:\n{stdout}"
    );
    ensure!(
        stdout.contains("terminal(failed)"),
        "the typed export disagrees:\n{stdout}"
    );
    ensure!(
        stdout.contains("0 failed"),
        "golden cases failed:\n{stdout}"
    );
    ensure!(
        stdout.contains("acme-degraded-is-failed"),
        "the swap did not take:\n{stdout}"
    );
    ensure!(
        stdout.lines().any(|l| l == "403"),
        "the runtime's token changed the policy:\n{stdout}"
    );
    ensure!(
        stdout.lines().any(|l| l == "0"),
        "the rollback did not return to the built-in policy:\n{stdout}"
    );
    ensure!(
        stdout.matches(r#""from":"#).count() == 2,
        "two rollbacks expected:\n{stdout}"
    );
    Ok(())
}
