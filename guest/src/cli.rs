//! The commands of `wasmtime run policy.wasm CMD < input`.
//!
//! Each command reads all of stdin, calls the same function the typed export
//! calls, and writes one JSON document (or, for `soul`, the text) and a
//! newline. Bad input is an [`CliError`]: the caller prints its one line on
//! stderr and exits with status 2.

use std::fmt;
use std::io::Read;

use crate::types::DecisionInput;

/// Stdin is refused beyond this size, so a runaway pipe cannot exhaust the
/// guest's memory.
pub const MAX_INPUT: usize = 4 * 1024 * 1024;

/// The exit status for bad input or bad usage.
pub const EXIT_BAD_INPUT: i32 = 2;

/// Usage, printed for a missing or unknown command.
pub const USAGE: &str =
    "usage: policy.wasm <extract-links|classify|decide|decide-batch|soul|describe> < input";

/// Why a command could not run; displayed as one line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CliError(pub String);

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "error: {}", self.0.replace('\n', " "))
    }
}

impl std::error::Error for CliError {}

/// A command a policy author can run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    /// `extract-links`: the execution ids and protocol tasks a tool result
    /// (stdin) names.
    ExtractLinks,
    /// `classify`: whether the status on stdin is terminal.
    Classify,
    /// `decide`: one decision for the decision input on stdin.
    Decide,
    /// `decide-batch`: one decision per input of a JSON array.
    DecideBatch,
    /// `soul`: the text appended to the agent's system prompt.
    Soul,
    /// `describe`: the policy's name, version and contract.
    Describe,
}

impl Command {
    /// Parses a command name.
    pub fn parse(name: &str) -> Result<Self, CliError> {
        Ok(match name {
            "extract-links" => Command::ExtractLinks,
            "classify" => Command::Classify,
            "decide" => Command::Decide,
            "decide-batch" => Command::DecideBatch,
            "soul" => Command::Soul,
            "describe" => Command::Describe,
            other => return Err(CliError(format!("unknown command {other:?}; {USAGE}"))),
        })
    }

    /// True for the commands that read stdin.
    pub fn reads_input(self) -> bool {
        !matches!(self, Command::Soul | Command::Describe)
    }
}

/// Reads stdin as UTF-8, refusing more than [`MAX_INPUT`] bytes.
pub fn read_input(reader: impl Read) -> Result<String, CliError> {
    let mut bytes = Vec::new();
    reader
        .take(MAX_INPUT as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| CliError(format!("cannot read stdin: {e}")))?;
    if bytes.len() > MAX_INPUT {
        return Err(CliError(format!("input is larger than {MAX_INPUT} bytes")));
    }
    String::from_utf8(bytes).map_err(|e| CliError(format!("input is not UTF-8: {e}")))
}

/// Parses one decision input from its JSON form.
pub fn parse_decision_input(json: &str) -> Result<DecisionInput, CliError> {
    serde_json::from_str(json).map_err(|e| CliError(format!("invalid decision input: {e}")))
}

/// Parses a JSON array of decision inputs.
pub fn parse_decision_inputs(json: &str) -> Result<Vec<DecisionInput>, CliError> {
    serde_json::from_str(json).map_err(|e| CliError(format!("invalid decision inputs: {e}")))
}

/// Runs one command on its input and returns what goes to stdout.
pub fn run(command: Command, input: &str) -> Result<String, CliError> {
    let json = match command {
        Command::ExtractLinks => to_json(&crate::links::extract_links(input)),
        Command::Classify => to_json(&crate::classify::classify(input)),
        Command::Decide => to_json(&crate::decide::decide(&parse_decision_input(input)?)),
        Command::DecideBatch => {
            to_json(&crate::decide::decide_batch(&parse_decision_inputs(input)?))
        }
        Command::Soul => return Ok(crate::soul::soul().to_string()),
        Command::Describe => to_json(&crate::describe()),
    };
    Ok(json + "\n")
}

/// Serialises an answer; the contract's types always serialise.
pub fn to_json<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_else(|e| format!("{{\"error\":{:?}}}", e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_inputs_are_one_line_errors() {
        let cases = [
            ("{", "invalid decision input"),
            ("{\"now\":\"yesterday\"}", "invalid timestamp"),
            (
                "{\"now\":\"2026-11-30T04:00:00Z\"}",
                "missing field `execution`",
            ),
        ];
        for (input, expected) in cases {
            let err = run(Command::Decide, input).unwrap_err();
            let line = err.to_string();
            assert!(line.contains(expected), "{line}");
            assert!(!line.contains('\n'));
        }
    }

    #[test]
    fn oversized_input_is_refused() {
        let big = vec![b'a'; MAX_INPUT + 1];
        assert!(read_input(&big[..]).unwrap_err().0.contains("larger than"));
    }

    #[test]
    fn unknown_command_names_the_usage() {
        assert!(Command::parse("frobnicate")
            .unwrap_err()
            .0
            .contains("usage"));
    }
}
