//! The default rules written in Python (`guest/python`) and JavaScript
//! (`guest/js`), held to exactly the golden files the Rust guest is held
//! to: the contract is WIT, so the language must not matter.
//!
//! Each component is built by its folder's `build.sh` (pinned tools from
//! PyPI and npm), then run four ways: every golden case through the host
//! (`policy test --own-describe`, where only `describe` may name another
//! policy), `policy check`, every golden case under the real `wasmtime run`
//! (compiled once with `wasmtime compile`: an interpreted component is
//! tens of MB, and compiling it per case would take minutes), and uploaded
//! into a running `serve` that then continues a failed execution with it.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

use anyhow::{anyhow, bail, ensure, Context, Result};
use nomos_continue::agent::ContinuationEvent;
use nomos_continue::policy::golden::{self, Judging};
use nomos_continue::policy::{Limits, PolicyRuntime};
use nomos_continue_tests::http::{RecordingServer, Script};
use nomos_continue_tests::policies::{compile_cache_dir, precompiled, run_cli, wasmtime};
use nomos_continue_tests::replica::{binary, Replica, ReplicaOptions};
use uuid::Uuid;

/// A guard against a hung test, never the thing measured.
const PATIENCE: Duration = Duration::from_secs(120);

/// A policy written in another language.
struct Guest {
    /// Its folder, under the workspace root.
    folder: &'static str,
    /// Its component, built once per test process.
    built: &'static OnceLock<Result<PathBuf, String>>,
}

static PYTHON_BUILT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
static JS_BUILT: OnceLock<Result<PathBuf, String>> = OnceLock::new();

const PYTHON: Guest = Guest {
    folder: "guest/python",
    built: &PYTHON_BUILT,
};
const JS: Guest = Guest {
    folder: "guest/js",
    built: &JS_BUILT,
};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

fn golden_dir() -> PathBuf {
    root().join("tests/golden")
}

impl Guest {
    /// The component, built by the folder's own `build.sh` the first time a
    /// test asks (concurrent askers wait for that one build).
    fn wasm(&self) -> Result<PathBuf> {
        self.built
            .get_or_init(|| self.build().map_err(|e| format!("{e:#}")))
            .clone()
            .map_err(|e| anyhow!("{}/build.sh: {e}", self.folder))
    }

