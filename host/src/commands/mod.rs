//! The subcommands of the `nomos-continue` binary, one module each; `main`
//! only parses arguments and calls these.

use std::process::ExitCode;

mod log_agent;
pub mod migrate;
pub mod policy;
pub mod retry;
pub mod serve;
pub mod status;

/// Exit status for bad input, as the guest's own command line uses.
pub const EXIT_BAD_INPUT: u8 = 2;

/// Maps a command's result to the process status, printing the error chain
/// on one line.
pub fn exit_code(result: anyhow::Result<ExitCode>) -> ExitCode {
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(EXIT_BAD_INPUT)
        }
    }
}
