//! What a tool result names for the host to watch: protocol tasks and
//! execution ids.
//!
//! A tool that starts work over a protocol answers with a structured
//! result, and the task's id is a field of it, not a word in prose; so when
//! the (trimmed) text is JSON, it is searched for the shapes that create or
//! name a task:
//!
//! - MCP 2025-11-25, a task-augmented `tools/call`: `{"task": {"taskId",
//!   "status", ...}}` (a `CreateTaskResult`).
//! - MCP 2026-07-28, the `io.modelcontextprotocol/tasks` extension: a result
//!   with `"resultType": "task"` and the task's fields beside it (`taskId`,
//!   `status`, ...), or under `task`.
//! - A2A 1.0: a Task (`{"id", "contextId", "status": {"state": ...}}`), or
//!   the `SendMessage` answer holding one (`{"task": {...}}`); A2A 0.3: a
//!   Task marked `"kind": "task"`.
//! - A2A, either version: a Message (`messageId`, `role`) naming its
//!   `taskId`, bare or as the `SendMessage` answer `{"message": {...}}`.
//!
//! Each may come inside a JSON-RPC response (`{"jsonrpc", "id", "result"}`),
//! and a tool may return one as the text of its own result, so the text
//! blocks of an MCP `CallToolResult` (`content`) and its
//! `structuredContent` are searched the same way, to a bounded depth.
//!
//! Then, and whatever the text is, execution ids are found as
//! [`crate::extract`] finds them. Tasks come first, in the order the
//! structure names them, then execution ids in text order; no link twice,
//! at most [`MAX_LINKS`] in all.

use serde_json::{Map, Value};

use crate::extract::{extract_execution_ids, MAX_IDS};
use crate::types::{LinkRef, TaskProtocol, TaskRef};

/// At most this many links from one tool result (the cap on ids).
pub const MAX_LINKS: usize = MAX_IDS;

/// The longest task id linked; a longer one is ignored (the host refuses it).
pub const MAX_TASK_ID_BYTES: usize = 1024;

/// How deep results nest inside each other (an envelope, a tool's text
/// holding JSON, ...) before the search stops: enough for every shape
/// above, and a bound on the work a hostile text can cause.
const MAX_DEPTH: usize = 4;

/// What `text` names, in the order described in the module's doc.
pub fn extract_links(text: &str) -> Vec<LinkRef> {
    let mut links = Vec::new();
    if let Some(value) = json_of(text) {
        find_tasks(&value, 0, &mut links);
    }
    for id in extract_execution_ids(text) {
        push(&mut links, LinkRef::Execution(id));
    }
    links
}

/// The JSON value of `text` if, trimmed, it is a JSON object or array.
fn json_of(text: &str) -> Option<Value> {
    let text = text.trim();
    if !(text.starts_with('{') || text.starts_with('[')) {
        return None;
    }
    serde_json::from_str(text).ok()
}

fn push(links: &mut Vec<LinkRef>, link: LinkRef) {
    if links.len() < MAX_LINKS && !links.contains(&link) {
        links.push(link);
    }
}

fn push_task(links: &mut Vec<LinkRef>, protocol: TaskProtocol, id: &str) {
    if !id.is_empty() && id.len() <= MAX_TASK_ID_BYTES {
        let id = id.to_owned();
        push(links, LinkRef::Task(TaskRef { protocol, id }));
    }
}

fn find_tasks(value: &Value, depth: usize, links: &mut Vec<LinkRef>) {
    if depth > MAX_DEPTH || links.len() >= MAX_LINKS {
        return;
    }
    match value {
        Value::Array(items) => {
            for item in items.iter().take(MAX_LINKS) {
                find_tasks(item, depth + 1, links);
            }
        }
        Value::Object(object) => find_in_object(object, depth, links),
        _ => {}
    }
}

fn find_in_object(object: &Map<String, Value>, depth: usize, links: &mut Vec<LinkRef>) {
    let text = |key: &str| object.get(key).and_then(Value::as_str);
    // A JSON-RPC response: its result is what the tool answered.
    if text("jsonrpc").is_some() {
        if let Some(result) = object.get("result") {
            find_tasks(result, depth + 1, links);
        }
        return;
    }
    // MCP 2026-07-28: the task's fields beside the discriminator.
    if text("resultType") == Some("task") {
        if let Some(id) = text("taskId") {
            push_task(links, TaskProtocol::Mcp, id);
        }
    }
    // MCP 2025-11-25 (and the 2026 form that nests it): `task.taskId`;
    // A2A 1.0's SendMessage answer: `task` is an A2A Task.
    if let Some(Value::Object(task)) = object.get("task") {
        match task.get("taskId").and_then(Value::as_str) {
            Some(id) => push_task(links, TaskProtocol::Mcp, id),
            None => a2a_task(task, links),
        }
    }
    a2a_task(object, links);
    if let Some(Value::Object(message)) = object.get("message") {
        a2a_message(message, links);
    }
    a2a_message(object, links);
    // An MCP CallToolResult: a tool may return task JSON as its text.
    if let Some(Value::Array(blocks)) = object.get("content") {
        for block in blocks.iter().take(MAX_LINKS) {
            let is_text = block.get("type").and_then(Value::as_str) == Some("text");
            if let (true, Some(text)) = (is_text, block.get("text").and_then(Value::as_str)) {
                if let Some(inner) = json_of(text) {
                    find_tasks(&inner, depth + 1, links);
                }
            }
        }
    }
    if let Some(structured) = object.get("structuredContent") {
        find_tasks(structured, depth + 1, links);
    }
}