    fn build(&self) -> Result<PathBuf> {
        let folder = root().join(self.folder);
        let output = Command::new("bash")
            .arg(folder.join("build.sh"))
            .output()
            .context("run build.sh")?;
        ensure!(
            output.status.success(),
            "failed ({}):\n{}\n{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        let wasm = folder.join("policy.wasm");
        ensure!(wasm.is_file(), "wrote no {}", wasm.display());
        Ok(wasm)
    }

    /// `nomos-continue policy ARGS… <wasm> REST…`: exit status and stdout.
    fn policy_command(&self, command: &str, rest: &[&str]) -> Result<(bool, String)> {
        let output = Command::new(binary())
            .args(["policy", command])
            .arg(self.wasm()?)
            .args(rest)
            .env("NOMOS_CONTINUE_POLICY_COMPILE_CACHE", compile_cache_dir())
            .output()
            .with_context(|| format!("run policy {command}"))?;
        let stdout = String::from_utf8(output.stdout).context("stdout is UTF-8")?;
        ensure!(
            output.status.code().is_some(),
            "policy {command} was killed:\n{stdout}{}",
            String::from_utf8_lossy(&output.stderr)
        );
        Ok((
            output.status.success(),
            format!("{stdout}{}", String::from_utf8_lossy(&output.stderr)),
        ))
    }
}

fn every_golden_case_through_the_host(guest: &Guest) -> Result<()> {
    let dir = golden_dir();
    let dir = dir.to_str().context("golden dir is UTF-8")?;
    let cases = golden::load_dir(Path::new(dir), false)?.len();
    let (ok, report) = guest.policy_command("test", &[dir, "--own-describe"])?;
    ensure!(ok, "policy test failed:\n{report}");
    ensure!(
        report.contains(&format!("{cases} passed, 0 failed")),
        "not every case ran:\n{report}"
    );
    // The one allowed difference is real: the policy names itself.
    let runtime = PolicyRuntime::unvetted(cached_limits(), &std::fs::read(guest.wasm()?)?)?;
    let info = runtime.describe().value?;
    ensure!(
        info.name != "nomos-default" && info.contract == "nomos:continuation@0.2.0",
        "describe: {info:?}"
    );
    Ok(())
}

fn passes_policy_check(guest: &Guest) -> Result<()> {
    let (ok, report) = guest.policy_command("check", &[])?;
    ensure!(ok, "policy check refused it:\n{report}");
    for line in [
        "MiB component",
        "compile ",
        "fresh sandbox ",
        "decide-batch ",
    ] {
        ensure!(report.contains(line), "no {line:?} in:\n{report}");
    }
    ensure!(report.trim_end().ends_with("ok"), "{report}");
    Ok(())
}

fn every_golden_case_under_wasmtime_run(guest: &Guest) -> Result<()> {
    let wasmtime = wasmtime()?;
    let wasm = guest.wasm()?;
    let compiled = precompiled(&wasmtime, &wasm, &guest.folder.replace('/', "-"))?;
    let judging = Judging {
        own_describe: true,
        own_error_wording: true,
    };
    let cases = golden::load_dir(&golden_dir(), false)?;
    let mut failures = Vec::new();
    for case in &cases {
        let output = run_cli(&wasmtime, &compiled, case)?;
        if let Some(diff) = judging.mismatch(case, &output) {
            failures.push(diff);
        }
    }
    if !failures.is_empty() {
        bail!(
            "{} of {} cases failed under wasmtime run:\n{}",
            failures.len(),
            cases.len(),
            failures.join("\n")
        );
    }
    Ok(())
}

/// Uploaded into a running `serve`, the policy is active and continues a
/// failed execution with the note and SOUL the default policy would send.
async fn serves_the_end_to_end_flow(guest: &Guest) -> Result<()> {
    let wasm = std::fs::read(guest.wasm()?)?;
    let dir = tempfile::tempdir()?;
    let database_url = format!("sqlite:{}", dir.path().join("serve.db").display());
    let (_, hook) = RecordingServer::start(Script::statuses([])).await?;
    let mut options = ReplicaOptions::new(&database_url, &hook.url("/hook"), "languages");
    let cache = compile_cache_dir();
    options.extra_args = vec!["--policy-compile-cache".into(), cache.display().to_string()];
    let replica = Replica::start(&options).await;
    let uploaded = replica.put_policy(wasm.clone()).await;
    let policy = replica.policy().await;
    ensure!(
        policy["revision"] == uploaded["revision"] && policy["policy"]["name"] != "nomos-default",
        "the upload is not active: {uploaded} / {policy}"
    );

    let (session, execution) = (Uuid::new_v4(), Uuid::new_v4());
    replica
        .fail_in_open_window(session, execution, "ssh: connection refused")
        .await;
    let requests = tokio::time::timeout(PATIENCE, hook.wait_for_requests(1))
        .await
        .map_err(|_| anyhow!("no continuation; serve said:\n{}", replica.stderr()))?;
    let event: ContinuationEvent =
        serde_json::from_slice(&requests[0].body).context("the webhook body is a continuation")?;
    let note = &event.data.note;
    let line = format!("execution {execution} failed: ssh: connection refused");
    ensure!(
        note.lines().next() == Some(line.as_str()),
        "the note does not open with {line:?}:\n{note}"
    );
    let builtin_soul = PolicyRuntime::new(Limits::default())?.soul().value?;
    ensure!(
        event.data.soul == builtin_soul,
        "the SOUL differs from the default policy's: {}",
        event.data.soul
    );
    Ok(())
}

/// The production limits, with the tests' compile cache.
fn cached_limits() -> Limits {
    Limits::default().with_compile_cache(Some(compile_cache_dir()))
}

fn on_runtime(test: impl std::future::Future<Output = Result<()>>) -> Result<()> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?
        .block_on(test)
}

#[test]
fn python_passes_every_golden_case_through_the_host() -> Result<()> {
    every_golden_case_through_the_host(&PYTHON)
}

#[test]
fn javascript_passes_every_golden_case_through_the_host() -> Result<()> {
    every_golden_case_through_the_host(&JS)
}

#[test]
fn python_passes_policy_check() -> Result<()> {
    passes_policy_check(&PYTHON)
}

#[test]
fn javascript_passes_policy_check() -> Result<()> {
    passes_policy_check(&JS)
}

#[test]
fn python_passes_every_golden_case_under_wasmtime_run() -> Result<()> {
    every_golden_case_under_wasmtime_run(&PYTHON)
}

#[test]
fn javascript_passes_every_golden_case_under_wasmtime_run() -> Result<()> {
    every_golden_case_under_wasmtime_run(&JS)
}

#[test]
fn python_serves_the_end_to_end_flow() -> Result<()> {
    on_runtime(serves_the_end_to_end_flow(&PYTHON))
}

#[test]
fn javascript_serves_the_end_to_end_flow() -> Result<()> {
    on_runtime(serves_the_end_to_end_flow(&JS))
}
