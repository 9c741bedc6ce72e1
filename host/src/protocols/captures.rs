//! Every body the real SDKs sent, replayed through the readers: the
//! captures of `a2a-sdk` 1.3.0 and 0.3.26 pushing to a recording receiver,
//! and of `mcp` 1.30.0's server answering its client
//! (`testdata/captures/`, recorded by this repository's peers).

use serde_json::Value;

use super::a2a::{self, Artifact, Version};
use super::mcp::{self, McpUpdate, ToolOutcome};
use super::result::{a2a_result, gather};

fn capture(name: &str) -> Vec<Value> {
    let path = format!(
        "{}/src/protocols/testdata/captures/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The pushes of a capture, read; their states in order; and the result a
/// note would carry at the end (the last state's message and every
/// artifact gathered on the way).
fn replay(name: &str, version: Version) -> (Vec<Option<String>>, String) {
    let mut states = Vec::new();
    let mut gathered: Vec<Artifact> = Vec::new();
    let mut message = String::new();
    for entry in capture(name).iter().filter(|e| e["kind"] == "push") {
        let body = serde_json::to_vec(&entry["body"]).expect("a body");
        let update = a2a::read_push(&body).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(update.version, version, "{name}");
        gathered = gather(gathered, &update.artifacts, update.whole_task);
        if update.state.is_some() {
            message = update.message_text.clone();
        }
        states.push(update.state);
    }
    (states, a2a_result(&message, &gathered, 1 << 16))
}

/// `text`'s lines: all but the last verbatim, the last read as JSON (its
/// keys' order is serde_json's, which a feature of another crate may change).
fn lines_then_json(text: &str) -> (Vec<&str>, Value) {
    let mut lines: Vec<&str> = text.lines().collect();
    let last = lines.pop().expect("a line");
    let json = serde_json::from_str(last).unwrap_or_else(|e| panic!("{last}: {e}"));
    (lines, json)
}

fn some(states: &[&str]) -> Vec<Option<String>> {
    states.iter().map(|s| Some((*s).to_owned())).collect()
}

#[test]
fn a2a_1_3_fail_gathers_the_artifact_before_the_failed_push() {
    let (states, result) = replay("a2a-1.3.0-fail.json", Version::V1);
    let mut expected = some(&[
        "TASK_STATE_SUBMITTED",
        "TASK_STATE_WORKING",
        "TASK_STATE_WORKING",
    ]);
    expected.push(None);
    expected.extend(some(&["TASK_STATE_FAILED"]));
    assert_eq!(states, expected);
    assert_eq!(
        result,
        "the export failed: the warehouse refused the credentials\n\
         exported 17 of 42 rows before the error"
    );
}

#[test]
fn a2a_1_3_complete_keeps_data_parts_as_json() {
    let (states, result) = replay("a2a-1.3.0-complete.json", Version::V1);
    assert_eq!(
        states.last(),
        Some(&Some("TASK_STATE_COMPLETED".to_owned()))
    );
    // Protobuf's Value makes numbers floats: passed on as sent.
    let (lines, data) = lines_then_json(&result);
    assert_eq!(
        lines,
        ["the export is done", "exported 42 rows to report.csv"]
    );
    assert_eq!(
        data,
        serde_json::json!({"rows": 42.0, "file": "report.csv"})
    );
    assert!(result.contains("42.0"), "{result}");
}

#[test]
fn a2a_1_3_input_carries_the_question() {
    let (states, result) = replay("a2a-1.3.0-input.json", Version::V1);
    assert_eq!(
        states.last(),
        Some(&Some("TASK_STATE_INPUT_REQUIRED".to_owned()))
    );
    assert_eq!(result, "which account should the export be billed to?");
}

#[test]
fn a2a_0_3_whole_tasks_in_every_push() {
    let (states, result) = replay("a2a-0.3.26-fail.json", Version::V03);
    assert_eq!(
        states,
        some(&["submitted", "working", "working", "working", "failed"])
    );
    assert_eq!(
        result,
        "the export failed: the warehouse refused the credentials\n\
         exported 17 of 42 rows before the error"
    );
    let (states, result) = replay("a2a-0.3.26-complete.json", Version::V03);
    assert_eq!(states.last(), Some(&Some("completed".to_owned())));
    let (lines, data) = lines_then_json(&result);
    assert_eq!(
        lines,
        ["the export is done", "exported 42 rows to report.csv"]
    );
    assert_eq!(data, serde_json::json!({"rows": 42, "file": "report.csv"}));
    let (states, result) = replay("a2a-0.3.26-input.json", Version::V03);
    assert_eq!(states.last(), Some(&Some("input-required".to_owned())));
    assert_eq!(result, "which account should the export be billed to?");
}

#[test]
fn get_task_answers_of_both_versions() {
    for (name, state) in [
        ("a2a-1.3.0-gettask.json", "TASK_STATE_FAILED"),
        ("a2a-0.3.26-gettask.json", "failed"),
    ] {
        let answers: Vec<_> = capture(name)
            .iter()
            .map(|e| a2a::read_get_task(&e["response"]))
            .collect();
        // One method is the version's, the other is "Method not found".
        let read: Vec<_> = answers.iter().filter_map(|a| a.as_ref().ok()).collect();
        assert_eq!(read.len(), 1, "{name}");
        assert_eq!(read[0].state.as_deref(), Some(state), "{name}");
        assert!(
            read[0].message_text.starts_with("the export failed"),
            "{name}"
        );
    }
}

/// The MCP messages of a capture, read (the initialize answer is no task).
fn mcp_replay(name: &str) -> Vec<McpUpdate> {
    capture(name)
        .iter()
        .filter(|e| e["kind"] != "initialize result")
        .map(|e| mcp::read_value(&e["message"], None).unwrap_or_else(|err| panic!("{name}: {err}")))
        .collect()
}

#[test]
fn mcp_1_30_is_error_ends_completed_and_is_recorded_failed() {
    let updates = mcp_replay("mcp-1.30.0-fail.json");
    let statuses: Vec<_> = updates.iter().map(|u| u.status.as_deref()).collect();
    assert_eq!(
        statuses,
        [
            Some("working"),
            Some("working"),
            Some("completed"),
            Some("completed"),
            None
        ]
    );
    assert!(updates[2].task_id.contains(':'), "{}", updates[2].task_id);
    let outcome = updates[4].result.clone().expect("the tool result");
    assert_eq!(
        outcome,
        ToolOutcome {
            text: "the export failed: the warehouse refused the credentials\n\
                   exported 17 of 42 rows before the error"
                .into(),
            is_error: true
        }
    );
    assert_eq!(mcp::recorded_status("completed", Some(&outcome)), "failed");
}

#[test]
fn mcp_1_30_raise_fails_with_its_message_and_an_empty_result() {
    let updates = mcp_replay("mcp-1.30.0-raise.json");
    let failed = &updates[3];
    assert_eq!(failed.status.as_deref(), Some("failed"));
    assert_eq!(
        failed.status_message,
        "the export failed: the warehouse refused the credentials"
    );
    let last = updates.last().expect("tasks/result");
    assert_eq!(last.task_id, failed.task_id);
    assert_eq!(
        last.result,
        Some(ToolOutcome {
            text: String::new(),
            is_error: false
        })
    );
}

#[test]
fn mcp_1_30_complete_and_input() {
    let done = mcp_replay("mcp-1.30.0-complete.json");
    let outcome = done
        .last()
        .and_then(|u| u.result.clone())
        .expect("a result");
    let (lines, data) = lines_then_json(&outcome.text);
    assert_eq!(lines, ["exported 42 rows to report.csv"]);
    assert_eq!(data, serde_json::json!({"rows": 42, "file": "report.csv"}));
    let input = mcp_replay("mcp-1.30.0-input.json");
    assert_eq!(
        input.last().and_then(|u| u.status.as_deref()),
        Some("input_required")
    );
}
