//! Wait, continue or drop: the decision for one finished execution.
//!
//! The rules, in order: an execution that is not terminal (running, or
//! waiting for a person, whom the host tells) is waited for; a
//! terminal one is dropped when the session has no open assent window (the
//! operator's approval is what lets the system act on its own), when the
//! window has already caused [`CONTINUATION_CAP`] continuations (the loop
//! guard), or when delivery has failed [`MAX_ATTEMPTS`] times; otherwise the
//! agent is continued with the note.

use crate::classify::classify;
use crate::note::format_note;
use crate::types::{Decision, DecisionInput, StatusClass};

/// Continuations one assent window may cause; a session that keeps failing
/// and retrying stops here and waits for the operator.
pub const CONTINUATION_CAP: u32 = 20;

/// Failed deliveries after which a continuation is given up.
pub const MAX_ATTEMPTS: u32 = 5;

/// Decides about one execution.
pub fn decide(input: &DecisionInput) -> Decision {
    let StatusClass::Terminal(outcome) = classify(&input.execution.status) else {
        return Decision::Wait;
    };
    let session = &input.session;
    let Some(window) = &session.window else {
        return drop("assent window closed: the session has no approved plan in flight".into());
    };
    if input.now < window.opened_at {
        return drop(format!(
            "assent window closed: it opens at {}",
            window.opened_at.to_rfc3339()
        ));
    }
    if input.now >= window.expires_at {
        return drop(format!(
            "assent window closed: it expired at {}",
            window.expires_at.to_rfc3339()
        ));
    }
    if session.continuations_in_window >= CONTINUATION_CAP {
        return drop(format!(
            "loop guard: {} automatic continuations already in this assent window (cap {CONTINUATION_CAP}); waiting for the operator",
            session.continuations_in_window
        ));
    }
    if input.attempts >= MAX_ATTEMPTS {
        return drop(format!(
            "delivery failed {} times (limit {MAX_ATTEMPTS}); giving up on this continuation",
            input.attempts
        ));
    }
    Decision::Continue {
        note: format_note(&input.execution, outcome, &session.still_running),
    }
}

fn drop(reason: String) -> Decision {
    Decision::Drop { reason }
}

/// Decides about several executions, in order.
pub fn decide_batch(inputs: &[DecisionInput]) -> Vec<Decision> {
    inputs.iter().map(decide).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{ApprovalRoute, Execution, Session, Timestamp, Window};

    fn at(seconds: i64) -> Timestamp {
        Timestamp {
            seconds,
            nanoseconds: 0,
        }
    }

    fn input(status: &str, now: i64, continuations: u32, attempts: u32) -> DecisionInput {
        DecisionInput {
            now: at(now),
            execution: Execution {
                id: "3f2504e0-4f89-11d3-9a0c-0305e82c3301".into(),
                status: status.into(),
                result: "ssh: connection refused".into(),
                finished_at: Some(at(now)),
                task: None,
            },
            session: Session {
                id: "9b1deb4d-3b7d-4bad-9bdd-2b0d7b3dcb6d".into(),
                window: Some(Window {
                    opened_at: at(1000),
                    expires_at: at(2800),
                    route: ApprovalRoute::Button,
                }),
                continuations_in_window: continuations,
                still_running: vec![],
            },
            attempts,
        }
    }

    fn kind(d: &Decision) -> &'static str {
        match d {
            Decision::Wait => "wait",
            Decision::Continue { .. } => "continue",
            Decision::Drop { .. } => "drop",
        }
    }

    #[test]
    fn window_is_half_open() {
        assert_eq!(kind(&decide(&input("failed", 999, 0, 0))), "drop");
        assert_eq!(kind(&decide(&input("failed", 1000, 0, 0))), "continue");
        assert_eq!(kind(&decide(&input("failed", 2799, 0, 0))), "continue");
        assert_eq!(kind(&decide(&input("failed", 2800, 0, 0))), "drop");
    }

    #[test]
    fn loop_guard_and_attempts() {
        assert_eq!(
            kind(&decide(&input("done", 1500, CONTINUATION_CAP - 1, 0))),
            "continue"
        );
        assert_eq!(
            kind(&decide(&input("done", 1500, CONTINUATION_CAP, 0))),
            "drop"
        );
        assert_eq!(
            kind(&decide(&input("done", 1500, 0, MAX_ATTEMPTS - 1))),
            "continue"
        );
        assert_eq!(kind(&decide(&input("done", 1500, 0, MAX_ATTEMPTS))), "drop");
    }

    #[test]
    fn a_person_state_waits_in_an_open_window() {
        for status in ["input-required", "TASK_STATE_AUTH_REQUIRED"] {
            assert_eq!(
                kind(&decide(&input(status, 1500, 0, 0))),
                "wait",
                "{status}"
            );
        }
    }

    #[test]
    fn running_waits_even_without_a_window() {
        let mut i = input("running", 5000, 99, 99);
        i.session.window = None;
        assert_eq!(decide(&i), Decision::Wait);
    }
}
