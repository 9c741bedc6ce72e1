//! A decision input in the decision log's compact form, both ways: the
//! parts the log keeps ([`store::InputParts`]) from an input the policy saw,
//! and the input rebuilt from those parts and its execution's result.
//!
//! Why a rebuilt input is checked against the hash recorded with it: the
//! result is read back from the execution, which a retention may have
//! scrubbed since, and an input rebuilt from today's rows that differs from
//! what the policy saw would make `policy replay` judge a candidate on
//! traffic that never happened. A mismatch is refused, and said.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use sha2::{Digest, Sha256};
use uuid::Uuid;

use super::input::cut_middle;
use crate::policy::types as t;
use crate::store::{self, InputParts, LoggedDecision, Recorded, SeenWindow, Store, StoreError};

/// Bytes of SHA-256 the log keeps of an input or an answer: 128 bits tell
/// any two texts apart that are not made to collide, and a collision made
/// on purpose gains nothing (the policy answers what it answers).
const HASH_BYTES: usize = 16;

/// The log's hash of a text.
pub fn log_hash(text: &str) -> Vec<u8> {
    Sha256::digest(text.as_bytes())[..HASH_BYTES].to_vec()
}

/// A time the host handed the policy, back as the store's time.
fn at(ts: t::Timestamp) -> DateTime<Utc> {
    DateTime::from_timestamp(ts.seconds, ts.nanoseconds).unwrap_or(DateTime::UNIX_EPOCH)
}

/// What the log keeps of `input`: its parts and its hash; `result_limit` is
/// the byte limit results were cut to (a cut result is longer than it, the
/// mark of the cut included). `None` when the input cannot be written as
/// JSON, which the policy could not have read either.
pub fn input_parts(input: &t::DecisionInput, result_limit: usize) -> Option<InputParts> {
    let json = serde_json::to_string(input).ok()?;
    let e = &input.execution;
    let s = &input.session;
    Some(InputParts {
        now: at(input.now),
        status: e.status.clone(),
        finished_at: e.finished_at.map(at),
        task: e.task.as_ref().map(|task| {
            let source = match task.protocol {
                t::TaskProtocol::Mcp => store::TaskSource::Mcp,
                t::TaskProtocol::A2a => store::TaskSource::A2a,
            };
            (source, task.id.clone())
        }),
        window: s.window.as_ref().map(|w| SeenWindow {
            opened_at: at(w.opened_at),
            expires_at: at(w.expires_at),
            route: match w.route {
                t::ApprovalRoute::Button => store::Route::Button,
                t::ApprovalRoute::Chat => store::Route::Chat,
                t::ApprovalRoute::Api => store::Route::Api,
            },
        }),
        continuations_in_window: i32::try_from(s.continuations_in_window).unwrap_or(i32::MAX),
        // An id the policy saw that is not a UUID cannot be kept; the
        // hash then refuses the rebuilt input rather than replay another.
        still_running: (s.still_running.iter())
            .filter_map(|id| id.parse().ok())
            .collect(),
        attempts: i32::try_from(input.attempts).unwrap_or(i32::MAX),
        result_cut: (e.result.len() > result_limit)
            .then(|| i32::try_from(result_limit).unwrap_or(i32::MAX)),
        hash: log_hash(&json),
    })
}

/// The input `parts` were kept from, with `result` (the execution's
/// result, whole) cut as it was then.
fn rebuilt(d: &store::NewDecision, parts: &InputParts, result: String) -> t::DecisionInput {
    let result = match parts.result_cut {
        Some(limit) => cut_middle(result, usize::try_from(limit).unwrap_or(usize::MAX)),
        None => result,
    };
    t::DecisionInput {
        now: parts.now.into(),
        execution: t::Execution {
            id: d.execution_id.to_string(),
            status: parts.status.clone(),
            result,
            finished_at: parts.finished_at.map(Into::into),
            task: parts.task.as_ref().map(|(source, id)| t::TaskRef {
                protocol: match source {
                    store::TaskSource::Mcp => t::TaskProtocol::Mcp,
                    store::TaskSource::A2a => t::TaskProtocol::A2a,
                },
                id: id.clone(),
            }),
        },
        session: t::Session {
            id: d.session_id.to_string(),
            window: parts.window.as_ref().map(|w| t::Window {
                opened_at: w.opened_at.into(),
                expires_at: w.expires_at.into(),
                route: w.route.into(),
            }),
            continuations_in_window: u32::try_from(parts.continuations_in_window).unwrap_or(0),
            still_running: parts.still_running.iter().map(Uuid::to_string).collect(),
        },
        attempts: u32::try_from(parts.attempts).unwrap_or(0),
    }
}

/// Why a recorded input cannot be given back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unreadable {
    /// A whole row's JSON does not read as an input.
    Garbled(String),
    /// Rebuilt from its parts, it is not what the policy saw: the
    /// execution's result was purged or differs.
    NotKept,
}

impl std::fmt::Display for Unreadable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Garbled(why) => write!(f, "its recorded input no longer reads ({why})"),
            Self::NotKept => f.write_str(
                "its input is no longer kept (rebuilt from the execution's result, it does not \
                 match the recorded hash: the result was purged or differs)",
            ),
        }
    }
}

