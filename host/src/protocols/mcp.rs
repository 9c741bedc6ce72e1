//! MCP task updates in both versions, bare or in their JSON-RPC envelope.
//!
//! - **2025-11-25** (experimental tasks): a task-augmented `tools/call`
//!   answers `{"task": Task}`; `tasks/get` answers the task itself
//!   (`taskId`, `status`, `statusMessage`, `createdAt`, `lastUpdatedAt`,
//!   `ttl`, `pollInterval`); `tasks/result` answers the original
//!   `CallToolResult`, naming its task in
//!   `_meta["io.modelcontextprotocol/related-task"].taskId`;
//!   `notifications/tasks/status` carries a task as its `params`.
//! - **2026-07-28** (`io.modelcontextprotocol/tasks`): `tools/call` answers
//!   the task flat with `resultType: "task"` (`ttlMs`, `pollIntervalMs`);
//!   `tasks/get` and `notifications/tasks` carry the task with its
//!   `result` (a `CallToolResult`) or `error` (a JSON-RPC error) inline, or
//!   the `inputRequests` it waits on.
//!
//! Statuses are `working | input_required | completed | failed |
//! cancelled` in both, passed on verbatim.

use serde_json::Value;

use super::{text_field, ProtocolError};

const EXPECTED: &str = "an MCP task answer";
/// Where a result names the task it is the payload of.
pub const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";

/// A tool result as a note carries it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolOutcome {
    /// The `content` text blocks joined by newlines, then
    /// `structuredContent` as compact JSON; or a JSON-RPC error's message
    /// and data.
    pub text: String,
    /// The tool (or the call) failed: `isError: true`, or a JSON-RPC error.
    pub is_error: bool,
}

/// What one body says of a task.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct McpUpdate {
    /// The task's id, as the server minted it.
    pub task_id: String,
    /// The task's status, verbatim; `None` for a bare tool result.
    pub status: Option<String>,
    /// `statusMessage`, then what the task's `inputRequests` ask; empty when neither.
    pub status_message: String,
    /// The tool's result, when the body carries it.
    pub result: Option<ToolOutcome>,
}

/// Reads a body; `task_id` is the task the caller says it is about (the
/// only name a `tasks/result` answer without `_meta` has).
pub fn read(body: &[u8], task_id: Option<&str>) -> Result<McpUpdate, ProtocolError> {
    let value: Value = serde_json::from_slice(body).map_err(|e| shape(e.to_string()))?;
    read_value(&value, task_id)
}

/// Reads a body already parsed as JSON.
pub fn read_value(value: &Value, task_id: Option<&str>) -> Result<McpUpdate, ProtocolError> {
    if !value.is_object() {
        return Err(shape("not a JSON object".into()));
    }
    let update = unwrap(value, task_id)?;
    match task_id {
        Some(expected) if expected != update.task_id => Err(ProtocolError::OtherTask {
            expected: expected.into(),
            named: update.task_id,
        }),
        _ => Ok(update),
    }
}

/// Whether a status ends with a payload the update must wait for (the
/// result of `completed`, the error of `failed`), so that the note can
/// carry it: which statuses have a payload is the protocol's wire, not a
/// class.
pub fn waits_for_result(status: &str) -> bool {
    matches!(status, "completed" | "failed")
}

/// The status to record for a task that ended with `outcome`: a
/// `completed` task whose tool result is an error is `failed` (as the
/// 2025-11-25 specification says, and as the Python SDK does not do).
pub fn recorded_status(status: &str, outcome: Option<&ToolOutcome>) -> String {
    match outcome {
        Some(o) if o.is_error && status == "completed" => "failed".into(),
        _ => status.into(),
    }
}

