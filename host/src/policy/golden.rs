//! Golden cases: a policy's answers pinned in files, checked on every
//! build and before a candidate is activated.
//!
//! A golden directory holds one folder per command (`extract-links`,
//! `classify`, `decide`, `decide-batch`, `soul`, `describe`). In each, a
//! case is `NAME.in` (exactly what `wasmtime run policy.wasm COMMAND` reads
//! on stdin) and either `NAME.out` (exactly what it prints) or `NAME.err`
//! (the one line it prints on stderr when it exits with status 2). The
//! typed path below gives the same bytes through the typed exports, so the
//! two paths can be compared with each other and with the files; the form
//! of those bytes is [`super::codec`].

use std::path::{Path, PathBuf};

use super::codec::{self, CodecError, Command, EXIT_BAD_INPUT};
use super::compiled::CompiledPolicy;
use super::eval;
use super::sandbox::Sandbox;

#[cfg(feature = "test-support")]
/// The commands with a folder in a golden directory, in run order.
pub const COMMANDS: [&str; 6] = {
    let mut names = [""; 6];
    let mut i = 0;
    while i < names.len() {
        names[i] = Command::ALL[i].name();
        i += 1;
    }
    names
};

/// What a case expects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expected {
    /// The exact stdout of a successful run.
    Stdout(String),
    /// The stderr line of a run that exits with status 2.
    Error(String),
}

/// One golden case.
#[derive(Debug, Clone)]
pub struct GoldenCase {
    /// `COMMAND/NAME`, for reports.
    pub name: String,
    /// The command it runs (its folder).
    pub command: Command,
    /// What is fed on stdin.
    pub input: String,
    /// The answer, or the error, it must give.
    pub expected: Expected,
    #[cfg_attr(not(feature = "test-support"), allow(dead_code))]
    /// The `.in` file, so a runner can feed it to another process and
    /// `BLESS=1` can rewrite the expectation next to it.
    pub input_path: PathBuf,
}

/// What one run of a command printed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaseOutput {
    /// The exit status.
    pub exit_code: i32,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
}

/// Why a golden directory could not be read.
#[derive(Debug, thiserror::Error)]
pub enum GoldenError {
    #[error("cannot read {path}: {source}")]
    /// A file or folder could not be read.
    Io {
        /// Which.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    #[error("{0}: has neither a .out nor a .err expectation (run with BLESS=1 to create one)")]
    /// A case without an expected answer.
    NoExpectation(PathBuf),
    #[error("{0} holds no golden cases")]
    /// A golden folder with no cases.
    Empty(PathBuf),
}

fn read(path: &Path) -> Result<String, GoldenError> {
    std::fs::read_to_string(path).map_err(|source| GoldenError::Io {
        path: path.to_path_buf(),
        source,
    })
}

/// Loads every case under `dir`, sorted by name. With `allow_missing`, a
/// case without an expectation is loaded with an empty one (for blessing).
pub fn load_dir(dir: &Path, allow_missing: bool) -> Result<Vec<GoldenCase>, GoldenError> {
    let mut cases = Vec::new();
    for command in Command::ALL {
        let command_name = command.name();
        let folder = dir.join(command_name);
        if !folder.is_dir() {
            continue;
        }
        let entries = std::fs::read_dir(&folder).map_err(|source| GoldenError::Io {
            path: folder.clone(),
            source,
        })?;
        let mut inputs: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "in"))
            .collect();
        inputs.sort();
        for input_path in inputs {
            let out = input_path.with_extension("out");
            let err = input_path.with_extension("err");
            let expected = if out.exists() {
                Expected::Stdout(read(&out)?)
            } else if err.exists() {
                Expected::Error(read(&err)?)
            } else if allow_missing {
                Expected::Stdout(String::new())
            } else {
                return Err(GoldenError::NoExpectation(input_path));
            };
            let stem = input_path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            cases.push(GoldenCase {
                name: format!("{command_name}/{stem}"),
                command,
                input: read(&input_path)?,
                expected,
                input_path,
            });
        }
    }
    if cases.is_empty() {
        return Err(GoldenError::Empty(dir.to_path_buf()));
    }
    Ok(cases)
}

