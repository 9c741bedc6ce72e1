//! Policy components and the tools around them, for the tests: distinct
//! valid revisions for tests that swap them, and the real `wasmtime run`
//! command line a policy author uses.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result};
use nomos_continue::policy::golden::{CaseOutput, GoldenCase};
use nomos_continue::policy::BUILTIN_POLICY_WASM;

/// Where the tests keep compiled policies across processes (`serve
/// --policy-compile-cache`): an interpreted policy compiles for tens of
/// seconds, and several tests and tutorials load the same one.
pub fn compile_cache_dir() -> PathBuf {
    let binary = crate::replica::binary();
    let target = binary
        .parent()
        .and_then(Path::parent)
        .map(Path::to_path_buf)
        .unwrap_or_default();
    target.join("policy-compile-cache")
}

/// The `wasmtime` executable: `$WASMTIME`, else the one on PATH.
pub fn wasmtime() -> Result<PathBuf> {
    if let Some(path) = std::env::var_os("WASMTIME") {
        return Ok(path.into());
    }
    let found = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .map(|dir| dir.join("wasmtime"))
        .find(|p| p.is_file());
    found.context("the wasmtime CLI is not installed; run tests/wasmtime-cli.sh (or .ci/run)")
}

/// `wasm` compiled once by `wasmtime compile` into the tests' compile
/// cache, as `name.cwasm`, for [`run_cli`] (which allows precompiled
/// components). Why: `wasmtime run` compiles a component on every run (the
/// CLI is built without its cache), a third of a second for the default
/// policy and seconds for an interpreted one, once per golden case.
pub fn precompiled(wasmtime: &Path, wasm: &Path, name: &str) -> Result<PathBuf> {
    let compiled = compile_cache_dir().with_file_name(format!("{name}.cwasm"));
    if let Some(dir) = compiled.parent() {
        std::fs::create_dir_all(dir).context("the compile cache's folder")?;
    }
    let status = Command::new(wasmtime)
        .arg("compile")
        .arg(wasm)
        .arg("-o")
        .arg(&compiled)
        .status()
        .context("wasmtime compile")?;
    anyhow::ensure!(status.success(), "wasmtime compile {}", wasm.display());
    Ok(compiled)
}

pub fn run_cli(wasmtime: &Path, wasm: &Path, case: &GoldenCase) -> Result<CaseOutput> {
    let mut child = Command::new(wasmtime)
        .arg("run")
        .arg("--allow-precompiled")
        .arg(wasm)
        .arg(command_name(case))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .context("spawn wasmtime")?;
    let mut stdin = child.stdin.take().context("wasmtime stdin")?;
    let input = case.input.clone();
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let output = child.wait_with_output().context("wait for wasmtime")?;
    writer
        .join()
        .map_err(|_| anyhow::anyhow!("stdin writer panicked"))?
        .context("write stdin")?;
    Ok(CaseOutput {
        exit_code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8(output.stdout).context("stdout is UTF-8")?,
        stderr: String::from_utf8(output.stderr).context("stderr is UTF-8")?,
    })
}

pub fn command_name(case: &GoldenCase) -> &str {
    case.name.split('/').next().unwrap_or_default()
}

/// The built-in policy with a custom section named `tag` appended: a new
/// revision (another hash) that behaves exactly like the built-in one and
/// passes the same vetting. Different tags give different revisions.
pub fn variant(tag: &str) -> Vec<u8> {
    let mut body = leb128(tag.len());
    body.extend_from_slice(tag.as_bytes());
    let mut bytes = BUILTIN_POLICY_WASM.to_vec();
    bytes.push(0); // custom section id
    bytes.extend(leb128(body.len()));
    bytes.extend(body);
    bytes
}

/// Unsigned LEB128, the integer encoding of WebAssembly section headers.
fn leb128(mut n: usize) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let byte = (n & 0x7f) as u8;
        n >>= 7;
        if n == 0 {
            out.push(byte);
            return out;
        }
        out.push(byte | 0x80);
    }
}

#[cfg(test)]
mod tests {
    use super::leb128;

    #[test]
    fn leb128_encodes_small_and_multi_byte_values() {
        assert_eq!(leb128(0), [0]);
        assert_eq!(leb128(127), [0x7f]);
        assert_eq!(leb128(128), [0x80, 0x01]);
        assert_eq!(leb128(624_485), [0xe5, 0x8e, 0x26]);
    }
}
