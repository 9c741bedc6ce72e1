//! The contract's data, mirrored from `wit/policy.wit`, with its JSON form.
//!
//! The JSON form is what policy authors write in golden files and pipe into
//! `wasmtime run policy.wasm decide`: snake_case keys, times in RFC 3339,
//! unknown keys refused so a typo is an error rather than a silent default.

use chrono::{DateTime, SecondsFormat, Timelike, Utc};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Seconds and nanoseconds since the Unix epoch, UTC. Ordered by time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp {
    /// Whole seconds since 1970-01-01T00:00:00Z.
    pub seconds: i64,
    /// The fraction of the second, `0..1_000_000_000`.
    pub nanoseconds: u32,
}

impl Timestamp {
    /// Parses an RFC 3339 time (any offset; kept as UTC).
    pub fn parse_rfc3339(text: &str) -> Result<Self, String> {
        let parsed = DateTime::parse_from_rfc3339(text).map_err(|e| {
            format!(
                "invalid timestamp {text:?} ({e}); expected RFC 3339 such as 2026-11-30T04:00:00Z"
            )
        })?;
        Ok(Self::from(parsed.to_utc()))
    }

    /// Formats as RFC 3339 in UTC, or as raw seconds if out of range.
    pub fn to_rfc3339(self) -> String {
        DateTime::from_timestamp(self.seconds, self.nanoseconds)
            .map(|t| t.to_rfc3339_opts(SecondsFormat::AutoSi, true))
            .unwrap_or_else(|| format!("@{}.{:09}", self.seconds, self.nanoseconds))
    }
}

impl From<DateTime<Utc>> for Timestamp {
    fn from(t: DateTime<Utc>) -> Self {
        Self {
            seconds: t.timestamp(),
            nanoseconds: t.nanosecond(),
        }
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_rfc3339())
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Timestamp::parse_rfc3339(&text).map_err(serde::de::Error::custom)
    }
}

/// How a terminal execution ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// It finished and did what it was asked.
    Completed,
    /// It finished with an error.
    Failed,
    /// It was stopped before it finished.
    Cancelled,
}

impl Outcome {
    /// The word used in notes and JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Completed => "completed",
            Outcome::Failed => "failed",
            Outcome::Cancelled => "cancelled",
        }
    }
}

/// Whether a status is terminal; serialised as
/// `{"terminal":true,"outcome":"failed"}`, `{"terminal":false}` or
/// `{"terminal":false,"person":"input"}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatusClass {
    /// Still running (or a status the policy does not know): wait.
    NonTerminal,
    /// Finished, with this outcome.
    Terminal(Outcome),
    /// Paused until a person gives what it asks for; not finished.
    AwaitingPerson(PersonNeed),
}

/// What a paused execution waits for from a person.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PersonNeed {
    /// An answer or more data (`input-required`).
    Input,
    /// A permission or a sign-in (`auth-required`).
    Authorization,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct StatusClassJson {
    terminal: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    outcome: Option<Outcome>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    person: Option<PersonNeed>,
}

impl Serialize for StatusClass {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let (terminal, outcome, person) = match *self {
            StatusClass::NonTerminal => (false, None, None),
            StatusClass::Terminal(o) => (true, Some(o), None),
            StatusClass::AwaitingPerson(p) => (false, None, Some(p)),
        };
        StatusClassJson {
            terminal,
            outcome,
            person,
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for StatusClass {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let json = StatusClassJson::deserialize(d)?;
        match (json.terminal, json.outcome, json.person) {
            (false, None, None) => Ok(StatusClass::NonTerminal),
            (true, Some(o), None) => Ok(StatusClass::Terminal(o)),
            (false, None, Some(p)) => Ok(StatusClass::AwaitingPerson(p)),
            (true, None, _) => Err(serde::de::Error::custom(
                "a terminal status needs an outcome",
            )),
            (true, Some(_), Some(_)) => Err(serde::de::Error::custom(
                "a terminal status waits for no person",
            )),
            (false, Some(_), _) => Err(serde::de::Error::custom(
                "a non-terminal status has no outcome",
            )),
        }
    }
}

/// The protocol a task belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskProtocol {
    /// MCP Tasks.
    Mcp,
    /// Agent2Agent.
    A2a,
}

impl TaskProtocol {
    /// The word used in notes and JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskProtocol::Mcp => "mcp",
            TaskProtocol::A2a => "a2a",
        }
    }
}