/// Runs a case through the typed exports, printing what the guest's own
/// command line would print.
pub(crate) fn run_case(
    sandbox: &Sandbox,
    policy: &CompiledPolicy,
    case: &GoldenCase,
) -> CaseOutput {
    match typed_output(sandbox, policy, case.command, &case.input) {
        Ok(stdout) => CaseOutput {
            exit_code: 0,
            stdout,
            stderr: String::new(),
        },
        Err(e) => CaseOutput {
            exit_code: EXIT_BAD_INPUT,
            stdout: String::new(),
            stderr: e.stderr_line(),
        },
    }
}

fn typed_output(
    sandbox: &Sandbox,
    policy: &CompiledPolicy,
    command: Command,
    input: &str,
) -> Result<String, CodecError> {
    let failed = |e: eval::PolicyFailure| CodecError::Policy(e.to_string());
    match command {
        Command::ExtractLinks => {
            codec::answer_line(&eval::extract_links(sandbox, policy, input).map_err(failed)?)
        }
        Command::Classify => {
            codec::answer_line(&eval::classify(sandbox, policy, input).map_err(failed)?)
        }
        Command::Decide { batch: false } => {
            let one = [codec::decision_input(input)?];
            // `decide_batch` answers exactly one decision per input.
            let decisions = eval::decide_batch(sandbox, policy, &one).map_err(failed)?;
            codec::answer_line(&decisions[0])
        }
        Command::Decide { batch: true } => {
            let inputs = codec::decision_inputs(input)?;
            codec::answer_line(&eval::decide_batch(sandbox, policy, &inputs).map_err(failed)?)
        }
        // The SOUL is text, printed as it is.
        Command::Soul => eval::soul(sandbox, policy).map_err(failed),
        Command::Describe => codec::answer_line(&eval::describe(sandbox, policy).map_err(failed)?),
    }
}

/// What a case is held to beyond the default policy's exact bytes.
///
/// A policy in another language keeps every answer of the default one but
/// names itself, so `describe` is judged by its contract alone; and its own
/// command line (`wasmtime run`) words a bad-input error its own way, so
/// there an error is judged by the contract of the command line: a failing
/// exit status and one line on stderr starting `error:`. On the typed path the
/// host parses the input, so the wording of a bad-input error is the host's
/// whatever the policy's language.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Judging {
    /// `describe` may name another policy (`policy test --own-describe`).
    pub own_describe: bool,
    /// A bad-input error may be worded differently.
    pub own_error_wording: bool,
}

impl Judging {
    /// `None` if `output` meets `case` under these rules, else a
    /// one-paragraph diff.
    pub fn mismatch(&self, case: &GoldenCase, output: &CaseOutput) -> Option<String> {
        match &case.expected {
            Expected::Stdout(want) if self.own_describe && case.command == Command::Describe => {
                describe_mismatch(case, want, output)
            }
            Expected::Error(_) if self.own_error_wording => error_line_mismatch(case, output),
            _ => mismatch(case, output),
        }
    }
}

/// `describe` of a policy that names itself: valid policy-info with a name
/// and version of its own and the contract the golden file names.
fn describe_mismatch(case: &GoldenCase, want: &str, output: &CaseOutput) -> Option<String> {
    let field = |text: &str, key: &str| -> Option<String> {
        let value: serde_json::Value = serde_json::from_str(text).ok()?;
        Some(value.get(key)?.as_str()?.to_owned())
    };
    let named = ["name", "version"]
        .iter()
        .all(|key| field(&output.stdout, key).is_some_and(|v| !v.is_empty()));
    let contract = field(&output.stdout, "contract");
    if output.exit_code == 0 && named && contract.is_some() && contract == field(want, "contract") {
        return None;
    }
    Some(format!(
        "{}: expected a name, a version and the contract of {:?}, got exit {} with stdout {:?}",
        case.name,
        clip(want),
        output.exit_code,
        clip(&output.stdout),
    ))
}

/// A bad-input case under a policy's own command line: a failing exit
/// status, no answer, one `error:` line. (Under `wasmtime run` a WASI 0.2
/// program exits 0 or 1 only, so the status is not pinned to 2.)
fn error_line_mismatch(case: &GoldenCase, output: &CaseOutput) -> Option<String> {
    let stderr = output.stderr.trim_end();
    if output.exit_code != 0
        && output.stdout.is_empty()
        && stderr.starts_with("error:")
        && !stderr.contains('\n')
    {
        return None;
    }
    Some(format!(
        "{}: expected a failing exit and one `error:` line on stderr, got exit {} with stdout {:?} and stderr {:?}",
        case.name,
        output.exit_code,
        clip(&output.stdout),
        clip(stderr),
    ))
}

