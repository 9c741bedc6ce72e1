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

/// Runs every `sh` block of `docs/NAME`, in order, in one bash from the
/// workspace root with the binary on `PATH`; returns its stdout.
fn run_tutorial(name: &str, min_blocks: usize) -> Result<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .context("workspace root")?;
    let tutorial = std::fs::read_to_string(root.join("docs").join(name))?;
    let blocks = sh_blocks(&tutorial);
    ensure!(
        blocks.len() >= min_blocks,
        "{name} has only {} sh blocks",
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
    // A block that fails must not leave a `serve` it started behind (it
    // would hold the port for the next run): stop the script's jobs on exit.
    let script = format!(
        "set -euo pipefail\ntrap 'kill $(jobs -p) 2>/dev/null || true' EXIT\n{}",
        blocks.join("\n")
    );
    let output = Command::new("bash")
        .arg("-c")
        .arg(&script)
        .current_dir(root)
        .env("PATH", path)
        .env("POLICY_DIR", work.path().join("my-policy"))
        // The target directory where `host/build.rs` built the default
        // policy: the tutorial's copy has the same manifest and lock file,
        // so only its own crate compiles (a fresh clone saves a minute of
        // CPU building serde and wit-bindgen for wasm a second time). Its
        // `policy.wasm` replaces the default's uplifted one there, which
        // nothing reads: the host embeds its own copy.
        .env("CARGO_TARGET_DIR", target.join("guest-wasm"))
        // And compiled policies across the tutorials and the other tests.
        .env(
            "NOMOS_CONTINUE_POLICY_COMPILE_CACHE",
            nomos_continue_tests::policies::compile_cache_dir(),
        )
        .output()
        .context("run the tutorial")?;
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    ensure!(
        output.status.success(),
        "{name} failed ({})\nstdout:\n{stdout}\nstderr:\n{stderr}",
        output.status
    );
    Ok(stdout)
}

#[test]
fn the_policy_tutorial_runs_as_written() -> Result<()> {
    let stdout = run_tutorial("policy-tutorial.md", 6)?;
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
        stdout.matches(r#""from":"#).count() == 3,
        "two rollbacks and a promotion expected:\n{stdout}"
    );
    // Section 7: the candidate on recorded traffic, in shadow, promoted.
    ensure!(
        stdout.lines().any(|l| l == "replay exit 1"),
        "the replay found no change:\n{stdout}"
    );
    ensure!(
        stdout.contains("continue -> drop"),
        "the cancelled execution did not flip:\n{stdout}"
    );
    let replayed = stdout
        .lines()
        .find(|l| l.starts_with("replayed "))
        .context("no replay summary")?;
    ensure!(
        replayed.ends_with(" changed") && !replayed.ends_with(" 0 changed"),
        "{replayed}"
    );
    ensure!(
        stdout.contains(r#""mode":"shadow""#),
        "the shadow upload did not take:\n{stdout}"
    );
    ensure!(
        stdout.lines().any(
            |l| l.starts_with("nomos_continue_policy_shadow_disagreements_total ")
                && !l.ends_with(" 0")
        ),
        "the shadow disagreed nowhere:\n{stdout}"
    );
    ensure!(
        stdout.contains("acme-cancelled-is-left"),
        "the promotion did not take:\n{stdout}"
    );
    Ok(())
}

/// What a language track of the tutorial must show: the rule changed on
/// both paths, bad input refused, every golden case held, the checks
/// passed and the swap taken.
fn check_language_track(stdout: &str) -> Result<()> {
    for (shown, what) in [
        (
            r#"{"terminal":true,"outcome":"failed"}"#,
            "degraded is not a failure",
        ),
        (r#"{"terminal":false}"#, "running is not left running"),
        ("terminal(failed)", "the typed export disagrees"),
        ("bad input: exit 1", "bad input was not refused"),
        (" passed, 0 failed", "golden cases failed"),
        ("fresh sandbox ", "policy check did not report its costs"),
        (
            r#""name":"acme-degraded-is-failed""#,
            "the swap did not take",
        ),
    ] {
        ensure!(stdout.contains(shown), "{what}:\n{stdout}");
    }
    ensure!(
        stdout.lines().any(|l| l == "ok"),
        "policy check refused it:\n{stdout}"
    );
    Ok(())
}

#[test]
fn the_python_policy_tutorial_runs_as_written() -> Result<()> {
    check_language_track(&run_tutorial("policy-tutorial-python.md", 6)?)
}

#[test]
fn the_javascript_policy_tutorial_runs_as_written() -> Result<()> {
    check_language_track(&run_tutorial("policy-tutorial-js.md", 6)?)
}
