//! docs/configuration.md and `serve --help` agree both ways: every flag the
//! help lists is described there, so a new flag cannot ship undocumented,
//! and every flag a table there names is one the help lists (the
//! deprecated ones, hidden from the help, in their own table), so a
//! renamed or removed flag cannot linger in the docs.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use anyhow::{ensure, Context, Result};

/// The flags `serve --help` lists, `--help` aside.
fn help_flags() -> Result<BTreeSet<String>> {
    let help = Command::new(nomos_continue_tests::replica::binary())
        .args(["serve", "--help"])
        .output()?;
    ensure!(help.status.success(), "serve --help failed");
    let help = String::from_utf8(help.stdout)?;
    let flags: BTreeSet<String> = help
        .lines()
        // A flag's own line, not one named in another's description.
        .filter_map(|line| line.split_whitespace().next())
        .map(|word| word.trim_end_matches(|c: char| !c.is_ascii_alphanumeric()))
        .filter(|word| word.starts_with("--") && word.len() > 2 && *word != "--help")
        .map(str::to_owned)
        .collect();
    ensure!(flags.len() >= 10, "found only {flags:?} in serve --help");
    Ok(flags)
}

/// The flags the tables of the docs name in their first column: those
/// of the deprecated table apart.
fn documented_flags(docs: &str) -> (BTreeSet<String>, BTreeSet<String>) {
    let (mut current, mut deprecated) = (BTreeSet::new(), BTreeSet::new());
    let mut in_deprecated = false;
    for line in docs.lines() {
        if line.starts_with("## ") {
            in_deprecated = line.starts_with("## Deprecated");
        }
        let Some(cell) = line.strip_prefix("| `--") else {
            continue;
        };
        let Some((name, _)) = cell.split_once('`') else {
            continue;
        };
        let flag = format!("--{name}");
        if in_deprecated {
            deprecated.insert(flag);
        } else {
            current.insert(flag);
        }
    }
    (current, deprecated)
}

#[test]
fn every_serve_flag_is_documented_and_every_documented_flag_exists() -> Result<()> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .context("workspace root")?;
    let docs = std::fs::read_to_string(root.join("docs/configuration.md"))?;
    let help = help_flags()?;
    let (documented, deprecated) = documented_flags(&docs);
    let missing: Vec<&String> = help
        .iter()
        .filter(|f| !docs.contains(&format!("`{f}`")))
        .collect();
    ensure!(
        missing.is_empty(),
        "flags missing from docs/configuration.md: {missing:?}"
    );
    let unknown: Vec<&String> = documented.difference(&help).collect();
    ensure!(
        unknown.is_empty(),
        "docs/configuration.md documents flags `serve --help` does not list: {unknown:?}"
    );
    ensure!(
        deprecated.len() >= 8,
        "the deprecated table: {deprecated:?}"
    );
    let shown: Vec<&String> = deprecated.intersection(&help).collect();
    ensure!(
        shown.is_empty(),
        "deprecated flags are listed by serve --help: {shown:?}"
    );
    Ok(())
}

/// Each deprecated flag is still taken: `serve` with it and its value
/// gets past the parsing with a deprecation line (and fails later, on a
/// listen address in use).
#[test]
fn the_deprecated_flags_still_parse() -> Result<()> {
    let taken = std::net::TcpListener::bind("127.0.0.1:0")?;
    let busy = taken.local_addr()?.to_string();
    let dir = tempfile::tempdir()?;
    for (flag, value) in [
        ("--poll-ms", "100"),
        ("--lease-secs", "6"),
        ("--retry-budget-secs", "60"),
        ("--policy-poll-ms", "500"),
        ("--policy-deadline-ms", "50"),
        ("--decision-log-days", "7"),
        ("--delivery-retention-days", "12h"),
        ("--chat-retention-days", "30"),
    ] {
        let output = Command::new(nomos_continue_tests::replica::binary())
            .args(["serve", "--listen", &busy, flag, value])
            .current_dir(dir.path())
            .env_remove("DATABASE_URL")
            .output()?;
        let stderr = String::from_utf8_lossy(&output.stderr);
        ensure!(!output.status.success(), "{flag}: serve started");
        ensure!(
            stderr.contains(&format!("listen on {busy}")) && stderr.contains("is deprecated"),
            "{flag} {value}: {stderr}"
        );
    }
    Ok(())
}
