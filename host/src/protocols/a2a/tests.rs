//! Every shape of both versions, from fixtures written after the SDKs'
//! own serializers (`a2a-sdk` 1.3.0's `MessageToDict(StreamResponse)`,
//! 0.3.26's `Task.model_dump(mode="json", exclude_none=True)`).

use serde_json::json;

use super::*;

fn fixture(name: &str) -> Vec<u8> {
    let path = format!(
        "{}/src/protocols/testdata/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn push(name: &str) -> TaskUpdate {
    read_push(&fixture(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

#[test]
fn v1_task_is_whole_with_its_state() {
    let u = push("a2a_v1_task.json");
    assert_eq!(u.task_id, "task-1");
    assert_eq!(u.version, Version::V1);
    assert_eq!(u.state.as_deref(), Some("TASK_STATE_SUBMITTED"));
    assert!(u.whole_task);
    assert!(u.artifacts.is_empty());
    // The history is not the status message.
    assert_eq!(u.message_text, "");
}

#[test]
fn v1_status_updates_carry_state_and_message() {
    let working = push("a2a_v1_status_working.json");
    assert_eq!(working.state.as_deref(), Some("TASK_STATE_WORKING"));
    assert!(!working.whole_task);
    let failed = push("a2a_v1_status_failed.json");
    assert_eq!(failed.state.as_deref(), Some("TASK_STATE_FAILED"));
    assert_eq!(failed.message_text, "npm ci exited 1");
}

#[test]
fn v1_artifact_parts_text_data_and_files() {
    let u = push("a2a_v1_artifact.json");
    assert_eq!(u.state, None);
    assert_eq!(
        u.artifacts,
        vec![Artifact {
            id: "log".into(),
            append: true,
            last_chunk: true,
            text: "step 3: npm ci\n{\"exit\":1,\"step\":\"npm ci\"}\n[file log.txt (text/plain)]"
                .into(),
        }]
    );
}

#[test]
fn v1_message_is_text_without_state() {
    let u = push("a2a_v1_message.json");
    assert_eq!((u.state, u.message_text.as_str()), (None, "halfway"));
}

#[test]
fn v03_whole_task_with_artifacts() {
    let u = push("a2a_v03_task.json");
    assert_eq!(u.version, Version::V03);
    assert_eq!(u.state.as_deref(), Some("failed"));
    assert_eq!(u.message_text, "npm ci exited 1");
    assert!(u.whole_task);
    assert_eq!(u.artifacts.len(), 1);
    assert_eq!(
        u.artifacts[0].text,
        "step 3: npm ci\n{\"exit\":1}\n[file log.txt (text/plain)]"
    );
    assert!(!u.artifacts[0].append);
}

#[test]
fn v03_events() {
    let s = push("a2a_v03_status_update.json");
    assert_eq!(s.state.as_deref(), Some("input-required"));
    assert_eq!(s.message_text, "which registry?");
    let a = push("a2a_v03_artifact_update.json");
    assert_eq!(a.artifacts[0].id, "out");
    assert!(a.artifacts[0].last_chunk);
    assert_eq!(a.artifacts[0].text, "done");
}

#[test]
fn raw_file_without_name_is_named_unnamed() {
    let body = json!({"artifactUpdate": {"taskId": "t", "artifact": {"artifactId": "a",
        "parts": [{"raw": "aGk=", "mediaType": "image/png"}]}}});
    let u = read_push_value(&body).expect("a raw part");
    assert_eq!(u.artifacts[0].text, "[file unnamed (image/png)]");
}

#[test]
fn malformed_bodies_are_refused() {
    for body in [
        &b"not json"[..],
        b"[]",
        b"{}",
        b"{\"kind\": \"nonsense\"}",
        b"{\"statusUpdate\": {\"status\": {\"state\": \"TASK_STATE_WORKING\"}}}",
        b"{\"task\": {\"id\": \"a\"}, \"message\": {\"taskId\": \"a\"}}",
        b"{\"kind\": \"task\", \"status\": {\"state\": \"failed\"}}",
        b"{\"artifactUpdate\": {\"taskId\": \"t\"}}",
    ] {
        assert!(
            matches!(read_push(body), Err(ProtocolError::Shape { .. })),
            "{}",
            String::from_utf8_lossy(body)
        );
    }
}

#[test]
fn get_task_answers_bare_or_enveloped() {
    let v1 = json!({"jsonrpc": "2.0", "id": 1, "result": {"id": "t", "status":
        {"state": "TASK_STATE_COMPLETED"}, "artifacts": [{"artifactId": "a", "parts": [{"text": "ok"}]}]}});
    let u = read_get_task(&v1).expect("a 1.0 answer");
    assert_eq!(
        (u.version, u.state.as_deref()),
        (Version::V1, Some("TASK_STATE_COMPLETED"))
    );
    assert_eq!(u.artifacts[0].text, "ok");
    let v03 = serde_json::from_slice::<Value>(&fixture("a2a_v03_task.json")).expect("json");
    assert_eq!(
        read_get_task(&v03).expect("a 0.3 task").version,
        Version::V03
    );
    let error =
        json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32001, "message": "Task not found"}});
    assert!(read_get_task(&error).is_err());
}