fn unwrap(value: &Value, hint: Option<&str>) -> Result<McpUpdate, ProtocolError> {
    if let Some(method) = value.get("method") {
        return match method.as_str() {
            Some("notifications/tasks/status" | "notifications/tasks") => {
                let params = value
                    .get("params")
                    .ok_or_else(|| shape("a notification without params".into()))?;
                task(params)
            }
            _ => Err(shape(format!("method {method} is not a task notification"))),
        };
    }
    if value.get("jsonrpc").is_some() {
        if let Some(error) = value.get("error") {
            let task_id = related_task(error.get("data").unwrap_or(&Value::Null))
                .or(hint)
                .ok_or_else(|| shape("a JSON-RPC error that names no task".into()))?;
            return Ok(McpUpdate {
                task_id: task_id.into(),
                status: None,
                status_message: String::new(),
                result: Some(error_outcome(error)),
            });
        }
        let result = value
            .get("result")
            .ok_or_else(|| shape("a JSON-RPC message without result, error or method".into()))?;
        return unwrap(result, hint);
    }
    if let Some(inner) = value.get("task").filter(|t| t.is_object()) {
        return task(inner);
    }
    if value.get("taskId").is_some() || value.get("status").is_some() {
        return task(value);
    }
    // A `tasks/result` answer: a `CallToolResult`, which names its task in
    // `_meta` (mcp 1.30 answers a failed task's with that `_meta` alone).
    if value.get("content").is_some_and(Value::is_array) || related_task(value).is_some() {
        let task_id = related_task(value).or(hint).ok_or_else(|| {
            shape(format!(
                "a tool result whose _meta names no task ({RELATED_TASK})"
            ))
        })?;
        return Ok(McpUpdate {
            task_id: task_id.into(),
            status: None,
            status_message: String::new(),
            result: Some(tool_outcome(value)?),
        });
    }
    Err(shape(
        "neither a task, a tool result, nor a task status notification".into(),
    ))
}

/// A task object of either version, with the 2026 inline payloads.
fn task(value: &Value) -> Result<McpUpdate, ProtocolError> {
    let task_id =
        text_field(value, "taskId").ok_or_else(|| shape("a task without taskId".into()))?;
    let status =
        text_field(value, "status").ok_or_else(|| shape("a task without status".into()))?;
    let mut message: Vec<String> = text_field(value, "statusMessage")
        .map(|m| vec![m.to_owned()])
        .unwrap_or_default();
    if let Some(requests) = value.get("inputRequests").and_then(Value::as_object) {
        message.extend(requests.values().map(|r| {
            r.get("params")
                .and_then(|p| text_field(p, "message"))
                .map_or_else(|| r.to_string(), Into::into)
        }));
    }
    let result = match (value.get("result"), value.get("error")) {
        (Some(r), _) if r.is_object() => Some(tool_outcome(r)?),
        (_, Some(e)) if e.is_object() => Some(error_outcome(e)),
        _ => None,
    };
    Ok(McpUpdate {
        task_id: task_id.into(),
        status: Some(status.into()),
        status_message: message.join("\n"),
        result,
    })
}

fn tool_outcome(result: &Value) -> Result<ToolOutcome, ProtocolError> {
    let content = match result.get("content") {
        Some(Value::Array(blocks)) => blocks.as_slice(),
        None | Some(Value::Null) => &[],
        Some(_) => return Err(shape("content is not a list".into())),
    };
    let mut texts: Vec<String> = content
        .iter()
        .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
        .filter_map(|b| b.get("text").and_then(Value::as_str).map(Into::into))
        .collect();
    if let Some(structured) = result.get("structuredContent").filter(|s| !s.is_null()) {
        texts.push(structured.to_string());
    }
    Ok(ToolOutcome {
        text: texts.join("\n"),
        is_error: result
            .get("isError")
            .and_then(Value::as_bool)
            .unwrap_or(false),
    })
}

fn error_outcome(error: &Value) -> ToolOutcome {
    let mut texts: Vec<String> = text_field(error, "message")
        .map(|m| vec![m.to_owned()])
        .unwrap_or_default();
    if let Some(data) = error.get("data").filter(|d| !d.is_null()) {
        texts.push(data.to_string());
    }
    ToolOutcome {
        text: texts.join("\n"),
        is_error: true,
    }
}

fn related_task(value: &Value) -> Option<&str> {
    value
        .get("_meta")
        .and_then(|m| m.get(RELATED_TASK))
        .and_then(|r| text_field(r, "taskId"))
}

fn shape(reason: String) -> ProtocolError {
    ProtocolError::Shape {
        expected: EXPECTED,
        reason,
    }
}

#[cfg(test)]
mod tests;
