//! Golden cases of the default policy, through both paths a policy runs on:
//! the typed exports inside the host's wasmtime, and the real `wasmtime run`
//! command line a policy author uses. Each case must give the expected
//! output on both, and the two must agree with each other.
//!
//! `BLESS=1 cargo test -p nomos-continue-tests --test policies golden` rewrites the
//! expectations from the typed path, but only where both paths agree.
//!
//! Exit status: the typed path reports bad input as status 2, as the
//! guest's `main` does. Under `wasmtime run` a WASI 0.2 program can only
//! exit "ok" or "error" (status 1) unless the unstable `cli-exit-with-code`
//! interface is enabled, so there the check is "non-zero, and the same
//! one-line message".

use std::path::{Path, PathBuf};

use std::sync::Mutex;

use anyhow::{bail, Context, Result};
use nomos_continue::policy::golden::{self, Expected, GoldenCase};
use nomos_continue::policy::{Limits, PolicyRuntime, BUILTIN_POLICY_PATH};
use nomos_continue_tests::policies::{precompiled, run_cli, wasmtime};

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("golden")
}

fn blessing() -> bool {
    std::env::var_os("BLESS").is_some_and(|v| v != "0")
}

/// Checks one case on both paths; returns the problems found.
fn check_case(
    runtime: &PolicyRuntime,
    wasmtime: &Path,
    compiled: &Path,
    case: &GoldenCase,
) -> Result<Vec<String>> {
    let typed = runtime.run_golden_case(case);
    let cli = run_cli(wasmtime, compiled, case)?;
    let mut problems = Vec::new();
    let same_result = (typed.exit_code == 0) == (cli.exit_code == 0)
        && typed.stdout == cli.stdout
        && typed.stderr.trim_end() == cli.stderr.trim_end();
    if !same_result {
        problems.push(format!(
            "{}: typed exports and `wasmtime run` disagree:\n  typed: exit {} stdout {:?} stderr {:?}\n  cli:   exit {} stdout {:?} stderr {:?}",
            case.name,
            typed.exit_code,
            clip(&typed.stdout),
            typed.stderr.trim_end(),
            cli.exit_code,
            clip(&cli.stdout),
            cli.stderr.trim_end()
        ));
    }
    if cli.exit_code != 0 && cli.stderr.trim_end().lines().count() != 1 {
        problems.push(format!(
            "{}: bad input must give exactly one stderr line, got {:?}",
            case.name, cli.stderr
        ));
    }
    if blessing() {
        if same_result {
            golden::bless(case, &typed)?;
        }
        return Ok(problems);
    }
    if let Some(diff) = golden::mismatch(case, &typed) {
        problems.push(format!("typed path: {diff}"));
    }
    let cli_as_expected = match &case.expected {
        Expected::Stdout(s) => cli.exit_code == 0 && &cli.stdout == s,
        Expected::Error(s) => cli.exit_code != 0 && cli.stderr.trim_end() == s.trim_end(),
    };
    if !cli_as_expected {
        problems.push(format!(
            "{}: `wasmtime run` gave exit {} stdout {:?} stderr {:?}",
            case.name,
            cli.exit_code,
            clip(&cli.stdout),
            cli.stderr.trim_end()
        ));
    }
    Ok(problems)
}

fn clip(text: &str) -> String {
    text.chars().take(300).collect()
}

#[test]
fn golden_cases_agree_on_both_paths() -> Result<()> {
    let cases = golden::load_dir(&golden_dir(), blessing()).context("load tests/golden")?;
    assert!(cases.len() >= 60, "only {} golden cases", cases.len());
    let runtime = PolicyRuntime::new(Limits::default()).context("load the built-in policy")?;
    let wasmtime = wasmtime()?;
    // Compiled by `wasmtime compile` once, not by `wasmtime run` per case.
    let compiled = precompiled(&wasmtime, Path::new(BUILTIN_POLICY_PATH), "builtin-policy")?;
    let problems = Mutex::new(Vec::new());
    let next = Mutex::new(cases.iter());
    let workers = std::thread::available_parallelism()
        .map_or(2, |n| n.get())
        .min(4);
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| loop {
                let Some(case) = next.lock().map(|mut it| it.next()).ok().flatten() else {
                    return;
                };
                let found = check_case(&runtime, &wasmtime, &compiled, case)
                    .unwrap_or_else(|e| vec![format!("{}: {e:#}", case.name)]);
                if let Ok(mut all) = problems.lock() {
                    all.extend(found);
                }
            });
        }
    });
    let problems = problems
        .into_inner()
        .map_err(|_| anyhow::anyhow!("poisoned"))?;
    if !problems.is_empty() {
        bail!(
            "{} golden problem(s):\n{}",
            problems.len(),
            problems.join("\n")
        );
    }
    Ok(())
}

/// Every command folder has cases, so a rename cannot silently empty one.
#[test]
fn every_command_is_covered() -> Result<()> {
    let cases = golden::load_dir(&golden_dir(), true)?;
    for command in golden::COMMANDS {
        let count = cases
            .iter()
            .filter(|c| c.name.starts_with(&format!("{command}/")))
            .count();
        assert!(count > 0, "no golden cases for {command}");
    }
    Ok(())
}
