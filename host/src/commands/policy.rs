//! `nomos-continue policy check|test|decide|extract`: a policy author's
//! tools, running a policy under the same limits as production.

use std::path::Path;
use std::process::ExitCode;

use anyhow::Result;

/// `policy check <wasm>`.
pub fn check(_wasm: &Path) -> Result<ExitCode> {
    anyhow::bail!("not implemented yet")
}

/// `policy test <wasm> [golden-dir]`.
pub fn test(_wasm: &Path, _golden_dir: &Path) -> Result<ExitCode> {
    anyhow::bail!("not implemented yet")
}

/// `policy decide <wasm>`.
pub fn decide(_wasm: &Path) -> Result<ExitCode> {
    anyhow::bail!("not implemented yet")
}

/// `policy extract <wasm>`.
pub fn extract(_wasm: &Path) -> Result<ExitCode> {
    anyhow::bail!("not implemented yet")
}
