//! `nomos-continue policy check|test|decide|extract`: a policy author's
//! tools, running a policy under the same limits as production.
//!
//! Exit status: 0 when the policy did what was asked; 1 when the policy is
//! at fault (`check` found reasons, `test` found failing cases); 2 when the
//! command could not run (an unreadable file, bad input on stdin, a policy
//! that failed the one call asked of it), with one line on stderr.

use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result};

use crate::policy::codec;
use crate::policy::golden;
use crate::policy::watch::read_policy_file;
use crate::policy::{Limits, PolicyError, PolicyRuntime};

/// The policy's fault: reasons were printed.
const EXIT_POLICY_FAULT: u8 = 1;

/// `policy check <wasm>`: compiles, type-checks and vets the policy exactly
/// as an activation would; prints its revision, name and version and "ok",
/// or every reason it would be refused.
pub fn check(wasm: &Path) -> Result<ExitCode> {
    let bytes = read_policy_file(wasm)?;
    let runtime = match PolicyRuntime::with_policy(Limits::default(), &bytes) {
        Ok(runtime) => runtime,
        Err(e @ (PolicyError::Invalid(_) | PolicyError::Rejected(_))) => {
            println!("{}: refused", wasm.display());
            for reason in e.reasons() {
                println!("  {reason}");
            }
            return Ok(ExitCode::from(EXIT_POLICY_FAULT));
        }
        Err(e) => return Err(e.into()),
    };
    let info = runtime
        .describe()
        .value
        .context("describe() after vetting")?;
    println!("revision {}", runtime.active_revision());
    println!(
        "policy {} {} (contract {})",
        info.name, info.version, info.contract
    );
    println!("ok");
    Ok(ExitCode::SUCCESS)
}

/// `policy test <wasm> [golden-dir]`: runs every golden case through the
/// typed exports (unvetted, so a policy that would be refused still gets a
/// report per case), one line per failing case and a summary.
pub fn test(wasm: &Path, golden_dir: &Path) -> Result<ExitCode> {
    let bytes = read_policy_file(wasm)?;
    let cases = golden::load_dir(golden_dir, false)?;
    let runtime = match PolicyRuntime::unvetted(Limits::default(), &bytes) {
        Ok(runtime) => runtime,
        Err(e @ PolicyError::Invalid(_)) => {
            println!("{e}");
            println!("0 passed, {} failed", cases.len());
            return Ok(ExitCode::from(EXIT_POLICY_FAULT));
        }
        Err(e) => return Err(e.into()),
    };
    let mut failed = 0usize;
    for case in &cases {
        let output = runtime.run_golden_case(case);
        if let Some(diff) = golden::mismatch(case, &output) {
            failed += 1;
            println!("FAIL {}", diff.replace('\n', " "));
        }
    }
    println!("{} passed, {failed} failed", cases.len() - failed);
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_POLICY_FAULT)
    })
}

/// Loads a policy for one call: type-checked but not vetted, so an author
/// can see what a policy that would be refused answers.
fn load(wasm: &Path) -> Result<PolicyRuntime> {
    let bytes = read_policy_file(wasm)?;
    Ok(PolicyRuntime::unvetted(Limits::default(), &bytes)?)
}

/// `policy decide <wasm>`: one decision input JSON on stdin, the decision
/// JSON on stdout, in exactly the form `wasmtime run policy.wasm decide`
/// prints.
pub fn decide(wasm: &Path) -> Result<ExitCode> {
    let runtime = load(wasm)?;
    let input = codec::read_input(std::io::stdin().lock())?;
    let parsed = codec::decision_input(&input)?;
    let decisions = runtime
        .decide_batch(std::slice::from_ref(&parsed))
        .value
        .context("the policy failed")?;
    let decision = decisions
        .first()
        .context("the policy returned no decision")?;
    print!("{}", codec::answer_line(decision)?);
    Ok(ExitCode::SUCCESS)
}

/// `policy extract <wasm>`: a tool result on stdin, the JSON array of the
/// execution ids it names on stdout.
pub fn extract(wasm: &Path) -> Result<ExitCode> {
    let runtime = load(wasm)?;
    let input = codec::read_input(std::io::stdin().lock())?;
    let ids = runtime
        .extract_ids(&input)
        .value
        .context("the policy failed")?;
    print!("{}", codec::answer_line(&ids)?);
    Ok(ExitCode::SUCCESS)
}