/// A protocol's task, by the id the protocol gave it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskRef {
    /// Whose task.
    pub protocol: TaskProtocol,
    /// The protocol's task id, verbatim (1 to 1024 bytes).
    pub id: String,
}

/// One thing a tool result names; serialised as `{"execution":"<uuid>"}` or
/// `{"task":{"protocol":"mcp","id":"…"}}`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LinkRef {
    /// An execution id, canonical lowercase.
    Execution(String),
    /// A protocol's task.
    Task(TaskRef),
}

/// How the operator approved the plan that opened a window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalRoute {
    /// The approve button of the chat client.
    Button,
    /// A chat message the runtime read as approval.
    Chat,
    /// A call of the HTTP API.
    Api,
}

/// An assent window; open while `opened_at <= now < expires_at`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Window {
    /// When the operator approved.
    pub opened_at: Timestamp,
    /// When automatic continuation stops (at most 30 minutes later).
    pub expires_at: Timestamp,
    /// How the operator approved.
    pub route: ApprovalRoute,
}

impl Window {
    /// True while `opened_at <= now < expires_at`.
    pub fn is_open_at(&self, now: Timestamp) -> bool {
        self.opened_at <= now && now < self.expires_at
    }
}

/// One asynchronous execution as the runtime last reported it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Execution {
    /// The execution id (a lowercase UUID).
    pub id: String,
    /// The status string as the runtime reported it.
    pub status: String,
    /// Its output so far (`null` reads as empty).
    #[serde(default, deserialize_with = "null_as_empty")]
    pub result: String,
    /// When it reported a terminal status, if it has.
    #[serde(default)]
    pub finished_at: Option<Timestamp>,
    /// The protocol task it stands for, if it was linked as one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<TaskRef>,
}

/// Reads a string that may be `null` as the empty string.
///
/// Why: a runtime serialises an execution with no output yet as
/// `"result": null`. That is the same fact as no result at all, so it must
/// decide like `""` (the note says "(no output)") instead of failing the
/// whole decision input; any other non-string is still an error.
pub fn null_as_empty<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    Ok(Option::<String>::deserialize(d)?.unwrap_or_default())
}

/// The chat session an execution is linked to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Session {
    /// The session id.
    pub id: String,
    /// Its assent window, open or not; absent if never approved.
    #[serde(default)]
    pub window: Option<Window>,
    /// Required: a missing count must not read as zero and defeat the loop guard.
    pub continuations_in_window: u32,
    /// The other executions linked to the session that have not finished.
    #[serde(default)]
    pub still_running: Vec<String>,
}

/// Everything a policy needs to decide about one execution.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DecisionInput {
    /// The time the host decides at (the policy reads no clock).
    pub now: Timestamp,
    /// The execution to decide about.
    pub execution: Execution,
    /// Its session.
    pub session: Session,
    /// How many deliveries of it were tried and failed before.
    #[serde(default)]
    pub attempts: u32,
}

/// What to do about one execution; serialised as `{"decision":"wait"}`,
/// `{"decision":"continue","note":"…"}` or `{"decision":"drop","reason":"…"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "decision", rename_all = "snake_case", deny_unknown_fields)]
pub enum Decision {
    /// Do nothing now; decide again when something changes.
    Wait,
    /// Re-invoke the agent with this note.
    Continue {
        /// What the agent is told (the note).
        note: String,
    },
    /// Do not continue it; the operator is told why.
    Drop {
        /// Why, in words for the operator.
        reason: String,
    },
}

/// Who a policy is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicyInfo {
    /// The policy's name.
    pub name: String,
    /// Its version.
    pub version: String,
    /// The contract it implements, `nomos:continuation@<semver>`.
    pub contract: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    const EXECUTION: &str = r#"{"id": "3f2504e0-4f89-11d3-9a0c-0305e82c3301", "status": "running""#;

    fn parse(rest: &str) -> Result<Execution, serde_json::Error> {
        serde_json::from_str(&format!("{EXECUTION}{rest}}}"))
    }

    #[test]
    fn a_null_result_reads_as_empty() {
        let e = parse(r#", "result": null"#).expect("null result accepted");
        assert_eq!(e.result, "");
        assert_eq!(parse("").expect("missing result accepted").result, "");
        assert_eq!(
            parse(r#", "result": "ok""#).expect("text result").result,
            "ok"
        );
        assert!(
            parse(r#", "result": 7"#).is_err(),
            "a number is not a result"
        );
    }
}
