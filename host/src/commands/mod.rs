//! The subcommands of the `nomos-continue` binary, one module each; `main`
//! only parses arguments and calls these.

use std::process::ExitCode;

use clap::Args;

pub mod migrate;
pub mod policy;
pub mod replay;
pub mod retry;
pub mod serve;
pub mod signing;
pub mod status;

/// The database flag every subcommand that opens the store takes.
#[derive(Args)]
pub struct DbArgs {
    /// postgres://… or sqlite:FILE; the default is an SQLite file here.
    #[arg(long, env = "DATABASE_URL", default_value = crate::server::DEFAULT_DATABASE_URL)]
    pub database_url: String,
}

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
