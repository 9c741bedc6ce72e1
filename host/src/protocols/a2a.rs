//! A2A task updates in both versions' JSON.
//!
//! - **1.0** (protobuf JSON, camelCase, enum names as strings): a push body
//!   is a `StreamResponse`, one key of `task`, `statusUpdate`,
//!   `artifactUpdate`, `message`. A part is `{"text"}`, `{"data"}` or a file
//!   (`{"raw"}` / `{"url"}` with `filename`, `mediaType`). States are
//!   `TASK_STATE_WORKING`, `TASK_STATE_FAILED`, ... (an unset state is left
//!   out of the JSON, so a task may carry none).
//! - **0.3** (`kind` discriminators): a whole task (`kind: task`, which is
//!   what the 0.3 SDK's sender posts every time), or a `status-update`
//!   (with `final`) / `artifact-update` (with `append`, `lastChunk`) event.
//!   A part is `kind: text | data | file`. States are `working`,
//!   `input-required`, ...
//!
//! A `GetTask` answer (the poller's) is a bare task, or that in a JSON-RPC
//! envelope ([`read_get_task`]).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{text_field, ProtocolError};

const PUSH: &str = "an A2A push body";
const ANSWER: &str = "an A2A GetTask answer";

/// Which version's JSON a body was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Version {
    /// A2A 1.0 (protobuf JSON).
    V1,
    /// A2A 0.3 (`kind` discriminators).
    V03,
}

/// One artifact as far as a note needs it: its id, whether it extends the
/// one of that id, and its parts' text.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Artifact {
    /// The artifact's id within its task.
    pub id: String,
    /// This chunk extends the artifact of the same id, rather than replacing it.
    #[serde(default)]
    pub append: bool,
    /// The sender says this is the artifact's last chunk.
    #[serde(default)]
    pub last_chunk: bool,
    /// The parts' text (text verbatim, data as compact JSON, files named).
    pub text: String,
}

/// What one body says of a task.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskUpdate {
    /// The task's id, as the remote agent minted it.
    pub task_id: String,
    /// Which version's JSON it was (for the overdue poller's answers).
    #[cfg_attr(not(feature = "test-support"), allow(dead_code))]
    pub version: Version,
    /// The task's state, verbatim (`TASK_STATE_FAILED`, `input-required`);
    /// `None` for a body that carries none (an artifact, a message).
    pub state: Option<String>,
    /// The status message's (or the message's) text; empty when there is none.
    pub message_text: String,
    /// The artifacts this body carries.
    pub artifacts: Vec<Artifact>,
    /// The body was a whole task: its artifacts replace those of their ids
    /// (a whole task never appends to one).
    pub whole_task: bool,
}

/// Reads a push body of either version.
pub fn read_push(body: &[u8]) -> Result<TaskUpdate, ProtocolError> {
    let value: Value = serde_json::from_slice(body).map_err(|e| shape(PUSH, e.to_string()))?;
    read_push_value(&value)
}

/// Reads a push body already parsed as JSON.
pub fn read_push_value(value: &Value) -> Result<TaskUpdate, ProtocolError> {
    if !value.is_object() {
        return Err(shape(PUSH, "not a JSON object".into()));
    }
    if let Some(kind) = value.get("kind") {
        return match kind.as_str() {
            Some("task") => task(value, Version::V03, PUSH),
            Some("status-update") => status_update(value, Version::V03),
            Some("artifact-update") => artifact_update(value, Version::V03),
            Some("message") => message(value, Version::V03),
            _ => Err(shape(PUSH, format!("unknown kind {kind}"))),
        };
    }
    let keys = ["task", "statusUpdate", "artifactUpdate", "message"];
    let present: Vec<&str> = keys
        .into_iter()
        .filter(|k| value.get(*k).is_some_and(Value::is_object))
        .collect();
    match present.as_slice() {
        ["task"] => task(&value["task"], Version::V1, PUSH),
        ["statusUpdate"] => status_update(&value["statusUpdate"], Version::V1),
        ["artifactUpdate"] => artifact_update(&value["artifactUpdate"], Version::V1),
        ["message"] => message(&value["message"], Version::V1),
        [] => Err(shape(
            PUSH,
            "neither a 0.3 kind nor one of task, statusUpdate, artifactUpdate, message".into(),
        )),
        more => Err(shape(PUSH, format!("more than one of {more:?}"))),
    }
}

/// Reads a `GetTask` (0.3: `tasks/get`) answer: a task, bare or as the
/// `result` of its JSON-RPC envelope. A JSON-RPC error is an error here:
/// the poller asks again later.
pub fn read_get_task(value: &Value) -> Result<TaskUpdate, ProtocolError> {
    let task_value = if value.get("jsonrpc").is_some() {
        if let Some(error) = value.get("error") {
            return Err(shape(ANSWER, format!("a JSON-RPC error: {error}")));
        }
        value
            .get("result")
            .ok_or_else(|| shape(ANSWER, "a JSON-RPC answer without result".into()))?
    } else {
        value
    };
    let version = match task_value.get("kind").and_then(Value::as_str) {
        Some("task") => Version::V03,
        Some(other) => return Err(shape(ANSWER, format!("kind {other:?} is not a task"))),
        None => Version::V1,
    };
    task(task_value, version, ANSWER)
}