/// The inputs `decisions` recorded, in order: a whole row's as written, a
/// compact row's rebuilt with its execution's result (read in one query)
/// and checked against its hash.
pub async fn recorded_inputs(
    store: &Store,
    decisions: &[LoggedDecision],
) -> Result<Vec<Result<t::DecisionInput, Unreadable>>, StoreError> {
    let compact: Vec<Uuid> = (decisions.iter())
        .filter(|d| matches!(d.decision.recorded, Recorded::Compact { .. }))
        .map(|d| d.decision.execution_id)
        .collect();
    let results: HashMap<Uuid, String> = (store.executions(&compact).await?.into_iter())
        .map(|e| (e.id, e.result))
        .collect();
    Ok(decisions
        .iter()
        .map(|d| match &d.decision.recorded {
            Recorded::Whole { input, .. } => crate::policy::codec::decision_input(input)
                .map_err(|e| Unreadable::Garbled(e.to_string())),
            Recorded::Compact { input: parts, .. } => {
                let result = results.get(&d.decision.execution_id).cloned();
                let input = rebuilt(&d.decision, parts, result.unwrap_or_default());
                let json = serde_json::to_string(&input).unwrap_or_default();
                match log_hash(&json) == parts.hash {
                    true => Ok(input),
                    false => Err(Unreadable::NotKept),
                }
            }
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(result: &str) -> t::DecisionInput {
        let json = format!(
            r#"{{"now":"2026-11-30T04:10:00.123456Z",
                "execution":{{"id":"3f2504e0-4f89-11d3-9a0c-0305e82c3301","status":"failed",
                  "result":{result:?},"finished_at":"2026-11-30T04:09:58Z",
                  "task":{{"protocol":"a2a","id":"task-9"}}}},
                "session":{{"id":"6fa459ea-ee8a-3ca4-894e-db77e160355e",
                  "window":{{"opened_at":"2026-11-30T04:00:00Z","expires_at":"2026-11-30T04:30:00Z","route":"chat"}},
                  "continuations_in_window":2,
                  "still_running":["00000000-0000-0000-0000-000000000007"]}},
                "attempts":3}}"#
        );
        crate::policy::codec::decision_input(&json).expect("a golden-form input")
    }

    fn decision(parts: InputParts) -> store::NewDecision {
        store::NewDecision {
            session_id: "6fa459ea-ee8a-3ca4-894e-db77e160355e"
                .parse()
                .expect("uuid"),
            execution_id: "3f2504e0-4f89-11d3-9a0c-0305e82c3301"
                .parse()
                .expect("uuid"),
            revision: "r".into(),
            recorded: Recorded::Compact {
                input: parts,
                answer: "wait".into(),
                answer_hash: Vec::new(),
            },
            action: "waited".into(),
            idempotency_key: None,
            detail: None,
        }
    }

    #[test]
    fn parts_and_the_result_rebuild_the_input_the_policy_saw() {
        let seen = input("ssh: connection refused");
        let parts = input_parts(&seen, 1000).expect("parts");
        assert_eq!(parts.result_cut, None);
        let again = rebuilt(
            &decision(parts.clone()),
            &parts,
            seen.execution.result.clone(),
        );
        assert_eq!(again, seen);
        let json = serde_json::to_string(&again).expect("json");
        assert_eq!(log_hash(&json), parts.hash);
    }

    #[test]
    fn a_cut_result_is_cut_again_and_another_result_fails_the_hash() {
        let whole = "x".repeat(5000);
        let seen = input(&cut_middle(whole.clone(), 100));
        let parts = input_parts(&seen, 100).expect("parts");
        assert_eq!(parts.result_cut, Some(100));
        let d = decision(parts.clone());
        assert_eq!(rebuilt(&d, &parts, whole), seen);
        let other = rebuilt(&d, &parts, "scrubbed".into());
        let json = serde_json::to_string(&other).expect("json");
        assert_ne!(log_hash(&json), parts.hash);
    }

    /// The JSON the hash is taken over, pinned: a change to the input's
    /// written form (a field, its order, a time's format) makes every
    /// compact row written before it "no longer kept", so it must be made
    /// on purpose, never by accident.
    #[test]
    fn the_hashed_form_of_an_input_is_pinned() {
        let json = serde_json::to_string(&input("ssh: connection refused")).expect("json");
        assert_eq!(
            json,
            concat!(
                r#"{"now":"2026-11-30T04:10:00.123456Z","execution":{"#,
                r#""id":"3f2504e0-4f89-11d3-9a0c-0305e82c3301","status":"failed","#,
                r#""result":"ssh: connection refused","finished_at":"2026-11-30T04:09:58Z","#,
                r#""task":{"protocol":"a2a","id":"task-9"}},"session":{"#,
                r#""id":"6fa459ea-ee8a-3ca4-894e-db77e160355e","window":{"#,
                r#""opened_at":"2026-11-30T04:00:00Z","expires_at":"2026-11-30T04:30:00Z","#,
                r#""route":"chat"},"continuations_in_window":2,"#,
                r#""still_running":["00000000-0000-0000-0000-000000000007"]},"attempts":3}"#,
            )
        );
        assert_eq!(
            hex::encode(log_hash(&json)),
            "6f2688215136d9bf2604517d91f853c2"
        );
    }
}
