//! Which status strings are terminal.
//!
//! Runtimes spell states differently, so the match is case-insensitive,
//! ignores surrounding whitespace, and accepts the usual synonyms. Anything
//! unknown is treated as still running: waiting too long is visible and
//! harmless, continuing too early would feed the agent a result that does
//! not exist yet.

use crate::types::{Outcome, StatusClass};

/// Classifies a runtime's status string.
pub fn classify(status: &str) -> StatusClass {
    let status = status.trim().to_ascii_lowercase();
    let outcome = match status.as_str() {
        "completed" | "complete" | "succeeded" | "success" | "done" => Outcome::Completed,
        "failed" | "failure" | "error" | "errored" | "timed_out" | "timeout" => Outcome::Failed,
        "cancelled" | "canceled" | "aborted" => Outcome::Cancelled,
        _ => return StatusClass::NonTerminal,
    };
    StatusClass::Terminal(outcome)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_synonyms_and_ignores_case_and_whitespace() {
        assert_eq!(
            classify(" Succeeded\n"),
            StatusClass::Terminal(Outcome::Completed)
        );
        assert_eq!(
            classify("TIMED_OUT"),
            StatusClass::Terminal(Outcome::Failed)
        );
        assert_eq!(
            classify("canceled"),
            StatusClass::Terminal(Outcome::Cancelled)
        );
    }

    #[test]
    fn unknown_and_running_states_are_not_terminal() {
        for status in [
            "running",
            "queued",
            "in_progress",
            "",
            "finished?",
            "complete d",
        ] {
            assert_eq!(classify(status), StatusClass::NonTerminal, "{status}");
        }
    }
}
