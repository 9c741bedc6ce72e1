//! `nomos-continue`: parses the command line and hands over to the library.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use nomos_continue::commands;

/// Auto-continuation for agent runtimes: re-invokes the agent when its
/// asynchronous executions finish, while the operator's approval is open.
#[derive(Parser)]
#[command(name = "nomos-continue", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Work with continuation policies (WebAssembly components).
    #[command(subcommand)]
    Policy(PolicyCmd),
}

#[derive(Subcommand)]
enum PolicyCmd {
    /// Validate a policy: compile, type-check against the contract, run the
    /// probes under production limits. Exits non-zero with the reasons.
    Check {
        /// The policy component (.wasm).
        wasm: PathBuf,
    },
    /// Run golden cases (the tests/golden layout) against a policy.
    Test {
        /// The policy component (.wasm).
        wasm: PathBuf,
        /// The golden directory.
        #[arg(default_value = "tests/golden")]
        golden_dir: PathBuf,
    },
    /// Decide one execution: decision input JSON on stdin, decision JSON out.
    Decide {
        /// The policy component (.wasm).
        wasm: PathBuf,
    },
    /// Extract execution ids from a tool result on stdin; JSON array out.
    Extract {
        /// The policy component (.wasm).
        wasm: PathBuf,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Cmd::Policy(PolicyCmd::Check { wasm }) => commands::policy::check(&wasm),
        Cmd::Policy(PolicyCmd::Test { wasm, golden_dir }) => commands::policy::test(&wasm, &golden_dir),
        Cmd::Policy(PolicyCmd::Decide { wasm }) => commands::policy::decide(&wasm),
        Cmd::Policy(PolicyCmd::Extract { wasm }) => commands::policy::extract(&wasm),
    };
    commands::exit_code(result)
}
