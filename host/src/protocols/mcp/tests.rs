//! Every shape of both versions: fixtures after `mcp` 1.30's types
//! (2025-11-25) and the 2026-07-28 tasks extension's schema.

use serde_json::json;

use super::*;

const T25: &str = "5f0c2b9e4d7a41c3b8e6f1a2d3c4b5a6:0b7e2a4c-3d1f-4e5a-9c8b-7a6f5e4d3c2b";
const T26: &str = "786512e2-9e0d-44bd-8f29-789f320fe840";

fn fixture(name: &str, hint: Option<&str>) -> McpUpdate {
    let path = format!(
        "{}/src/protocols/testdata/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    let body = std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    read(&body, hint).unwrap_or_else(|e| panic!("{name}: {e}"))
}

#[test]
fn v2025_create_get_and_notification() {
    let created = fixture("mcp_2025_create.json", None);
    assert_eq!(
        (created.task_id.as_str(), created.status.as_deref()),
        (T25, Some("working"))
    );
    let got = fixture("mcp_2025_get_completed.json", Some(T25));
    assert_eq!(got.status.as_deref(), Some("completed"));
    assert_eq!(got.result, None);
    assert!(waits_for_result("completed"));
    let note = fixture("mcp_2025_notification.json", None);
    assert_eq!(note.status.as_deref(), Some("input_required"));
    assert_eq!(note.status_message, "needs the region");
}

#[test]
fn v2025_result_names_its_task_in_meta() {
    let r = fixture("mcp_2025_result_error.json", None);
    assert_eq!(r.task_id, T25);
    assert_eq!(r.status, None);
    let outcome = r.result.expect("a result");
    // Text blocks, then the structured content; the image is not text.
    assert_eq!(outcome.text, "deploy failed: exit 2\n{\"exit\":2}");
    assert!(outcome.is_error);
    assert_eq!(recorded_status("completed", Some(&outcome)), "failed");
}

#[test]
fn a_bare_result_takes_the_callers_task() {
    let body = json!({"content": [{"type": "text", "text": "ok"}]});
    let r = read_value(&body, Some("t-1")).expect("with a hint");
    assert_eq!(r.task_id, "t-1");
    let outcome = r.result.expect("a result");
    assert!(!outcome.is_error);
    assert_eq!(recorded_status("completed", Some(&outcome)), "completed");
    assert!(matches!(
        read_value(&body, None),
        Err(ProtocolError::Shape { .. })
    ));
}

#[test]
fn another_task_than_the_callers_is_refused() {
    let body = std::fs::read(format!(
        "{}/src/protocols/testdata/mcp_2025_result_error.json",
        env!("CARGO_MANIFEST_DIR")
    ))
    .expect("fixture");
    assert_eq!(
        read(&body, Some("other")),
        Err(ProtocolError::OtherTask {
            expected: "other".into(),
            named: T25.into()
        })
    );
}

#[test]
fn v2026_inline_result_error_and_input_requests() {
    let created = fixture("mcp_2026_create.json", None);
    assert_eq!(
        (created.task_id.as_str(), created.status_message.as_str()),
        (T26, "in progress")
    );
    let done = fixture("mcp_2026_get_completed.json", None);
    let outcome = done.result.expect("inline result");
    assert_eq!(
        (outcome.text.as_str(), outcome.is_error),
        ("line one\nline two", false)
    );
    let failed = fixture("mcp_2026_get_failed.json", None);
    assert_eq!(failed.status.as_deref(), Some("failed"));
    assert_eq!(
        failed.result,
        Some(ToolOutcome {
            text: "upstream timed out\n{\"after_s\":30}".into(),
            is_error: true
        })
    );
    let asks = fixture("mcp_2026_input_required.json", None);
    assert_eq!(asks.status.as_deref(), Some("input_required"));
    assert_eq!(asks.status_message, "Which region?");
}

#[test]
fn a_jsonrpc_error_is_an_error_outcome() {
    let body =
        json!({"jsonrpc": "2.0", "id": 9, "error": {"code": -32000, "message": "Task cancelled"}});
    let r = read_value(&body, Some("t")).expect("with a hint");
    assert_eq!(
        r.result,
        Some(ToolOutcome {
            text: "Task cancelled".into(),
            is_error: true
        })
    );
}

#[test]
fn cancelled_and_working_do_not_wait() {
    assert!(!waits_for_result("cancelled"));
    assert!(!waits_for_result("working"));
    assert!(!waits_for_result("input_required"));
    assert_eq!(recorded_status("cancelled", None), "cancelled");
}

#[test]
fn malformed_bodies_are_refused() {
    for body in [
        &b"nope"[..],
        b"42",
        b"{}",
        b"{\"jsonrpc\": \"2.0\", \"id\": 1}",
        b"{\"method\": \"tools/list\", \"params\": {}}",
        b"{\"taskId\": \"t\"}",
        b"{\"status\": \"working\"}",
        b"{\"taskId\": \"t\", \"status\": \"completed\", \"result\": {\"content\": 3}}",
    ] {
        assert!(
            matches!(read(body, None), Err(ProtocolError::Shape { .. })),
            "{}",
            String::from_utf8_lossy(body)
        );
    }
}
