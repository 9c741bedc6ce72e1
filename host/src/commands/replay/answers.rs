//! How `policy replay` compares a recorded answer with a candidate's and
//! how it reports a change: whole rows by value, compact rows by hash, and
//! any two failures alike.

use std::fmt::Write as _;

use serde_json::Value;

use crate::store::{LoggedDecision, Recorded};
use crate::worker::{answer_kind, log_hash};

/// A recorded answer and an answer line agree: compared whole for a whole
/// row, by hash for a compact one, and any two failures agree.
pub(super) fn agrees(recorded: &Recorded, now: &str) -> bool {
    match recorded {
        Recorded::Whole { output, .. } => same_answer(output, now),
        // An empty answer is a deferral (a shortage), not a failure.
        Recorded::Compact { answer, .. } if answer == "error" => {
            !now.is_empty() && answer_kind(now) == "error"
        }
        Recorded::Compact { answer_hash, .. } => log_hash(now) == *answer_hash,
    }
}

/// A recorded answer as a report names it.
pub(super) fn recorded_text(recorded: &Recorded) -> String {
    match recorded {
        Recorded::Whole { output, .. } => output.clone(),
        Recorded::Compact {
            answer,
            answer_hash,
            ..
        } => format!("{answer} (answer hash {})", hex::encode(answer_hash)),
    }
}

/// Two logged outputs agree: the same answer, or both a failure (whose
/// wording may name timings or offsets).
fn same_answer(recorded: &str, now: &str) -> bool {
    match (parse(recorded), parse(now)) {
        (Some(a), Some(b)) => a == b || (is_failure_value(&a) && is_failure_value(&b)),
        _ => recorded == now,
    }
}

fn parse(output: &str) -> Option<Value> {
    serde_json::from_str(output).ok()
}

fn is_failure_value(v: &Value) -> bool {
    v.get("error").is_some()
}

pub(super) fn is_failure(output: &str) -> bool {
    parse(output).is_some_and(|v| is_failure_value(&v))
}

/// One changed decision, readably: what flipped, and a line diff of the
/// note or reason when the kind stayed the same.
pub(super) fn changed(d: &LoggedDecision, before: &str, revision: &str, answer: &str) -> String {
    let logged = &d.decision;
    let mut text = String::new();
    let host = match &logged.idempotency_key {
        Some(key) => format!("{} under {key}", logged.action),
        None => logged.action.clone(),
    };
    let _ = writeln!(
        text,
        "decision {} at {} (session {}, execution {}; the host {host}):",
        d.id, d.decided_at, logged.session_id, logged.execution_id
    );
    let (old_kind, old_text) = summary(before);
    let (new_kind, new_text) = summary(answer);
    let _ = writeln!(
        text,
        "  {old_kind} -> {new_kind}   (recorded by {}, replayed by {})",
        short(&logged.revision),
        short(revision)
    );
    if old_text != new_text {
        let diff = similar::TextDiff::from_lines(&old_text, &new_text);
        for change in diff.iter_all_changes() {
            let sign = match change.tag() {
                similar::ChangeTag::Delete => "-",
                similar::ChangeTag::Insert => "+",
                similar::ChangeTag::Equal => " ",
            };
            let _ = write!(text, "  {sign} {}", change.value());
            if change.missing_newline() {
                text.push('\n');
            }
        }
    }
    text
}

/// A logged output's kind (`wait`, `continue`, `drop`, `error`) and its
/// text (the note, the reason or the error).
fn summary(output: &str) -> (String, String) {
    let Some(v) = parse(output) else {
        return ("unreadable".into(), output.to_string());
    };
    if let Some(e) = v.get("error").and_then(Value::as_str) {
        return ("error".into(), e.to_string());
    }
    let kind = v.get("decision").and_then(Value::as_str).unwrap_or("?");
    let text = ["note", "reason"]
        .iter()
        .find_map(|k| v.get(*k).and_then(Value::as_str))
        .unwrap_or_default();
    (kind.to_string(), text.to_string())
}

pub(super) fn short(hash: &str) -> &str {
    hash.get(..12).unwrap_or(hash)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::codec;
    use uuid::Uuid;

    #[test]
    fn failures_agree_whatever_their_wording_and_answers_by_value() {
        assert!(same_answer(
            r#"{"decision":"wait"}"#,
            r#"{ "decision": "wait" }"#
        ));
        assert!(same_answer(
            &codec::failure_line("trap at 0x1"),
            &codec::failure_line("trap at 0x2")
        ));
        assert!(!same_answer(
            r#"{"decision":"wait"}"#,
            &codec::failure_line("trap")
        ));
        assert!(!same_answer(
            r#"{"decision":"continue","note":"a"}"#,
            r#"{"decision":"continue","note":"b"}"#
        ));
    }

    #[test]
    fn a_change_names_the_flip_and_diffs_the_text() {
        let d = LoggedDecision {
            id: 7,
            decided_at: chrono::DateTime::UNIX_EPOCH,
            decision: crate::store::NewDecision {
                session_id: Uuid::nil(),
                execution_id: Uuid::nil(),
                revision: "a".repeat(64),
                recorded: Recorded::Whole {
                    input: String::new(),
                    output: String::new(),
                },
                action: "continued".into(),
                idempotency_key: Some("c-1".into()),
                detail: None,
            },
        };
        let before = r#"{"decision":"continue","note":"one\ntwo"}"#;
        let text = changed(
            &d,
            before,
            &"b".repeat(64),
            r#"{"decision":"continue","note":"one\nthree"}"#,
        );
        assert!(text.contains("continued under c-1"), "{text}");
        assert!(text.contains("continue -> continue"), "{text}");
        assert!(
            text.contains("  - two\n") && text.contains("  + three\n"),
            "{text}"
        );
        let flip = changed(&d, before, "b", r#"{"decision":"drop","reason":"no"}"#);
        assert!(flip.contains("continue -> drop"), "{flip}");
    }
}
