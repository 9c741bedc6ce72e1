//! `nomos-continue policy check|test|decide|extract`: a policy author's
//! tools, running a policy under the same limits as production.
//!
//! Exit status: 0 when the policy did what was asked; 1 when the policy is
//! at fault (`check` found reasons, `test` found failing cases); 2 when the
//! command could not run (an unreadable file, bad input on stdin, a policy
//! that failed the one call asked of it), with one line on stderr.

use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use super::PolicyLimitArgs;
use crate::policy::codec;
use crate::policy::golden;
use crate::policy::read_policy_file;
use crate::policy::{PolicyError, PolicyRuntime, Profile, PROFILE_BATCH};

/// The policy's fault: reasons were printed.
const EXIT_POLICY_FAULT: u8 = 1;

/// `policy check <wasm>`: compiles, type-checks and vets the policy exactly
/// as an activation would, under the limits given (production's by
/// default); prints its revision, name and version, what it costs (size,
/// compile, a fresh sandbox, a decision, a batch) and "ok", or every reason
/// it would be refused. A limit it hits is named with the flag that raises
/// it.
pub fn check(wasm: &Path, limit_args: &PolicyLimitArgs) -> Result<ExitCode> {
    let bytes = read_policy_file(wasm)?;
    let limits = limit_args.limits();
    println!("{}: {} component", wasm.display(), size(bytes.len()));
    let started = Instant::now();
    let checked = PolicyRuntime::unvetted(limits.clone(), &bytes).and_then(|runtime| {
        let compile = started.elapsed();
        let (revision, info) = runtime.check(&bytes)?;
        Ok((runtime, compile, revision, info))
    });
    let (runtime, compile, revision, info) = match checked {
        Ok(checked) => checked,
        Err(e @ (PolicyError::Invalid(_) | PolicyError::Rejected(_))) => {
            return Ok(refused(wasm, &e.reasons()));
        }
        Err(e) => return Err(e.into()),
    };
    println!("revision {revision}");
    println!(
        "policy {} {} (contract {})",
        info.name, info.version, info.contract
    );
    let profile = match Profile::measure(&runtime) {
        Ok(profile) => profile,
        Err(e) => return Ok(refused(wasm, &[format!("timing a decision: {e}")])),
    };
    println!("compile        {}", millis(compile));
    println!("fresh sandbox  {}", millis(profile.instantiate));
    println!(
        "decide         {} in a fresh sandbox, {} on a live instance",
        millis(profile.decide_one),
        millis(profile.amortised)
    );
    println!(
        "decide-batch   {} for {PROFILE_BATCH} ({} each; the worker decides in batches)",
        millis(profile.decide_batch),
        millis(profile.decide_batch / PROFILE_BATCH as u32)
    );
    println!(
        "slowest probe  {} of the {} CPU deadline (--policy-deadline)",
        millis(profile.slowest_probe),
        millis(limits.deadline)
    );
    println!("ok");
    Ok(ExitCode::SUCCESS)
}

/// Prints the reasons a policy would be refused; the policy's fault.
fn refused(wasm: &Path, reasons: &[String]) -> ExitCode {
    println!("{}: refused", wasm.display());
    for reason in reasons {
        println!("  {reason}");
    }
    ExitCode::from(EXIT_POLICY_FAULT)
}

/// A byte count the way an author reads one.
fn size(bytes: usize) -> String {
    if bytes >= 1 << 20 {
        format!("{:.1} MiB", bytes as f64 / f64::from(1 << 20))
    } else {
        format!("{:.1} KiB", bytes as f64 / 1024.0)
    }
}

/// A duration in milliseconds, with the precision a microsecond call needs.
fn millis(d: Duration) -> String {
    let ms = d.as_secs_f64() * 1000.0;
    if ms < 1.0 {
        format!("{:.0} µs", ms * 1000.0)
    } else if ms < 100.0 {
        format!("{ms:.2} ms")
    } else {
        format!("{ms:.0} ms")
    }
}

/// `policy test <wasm> [golden-dir]`: runs every golden case through the
/// typed exports (unvetted, so a policy that would be refused still gets a
/// report per case), one line per failing case, the slowest case against
/// the deadline, and a summary. With `own_describe`, `describe` is judged by
/// its contract alone (a policy in another language names itself).
pub fn test(
    wasm: &Path,
    golden_dir: &Path,
    own_describe: bool,
    limit_args: &PolicyLimitArgs,
) -> Result<ExitCode> {
    let bytes = read_policy_file(wasm)?;
    let cases = golden::load_dir(golden_dir, false)?;
    let runtime = match PolicyRuntime::unvetted(limit_args.limits(), &bytes) {
        Ok(runtime) => runtime,
        Err(e @ PolicyError::Invalid(_)) => {
            println!("{e}");
            println!("0 passed, {} failed", cases.len());
            return Ok(ExitCode::from(EXIT_POLICY_FAULT));
        }
        Err(e) => return Err(e.into()),
    };
    let judging = golden::Judging {
        own_describe,
        own_error_wording: false,
    };
    let mut failed = 0usize;
    let mut slowest = (Duration::ZERO, "");
    for case in &cases {
        let started = Instant::now();
        let output = runtime.run_golden_case(case);
        slowest = slowest.max((started.elapsed(), case.name.as_str()));
        if let Some(diff) = judging.mismatch(case, &output) {
            failed += 1;
            println!("FAIL {}", diff.replace('\n', " "));
        }
    }
    println!(
        "slowest case {} in {} (a fresh sandbox each; CPU deadline {})",
        slowest.1,
        millis(slowest.0),
        millis(runtime.limits().deadline)
    );
    println!("{} passed, {failed} failed", cases.len() - failed);
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_POLICY_FAULT)
    })
}

/// Loads a policy for one call: type-checked but not vetted, so an author
/// can see what a policy that would be refused answers.
fn load(wasm: &Path, limit_args: &PolicyLimitArgs) -> Result<PolicyRuntime> {
    let bytes = read_policy_file(wasm)?;
    Ok(PolicyRuntime::unvetted(limit_args.limits(), &bytes)?)
}

/// `policy decide <wasm>`: one decision input JSON on stdin, the decision
/// JSON on stdout, in exactly the form `wasmtime run policy.wasm decide`
/// prints.
pub fn decide(wasm: &Path, limit_args: &PolicyLimitArgs) -> Result<ExitCode> {
    let runtime = load(wasm, limit_args)?;
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
/// links it names (execution ids, protocol tasks) on stdout.
pub fn extract(wasm: &Path, limit_args: &PolicyLimitArgs) -> Result<ExitCode> {
    let runtime = load(wasm, limit_args)?;
    let input = codec::read_input(std::io::stdin().lock())?;
    let links = runtime
        .extract_links(&input)
        .value
        .context("the policy failed")?;
    print!("{}", codec::answer_line(&links)?);
    Ok(ExitCode::SUCCESS)
}