/// `None` if `output` is what `case` expects, else a one-paragraph diff.
pub fn mismatch(case: &GoldenCase, output: &CaseOutput) -> Option<String> {
    let (want_code, want, got) = match &case.expected {
        Expected::Stdout(s) => (0, s.as_str(), output.stdout.as_str()),
        Expected::Error(s) => (EXIT_BAD_INPUT, s.trim_end(), output.stderr.trim_end()),
    };
    if output.exit_code == want_code && want == got {
        return None;
    }
    Some(format!(
        "{}: expected exit {want_code} and {:?}, got exit {} with stdout {:?} and stderr {:?}",
        case.name,
        clip(want),
        output.exit_code,
        clip(&output.stdout),
        clip(output.stderr.trim_end()),
    ))
}

fn clip(text: &str) -> String {
    const SHOWN: usize = 400;
    if text.len() <= SHOWN {
        return text.to_string();
    }
    let cut = (0..=SHOWN)
        .rev()
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(0);
    format!("{}… ({} bytes)", &text[..cut], text.len())
}

#[cfg(feature = "test-support")]
/// Rewrites a case's expectation from `output` (`BLESS=1`).
pub fn bless(case: &GoldenCase, output: &CaseOutput) -> Result<(), GoldenError> {
    let (keep, remove, text) = if output.exit_code == 0 {
        ("out", "err", output.stdout.as_str())
    } else {
        ("err", "out", output.stderr.as_str())
    };
    let path = case.input_path.with_extension(keep);
    std::fs::write(&path, text).map_err(|source| GoldenError::Io {
        path: path.clone(),
        source,
    })?;
    let stale = case.input_path.with_extension(remove);
    if stale.exists() {
        std::fs::remove_file(&stale).map_err(|source| GoldenError::Io {
            path: stale,
            source,
        })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn case(command: Command, expected: Expected) -> GoldenCase {
        GoldenCase {
            name: format!("{}/case", command.name()),
            command,
            input: String::new(),
            expected,
            input_path: PathBuf::from("case.in"),
        }
    }

    fn output(exit_code: i32, stdout: &str, stderr: &str) -> CaseOutput {
        CaseOutput {
            exit_code,
            stdout: stdout.into(),
            stderr: stderr.into(),
        }
    }

    const RUST: &str =
        r#"{"name":"nomos-default","version":"0.1.0","contract":"nomos:continuation@0.1.0"}"#;

    #[test]
    fn an_own_describe_must_keep_the_contract_and_name_itself() {
        let describe = case(Command::Describe, Expected::Stdout(RUST.into()));
        let own = Judging {
            own_describe: true,
            own_error_wording: false,
        };
        let python = r#"{"name":"nomos-default-python","version":"0.1.0","contract":"nomos:continuation@0.1.0"}"#;
        assert_eq!(own.mismatch(&describe, &output(0, python, "")), None);
        assert!(Judging::default()
            .mismatch(&describe, &output(0, python, ""))
            .is_some());
        for bad in [
            r#"{"name":"p","version":"0.1.0","contract":"nomos:continuation@0.2.0"}"#,
            r#"{"name":"","version":"0.1.0","contract":"nomos:continuation@0.1.0"}"#,
            r#"{"name":"p","contract":"nomos:continuation@0.1.0"}"#,
            "not json",
        ] {
            assert!(
                own.mismatch(&describe, &output(0, bad, "")).is_some(),
                "{bad}"
            );
        }
    }

    #[test]
    fn an_own_error_wording_still_needs_a_failure_and_one_error_line() {
        let bad_input = case(
            Command::Classify,
            Expected::Error("error: input is not UTF-8".into()),
        );
        let own = Judging {
            own_describe: false,
            own_error_wording: true,
        };
        assert_eq!(
            own.mismatch(&bad_input, &output(1, "", "error: bad bytes\n")),
            None
        );
        for (code, stdout, stderr) in [
            (0, "", "error: bad bytes"),
            (1, "{}", "error: bad bytes"),
            (1, "", "Traceback: bad bytes"),
            (1, "", "error: bad\nbytes"),
        ] {
            assert!(
                own.mismatch(&bad_input, &output(code, stdout, stderr))
                    .is_some(),
                "{code} {stdout:?} {stderr:?}"
            );
        }
    }
}