/// An A2A Task: an `id` and a `status` holding a `state`, marked as a task
/// by 0.3's `"kind": "task"` or 1.0's `contextId`.
fn a2a_task(object: &Map<String, Value>, links: &mut Vec<LinkRef>) {
    let has_state = object
        .get("status")
        .and_then(|s| s.get("state"))
        .is_some_and(Value::is_string);
    let marked = object.get("kind").and_then(Value::as_str) == Some("task")
        || object.get("contextId").is_some_and(Value::is_string);
    if let (true, true, Some(id)) = (has_state, marked, object.get("id").and_then(Value::as_str)) {
        push_task(links, TaskProtocol::A2a, id);
    }
}

/// An A2A Message (`messageId` and `role`) naming the task it belongs to.
fn a2a_message(object: &Map<String, Value>, links: &mut Vec<LinkRef>) {
    let is_message = object.get("messageId").is_some_and(Value::is_string)
        && object.get("role").is_some_and(Value::is_string);
    if let (true, Some(id)) = (is_message, object.get("taskId").and_then(Value::as_str)) {
        push_task(links, TaskProtocol::A2a, id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const E: &str = "3f2504e0-4f89-11d3-9a0c-0305e82c3301";

    fn mcp(id: &str) -> LinkRef {
        LinkRef::Task(TaskRef {
            protocol: TaskProtocol::Mcp,
            id: id.into(),
        })
    }

    fn a2a(id: &str) -> LinkRef {
        LinkRef::Task(TaskRef {
            protocol: TaskProtocol::A2a,
            id: id.into(),
        })
    }

    #[test]
    fn finds_each_protocol_shape() {
        for (text, want) in [
            (
                r#"{"task":{"taskId":"t1","status":"working","ttl":60000}}"#,
                mcp("t1"),
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"result":{"task":{"taskId":"t2","status":"working"}}}"#,
                mcp("t2"),
            ),
            (
                r#"{"resultType":"task","taskId":"t3","status":"working","ttlMs":1000}"#,
                mcp("t3"),
            ),
            (
                r#"{"jsonrpc":"2.0","id":"x","result":{"resultType":"task","task":{"taskId":"t4","status":"working"}}}"#,
                mcp("t4"),
            ),
            (
                r#"{"id":"a1","contextId":"c","status":{"state":"TASK_STATE_WORKING"}}"#,
                a2a("a1"),
            ),
            (
                r#"{"task":{"id":"a2","contextId":"c","status":{"state":"TASK_STATE_SUBMITTED"}}}"#,
                a2a("a2"),
            ),
            (
                r#"{"kind":"task","id":"a3","status":{"state":"working"}}"#,
                a2a("a3"),
            ),
            (
                r#"{"message":{"messageId":"m","role":"ROLE_AGENT","taskId":"a4","parts":[]}}"#,
                a2a("a4"),
            ),
            (
                r#"{"kind":"message","messageId":"m","role":"agent","taskId":"a5"}"#,
                a2a("a5"),
            ),
            (
                r#"{"content":[{"type":"text","text":"{\"task\":{\"taskId\":\"t5\"}}"}]}"#,
                mcp("t5"),
            ),
        ] {
            assert_eq!(extract_links(text), vec![want], "{text}");
        }
    }

    #[test]
    fn tasks_come_before_execution_ids_without_duplicates() {
        let text = format!(
            r#"{{"content":[{{"type":"text","text":"running, execution {E}"}},{{"type":"text","text":"{{\"kind\":\"task\",\"id\":\"a\",\"status\":{{\"state\":\"working\"}}}}"}}],"structuredContent":{{"kind":"task","id":"a","status":{{"state":"working"}}}}}}"#
        );
        assert_eq!(
            extract_links(&text),
            vec![a2a("a"), LinkRef::Execution(E.into())]
        );
        assert_eq!(
            extract_links(&format!("execution {E}, again execution {E}")),
            vec![LinkRef::Execution(E.into())]
        );
    }

    #[test]
    fn ignores_junk_and_near_misses() {
        for text in [
            "{not json",
            r#"{"task":{"status":"working"}}"#,
            r#"{"id":"x","status":{"state":"working"}}"#,
            r#"{"task":{"taskId":""}}"#,
            r#"{"taskId":"t","status":"working"}"#,
            r#"{"messageId":"m","taskId":"t"}"#,
            r#"[1, "two", null]"#,
            r#""just a string""#,
        ] {
            assert!(extract_links(text).is_empty(), "{text}");
        }
        let long = "t".repeat(MAX_TASK_ID_BYTES + 1);
        let text = format!(r#"{{"task":{{"taskId":"{long}"}}}}"#);
        assert!(extract_links(&text).is_empty());
    }

    #[test]
    fn nesting_is_bounded() {
        let mut text = r#"{"task":{"taskId":"deep"}}"#.to_string();
        for _ in 0..10 {
            text = serde_json::json!({"content": [{"type": "text", "text": text}]}).to_string();
        }
        assert!(extract_links(&text).is_empty());
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(1000))]

        #[test]
        fn never_panics_and_stays_within_the_caps(text in "(?s).{0,400}") {
            let links = extract_links(&text);
            proptest::prop_assert!(links.len() <= MAX_LINKS);
            for link in &links {
                if let LinkRef::Task(task) = link {
                    proptest::prop_assert!(!task.id.is_empty() && task.id.len() <= MAX_TASK_ID_BYTES);
                }
            }
        }
    }
}
