//! The default policy as a component: the typed `nomos:continuation/policy`
//! exports for the host, and `main` (exported as `wasi:cli/run`) for
//! `wasmtime run policy.wasm CMD < input`. Built natively, `main` is the
//! same command-line tool.

#[cfg(target_arch = "wasm32")]
mod component;

use nomos_policy_default::cli::{self, CliError, Command};

fn main() {
    match run() {
        Ok(output) => print!("{output}"),
        Err(err) => {
            eprintln!("{err}");
            std::process::exit(cli::EXIT_BAD_INPUT);
        }
    }
}

fn run() -> Result<String, CliError> {
    let mut args = std::env::args().skip(1);
    let name = args
        .next()
        .ok_or_else(|| CliError(cli::USAGE.to_string()))?;
    if let Some(extra) = args.next() {
        return Err(CliError(format!(
            "unexpected argument {extra:?}; {}",
            cli::USAGE
        )));
    }
    let command = Command::parse(&name)?;
    let input = if command.reads_input() {
        cli::read_input(std::io::stdin().lock())?
    } else {
        String::new()
    };
    cli::run(command, &input)
}
