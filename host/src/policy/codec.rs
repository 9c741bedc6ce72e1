//! The command-line form of a policy's exports, as the host reads and
//! writes it: what `wasmtime run policy.wasm COMMAND` takes on stdin and
//! prints, which golden files pin and `nomos-continue policy decide|extract`
//! reproduce.
//!
//! Why the host owns a copy of this form rather than borrowing the default
//! guest's: any policy, in any language, is held to these files, so the
//! host must be able to read them without linking one particular policy.
//! The form is plain JSON of [`super::types`] (a decision input in, an
//! answer out), one document and a newline per run; bad input is one line
//! on stderr, `error: …`, and exit status [`EXIT_BAD_INPUT`].

use std::io::Read;

use serde::Serialize;

use super::types::DecisionInput;

/// Input larger than this is refused, as a guest refuses it, so a runaway
/// pipe cannot make the host read without end.
pub const MAX_INPUT: usize = 4 << 20;

/// The exit status of a run that got bad input.
pub const EXIT_BAD_INPUT: i32 = 2;

/// A policy command, named as on the command line. `decide` and
/// `decide-batch` are one export to the host (every decision goes through
/// `decide-batch`); they differ only in whether the input and the answer
/// are one document or an array of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    /// The execution ids and protocol tasks a tool result names.
    ExtractLinks,
    /// Whether a status is terminal.
    Classify,
    /// One decision (`decide`), or one per input of an array
    /// (`decide-batch`).
    Decide {
        /// The input and the answer are arrays.
        batch: bool,
    },
    /// The SOUL text.
    Soul,
    /// The policy's name, version and contract.
    Describe,
}

impl Command {
    /// Every command, in the order golden folders are run.
    pub const ALL: [Command; 6] = [
        Command::ExtractLinks,
        Command::Classify,
        Command::Decide { batch: false },
        Command::Decide { batch: true },
        Command::Soul,
        Command::Describe,
    ];

    /// The command's name, which is also its golden folder's.
    pub const fn name(self) -> &'static str {
        match self {
            Command::ExtractLinks => "extract-links",
            Command::Classify => "classify",
            Command::Decide { batch: false } => "decide",
            Command::Decide { batch: true } => "decide-batch",
            Command::Soul => "soul",
            Command::Describe => "describe",
        }
    }
}

/// Why a run had bad input. Displayed without the `error: ` prefix, which
/// [`CodecError::stderr_line`] adds for the command-line form.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CodecError {
    #[error("cannot read stdin: {0}")]
    /// Standard input could not be read.
    Read(String),
    #[error("input is larger than {MAX_INPUT} bytes")]
    /// The input is over the size limit.
    TooLarge,
    #[error("input is not UTF-8: {0}")]
    /// The input is not text.
    NotUtf8(String),
    #[error("invalid decision input: {0}")]
    /// The decision input is not valid JSON of the contract.
    Input(String),
    #[error("invalid decision inputs: {0}")]
    /// The batch of decision inputs is not a valid JSON array of them.
    Inputs(String),
    /// The policy failed the call (typed path only: under `wasmtime run`
    /// the same failure is a trap).
    #[error("policy failed: {0}")]
    Policy(String),
    #[error("cannot write the answer as JSON: {0}")]
    /// The answer could not be written as JSON.
    Output(String),
}

impl CodecError {
    /// What a run prints on stderr for this error: one line, newline
    /// included, as the golden `.err` files hold it.
    pub fn stderr_line(&self) -> String {
        format!("error: {}\n", self.to_string().replace('\n', " "))
    }
}

/// Reads all of `reader` as UTF-8, refusing more than [`MAX_INPUT`] bytes.
pub fn read_input(reader: impl Read) -> Result<String, CodecError> {
    let mut bytes = Vec::new();
    let mut limited = reader.take(MAX_INPUT as u64 + 1);
    limited
        .read_to_end(&mut bytes)
        .map_err(|e| CodecError::Read(e.to_string()))?;
    if bytes.len() > MAX_INPUT {
        return Err(CodecError::TooLarge);
    }
    String::from_utf8(bytes).map_err(|e| CodecError::NotUtf8(e.to_string()))
}

/// One decision input (`decide`).
pub fn decision_input(json: &str) -> Result<DecisionInput, CodecError> {
    serde_json::from_str(json).map_err(|e| CodecError::Input(e.to_string()))
}

/// A JSON array of decision inputs (`decide-batch`).
pub fn decision_inputs(json: &str) -> Result<Vec<DecisionInput>, CodecError> {
    serde_json::from_str(json).map_err(|e| CodecError::Inputs(e.to_string()))
}

/// An answer as one line of JSON, newline included.
pub fn answer_line<T: Serialize + ?Sized>(answer: &T) -> Result<String, CodecError> {
    let mut line = serde_json::to_string(answer).map_err(|e| CodecError::Output(e.to_string()))?;
    line.push('\n');
    Ok(line)
}

/// How the decision log writes a policy's failure where an answer would
/// be: `{"error": …}`, one line without its newline.
pub fn failure_line(reason: &str) -> String {
    serde_json::json!({ "error": reason }).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_decision_inputs_are_one_line_errors() {
        for (input, wanted) in [
            ("{", "error: invalid decision input"),
            ("{\"now\":\"yesterday\"}", "invalid timestamp"),
            (
                "{\"now\":\"2026-11-30T04:00:00Z\"}",
                "missing field `execution`",
            ),
        ] {
            let line = decision_input(input).map(drop).unwrap_err().stderr_line();
            assert!(line.contains(wanted), "{line}");
            assert_eq!(line.matches('\n').count(), 1, "{line}");
        }
    }

    #[test]
    fn oversized_input_is_refused() {
        let big = vec![b'a'; MAX_INPUT + 1];
        assert_eq!(read_input(&big[..]), Err(CodecError::TooLarge));
    }

    #[test]
    fn names_round_trip_through_all() {
        let names: Vec<&str> = Command::ALL.iter().map(|c| c.name()).collect();
        assert_eq!(
            names,
            [
                "extract-links",
                "classify",
                "decide",
                "decide-batch",
                "soul",
                "describe"
            ]
        );
    }
}
