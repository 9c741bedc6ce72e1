//! docs/configuration.md describes every flag `serve --help` lists, so a
//! new flag cannot ship undocumented.

use std::path::Path;
use std::process::Command;

use anyhow::{ensure, Context, Result};

#[test]
fn every_serve_flag_is_documented() -> Result<()> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .context("workspace root")?;
    let help = Command::new(nomos_continue_tests::replica::binary())
        .args(["serve", "--help"])
        .output()?;
    ensure!(help.status.success(), "serve --help failed");
    let help = String::from_utf8(help.stdout)?;
    let docs = std::fs::read_to_string(root.join("docs/configuration.md"))?;
    let flags: Vec<&str> = help
        .split_whitespace()
        .filter(|w| w.starts_with("--") && w.len() > 2)
        .map(|w| w.trim_end_matches(|c: char| !c.is_ascii_alphanumeric()))
        .filter(|w| *w != "--help")
        .collect();
    ensure!(flags.len() >= 10, "found only {flags:?} in serve --help");
    let missing: Vec<&&str> = flags
        .iter()
        .filter(|f| !docs.contains(&format!("`{f}`")))
        .collect();
    ensure!(
        missing.is_empty(),
        "flags missing from docs/configuration.md: {missing:?}"
    );
    Ok(())
}