fn task(
    value: &Value,
    version: Version,
    expected: &'static str,
) -> Result<TaskUpdate, ProtocolError> {
    let task_id = required_id(value, "id", expected)?;
    let status = value.get("status");
    let artifacts = match value.get("artifacts") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(list)) => list
            .iter()
            .map(|a| artifact(a, false, false, expected))
            .collect::<Result<_, _>>()?,
        Some(_) => return Err(shape(expected, "artifacts is not a list".into())),
    };
    Ok(TaskUpdate {
        task_id,
        version,
        state: status.and_then(|s| text_field(s, "state")).map(Into::into),
        message_text: status
            .and_then(|s| s.get("message"))
            .map(parts_of)
            .unwrap_or_default(),
        artifacts,
        whole_task: true,
    })
}

fn status_update(value: &Value, version: Version) -> Result<TaskUpdate, ProtocolError> {
    let task_id = required_id(value, "taskId", PUSH)?;
    let status = value
        .get("status")
        .filter(|s| s.is_object())
        .ok_or_else(|| shape(PUSH, "a status update without status".into()))?;
    Ok(TaskUpdate {
        task_id,
        version,
        state: text_field(status, "state").map(Into::into),
        message_text: status.get("message").map(parts_of).unwrap_or_default(),
        artifacts: Vec::new(),
        whole_task: false,
    })
}

fn artifact_update(value: &Value, version: Version) -> Result<TaskUpdate, ProtocolError> {
    let task_id = required_id(value, "taskId", PUSH)?;
    let flag = |key: &str| value.get(key).and_then(Value::as_bool).unwrap_or(false);
    let artifact_value = value
        .get("artifact")
        .ok_or_else(|| shape(PUSH, "an artifact update without artifact".into()))?;
    Ok(TaskUpdate {
        task_id,
        version,
        state: None,
        message_text: String::new(),
        artifacts: vec![artifact(
            artifact_value,
            flag("append"),
            flag("lastChunk"),
            PUSH,
        )?],
        whole_task: false,
    })
}

fn message(value: &Value, version: Version) -> Result<TaskUpdate, ProtocolError> {
    Ok(TaskUpdate {
        task_id: required_id(value, "taskId", PUSH)?,
        version,
        state: None,
        message_text: parts_of(value),
        artifacts: Vec::new(),
        whole_task: false,
    })
}

fn artifact(
    value: &Value,
    append: bool,
    last_chunk: bool,
    expected: &'static str,
) -> Result<Artifact, ProtocolError> {
    if !value.is_object() {
        return Err(shape(expected, "an artifact is not an object".into()));
    }
    Ok(Artifact {
        id: required_id(value, "artifactId", expected)?,
        append,
        last_chunk,
        text: parts_of(value),
    })
}

/// The text of an object's `parts`, one line per part that has any.
fn parts_of(value: &Value) -> String {
    let Some(parts) = value.get("parts").and_then(Value::as_array) else {
        return String::new();
    };
    let texts: Vec<String> = parts.iter().filter_map(part_text).collect();
    texts.join("\n")
}

/// A part's text: text verbatim, data as compact JSON, a file by its name
/// (never fetched). Both versions: 1.0's oneof keys (`text`, `data`,
/// `raw`, `url`) and 0.3's (`kind` with `text`, `data`, `file`).
fn part_text(part: &Value) -> Option<String> {
    if let Some(text) = part.get("text").and_then(Value::as_str) {
        return Some(text.to_owned());
    }
    if let Some(data) = part.get("data") {
        return Some(data.to_string());
    }
    // 0.3: `file: {name, mimeType, uri | bytes}`; 1.0: `raw` or `url`
    // beside `filename` and `mediaType`.
    let (file, name_key, media_key) = match part.get("file") {
        Some(file) => (file, "name", "mimeType"),
        None if part.get("raw").is_some() || part.get("url").is_some() => {
            (part, "filename", "mediaType")
        }
        None => return None,
    };
    let name = text_field(file, name_key)
        .or_else(|| text_field(file, "uri"))
        .or_else(|| text_field(file, "url"))
        .unwrap_or("unnamed");
    Some(match text_field(file, media_key) {
        Some(media) => format!("[file {name} ({media})]"),
        None => format!("[file {name}]"),
    })
}

fn required_id(value: &Value, key: &str, expected: &'static str) -> Result<String, ProtocolError> {
    text_field(value, key)
        .map(Into::into)
        .ok_or_else(|| shape(expected, format!("no {key}")))
}

fn shape(expected: &'static str, reason: String) -> ProtocolError {
    ProtocolError::Shape { expected, reason }
}

#[cfg(test)]
mod tests;
