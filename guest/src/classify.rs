//! Which status strings are terminal, and which wait for a person.
//!
//! Runtimes spell states differently, so the match is case-insensitive,
//! ignores surrounding whitespace, and accepts the usual synonyms, among
//! them the states of MCP Tasks (`working`, `input_required`, `completed`,
//! `failed`, `cancelled`) and of A2A (0.3's `input-required`,
//! `auth-required`, `rejected`, `canceled`; 1.0's `TASK_STATE_*`). Anything
//! unknown is treated as still running: waiting too long is visible and
//! harmless, continuing too early would feed the agent a result that does
//! not exist yet.

use crate::types::{Outcome, PersonNeed, StatusClass};

/// A2A 1.0 writes each state as `TASK_STATE_<NAME>`; the name is classified
/// like the bare word.
const A2A_PREFIX: &str = "task_state_";

/// Classifies a runtime's status string.
pub fn classify(status: &str) -> StatusClass {
    let status = status.trim().to_ascii_lowercase();
    let word = status.strip_prefix(A2A_PREFIX).unwrap_or(&status);
    let outcome = match word {
        "completed" | "complete" | "succeeded" | "success" | "done" => Outcome::Completed,
        "failed" | "failure" | "error" | "errored" | "timed_out" | "timeout" | "rejected" => {
            Outcome::Failed
        }
        "cancelled" | "canceled" | "aborted" => Outcome::Cancelled,
        "input_required" | "input-required" => {
            return StatusClass::AwaitingPerson(PersonNeed::Input)
        }
        "auth_required" | "auth-required" => {
            return StatusClass::AwaitingPerson(PersonNeed::Authorization)
        }
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
    fn maps_the_protocols_task_states() {
        let input = StatusClass::AwaitingPerson(PersonNeed::Input);
        let auth = StatusClass::AwaitingPerson(PersonNeed::Authorization);
        for (status, class) in [
            ("completed", StatusClass::Terminal(Outcome::Completed)),
            (
                "TASK_STATE_COMPLETED",
                StatusClass::Terminal(Outcome::Completed),
            ),
            ("rejected", StatusClass::Terminal(Outcome::Failed)),
            (
                "TASK_STATE_REJECTED",
                StatusClass::Terminal(Outcome::Failed),
            ),
            ("TASK_STATE_FAILED", StatusClass::Terminal(Outcome::Failed)),
            (
                "TASK_STATE_CANCELED",
                StatusClass::Terminal(Outcome::Cancelled),
            ),
            (
                "task_state_cancelled",
                StatusClass::Terminal(Outcome::Cancelled),
            ),
            ("input_required", input),
            ("input-required", input),
            ("TASK_STATE_INPUT_REQUIRED", input),
            ("auth_required", auth),
            ("Auth-Required", auth),
            ("TASK_STATE_AUTH_REQUIRED", auth),
            ("working", StatusClass::NonTerminal),
            ("submitted", StatusClass::NonTerminal),
            ("unknown", StatusClass::NonTerminal),
            ("TASK_STATE_WORKING", StatusClass::NonTerminal),
            ("TASK_STATE_SUBMITTED", StatusClass::NonTerminal),
            ("TASK_STATE_UNSPECIFIED", StatusClass::NonTerminal),
            ("TASK_STATE_", StatusClass::NonTerminal),
        ] {
            assert_eq!(classify(status), class, "{status}");
        }
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
            "input required",
        ] {
            assert_eq!(classify(status), StatusClass::NonTerminal, "{status}");
        }
    }
}
