//! `nomos-continue openapi`: prints the API's OpenAPI document, so an
//! integrator can generate a client without running a server, and the
//! committed `docs/openapi.json` is regenerated with one command.

use std::io::Write;
use std::process::ExitCode;

use anyhow::Context;

/// Writes the document to standard output.
pub fn run() -> anyhow::Result<ExitCode> {
    std::io::stdout()
        .write_all(crate::api::openapi_text().as_bytes())
        .context("write the OpenAPI document")?;
    Ok(ExitCode::SUCCESS)
}
