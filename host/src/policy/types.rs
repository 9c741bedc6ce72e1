//! The host's side of the contract's data (`wit/policy.wit`), and its JSON
//! form.
//!
//! Why the host has types of its own: it meets a policy only through `wit/`,
//! so it links no guest crate, and the generated bindings are awkward to
//! hold (no serde, variants with unnamed payloads). These are what the
//! worker, the API and the golden files use; `convert` is the one mapping to
//! and from the bindings.
//!
//! The JSON form is the one policy authors write in golden files and pipe
//! into `wasmtime run policy.wasm decide`: snake_case keys, RFC 3339 times,
//! unknown keys refused (a typo must be an error, not a silent default).
//! The host reads decision inputs and writes answers; it also writes the
//! inputs it decided on, in the same form, to the decision log, and those
//! a shadow revision decided differently on (so a recorded input is a golden
//! case as it stands), and reads them back to replay them. Answers are only
//! written. Field order is part of the
//! form too: serde lists the expected fields in declaration order in its
//! errors, and golden `.err` files pin those lines.

use chrono::{DateTime, Timelike, Utc};
use serde::ser::SerializeStruct;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A point in time as the contract carries it: whole seconds and
/// nanoseconds since the Unix epoch, UTC. Ordered by time. Read from JSON
/// as RFC 3339 with any offset.
///
/// Every conversion between this and `chrono` is in the impls below, so
/// changing the host's clock type touches only them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize)]
#[serde(try_from = "String")]
pub struct Timestamp {
    /// Seconds since the Unix epoch.
    pub seconds: i64,
    /// Below one second, in nanoseconds.
    pub nanoseconds: u32,
}

impl From<DateTime<Utc>> for Timestamp {
    fn from(at: DateTime<Utc>) -> Self {
        Timestamp {
            seconds: at.timestamp(),
            nanoseconds: at.nanosecond(),
        }
    }
}

/// Written as RFC 3339 in UTC, with a fraction only when there is one, as
/// golden files write it, so an input the host records (in the decision
/// log, or a shadow's disagreement) reads back to the same value.
impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let at = DateTime::<Utc>::from_timestamp(self.seconds, self.nanoseconds)
            .ok_or_else(|| serde::ser::Error::custom("timestamp out of range"))?;
        serializer.serialize_str(&at.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true))
    }
}

impl TryFrom<String> for Timestamp {
    type Error = String;

    /// The message names the bad text and an example, because it is what a
    /// policy author sees for a typo in a golden file.
    fn try_from(text: String) -> Result<Self, String> {
        DateTime::parse_from_rfc3339(&text)
            .map(|at| Timestamp::from(at.to_utc()))
            .map_err(|why| {
                format!(
                    "invalid timestamp {text:?} ({why}); expected RFC 3339 such as 2026-11-30T04:00:00Z"
                )
            })
    }
}

/// Whether a status string is terminal, and how it ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatusClass {
    /// Not finished: the host waits for another report.
    NonTerminal,
    /// Finished: the host plans or drops it.
    Terminal(Outcome),
    /// Paused until a person acts: not finished (a later report applies),
    /// never continued; the operator is told what the work asks for.
    AwaitingPerson(PersonNeed),
}

impl StatusClass {
    /// Whether the status is terminal.
    pub fn is_terminal(self) -> bool {
        matches!(self, StatusClass::Terminal(_))
    }
}

/// Written as `{"terminal":false}`, `{"terminal":true,"outcome":"failed"}`
/// or `{"terminal":false,"person":"input"}`: a flag a shell script can test,
/// with the outcome or the person's need only where there is one (so a
/// 0.1.0 answer reads as it always did).
impl Serialize for StatusClass {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut out = serializer.serialize_struct("StatusClass", 2)?;
        out.serialize_field("terminal", &self.is_terminal())?;
        match self {
            StatusClass::NonTerminal => out.skip_field("outcome")?,
            StatusClass::Terminal(outcome) => out.serialize_field("outcome", outcome)?,
            StatusClass::AwaitingPerson(need) => out.serialize_field("person", need)?,
        }
        out.end()
    }
}

/// What a paused execution waits for from a person. In declaration order,
/// so that [`PersonNeed::as_str`] can look its word up by discriminant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PersonNeed {
    /// An answer or more data (`input-required`).
    Input,
    /// A permission or a sign-in (`auth-required`).
    Authorization,
}

impl Serialize for PersonNeed {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl PersonNeed {
    /// The word the JSON form and the store use.
    pub fn as_str(self) -> &'static str {
        const WORDS: [&str; 2] = ["input", "authorization"];
        WORDS[self as usize]
    }

    /// The need [`PersonNeed::as_str`] names, if any: how a stored class is
    /// read back.
    pub fn from_word(word: &str) -> Option<Self> {
        [Self::Input, Self::Authorization]
            .into_iter()
            .find(|n| n.as_str() == word)
    }
}

/// The protocol a task belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskProtocol {
    /// MCP Tasks.
    Mcp,
    /// Agent2Agent.
    A2a,
}

/// A protocol's task, by the id the protocol gave it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TaskRef {
    /// Whose task.
    pub protocol: TaskProtocol,
    /// Verbatim, 1 to 1024 bytes.
    pub id: String,
}

/// One thing a tool result names for the host to watch. Written as
/// `{"execution":"<uuid>"}` or `{"task":{"protocol":"mcp","id":"…"}}`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LinkRef {
    /// An execution id, canonical lowercase.
    Execution(String),
    /// A protocol's task; linked under its name-based execution id.
    Task(TaskRef),
}

/// For people (the console, logs): an execution as its id, a task as
/// `mcp task "<id>"`.
impl std::fmt::Display for LinkRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LinkRef::Execution(id) => f.write_str(id),
            LinkRef::Task(task) => {
                let protocol = match task.protocol {
                    TaskProtocol::Mcp => "mcp",
                    TaskProtocol::A2a => "a2a",
                };
                write!(f, "{protocol} task {:?}", task.id)
            }
        }
    }
}

/// How a terminal execution ended. In declaration order, so that
/// [`Outcome::as_str`] can look its word up by discriminant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// Succeeded.
    Completed,
    /// Ended in an error the agent may diagnose.
    Failed,
    /// Stopped before the end.
    Cancelled,
}

impl Serialize for Outcome {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl Outcome {
    /// The word the agent is shown and the JSON form uses.
    pub fn as_str(self) -> &'static str {
        const WORDS: [&str; 3] = ["completed", "failed", "cancelled"];
        WORDS[self as usize]
    }

    /// The outcome [`Outcome::as_str`] names, if any: how a stored class
    /// is read back.
    pub fn from_word(word: &str) -> Option<Self> {
        [Self::Completed, Self::Failed, Self::Cancelled]
            .into_iter()
            .find(|o| o.as_str() == word)
    }
}

/// Who a policy is; shown by `policy check`, the API and the ledger.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PolicyInfo {
    /// As the policy reports it in `describe`.
    pub name: String,
    /// Free text chosen by the policy author.
    pub version: String,
    /// `nomos:continuation@<semver>`; the host refuses another major.
    pub contract: String,
}

/// How the operator approved the plan that opened a window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalRoute {
    /// Recorded by the chat client's approve button.
    Button,
    /// Recorded from a chat message read as approval.
    Chat,
    /// Recorded by a caller of the HTTP API.
    Api,
}

/// An assent window; open while `opened_at <= now < expires_at`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Window {
    /// The approval's time, stamped by the replica that took it.
    pub opened_at: Timestamp,
    /// The end of automatic continuation, 30 minutes at most after approval.
    pub expires_at: Timestamp,
    /// Which route recorded the approval.
    pub route: ApprovalRoute,
}

/// One asynchronous execution as the runtime last reported it. A missing
/// `finished_at` is `None` (serde's rule for `Option` fields).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Execution {
    /// Canonical lowercase UUID, as the host stores it.
    pub id: String,
    /// Verbatim from the runtime's last report.
    pub status: String,
    #[serde(default, deserialize_with = "null_as_empty")]
    /// Cut in the middle by the host when over its size limit.
    pub result: String,
    /// Set by the first report classified as terminal.
    pub finished_at: Option<Timestamp>,
    /// The protocol task the execution stands for, if it was linked as one.
    /// Left out of the written form when absent, so an input recorded
    /// before 0.2.0 reads back as it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<TaskRef>,
}

/// Reads a string that may be `null` (or absent, with `#[serde(default)]`)
/// as the empty string.
///
/// Why: a runtime writes an execution with no output yet as
/// `"result": null`. That is the same fact as an empty result, so it must
/// decide like `""` instead of failing the whole input; any other
/// non-string is still an error. The API reads reported results with it
/// too, so both agree on what "no output" is.
pub fn null_as_empty<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    Option::<String>::deserialize(d).map(Option::unwrap_or_default)
}

/// The chat session an execution is linked to.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Session {
    /// Canonical lowercase UUID.
    pub id: String,
    /// The host leaves out a denied window, and one never approved.
    pub window: Option<Window>,
    /// Required: a missing count must not read as zero and defeat the loop
    /// guard.
    pub continuations_in_window: u32,
    #[serde(default)]
    /// Linked executions of the session, other than this one, that have not
    /// reported a terminal status.
    pub still_running: Vec<String>,
}

/// Everything a policy needs to decide about one execution.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct DecisionInput {
    /// The host's clock at the pass (never before the window opened).
    pub now: Timestamp,
    /// What the runtime last reported.
    pub execution: Execution,
    /// Where it was linked.
    pub session: Session,
    #[serde(default)]
    /// Failed deliveries of a continuation for it so far.
    pub attempts: u32,
}

/// What to do about one execution. Written as `{"decision":"wait"}`,
/// `{"decision":"continue","note":"…"}` or `{"decision":"drop","reason":"…"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
pub enum Decision {
    /// Not yet: the host asks again on a later pass.
    Wait,
    /// The host plans a continuation carrying `note`.
    Continue {
        /// Injected after the replayed history, never stored as a user turn.
        note: String,
    },
    /// The host settles the execution as dropped and sends one notice.
    Drop {
        /// The notice's explanation.
        reason: String,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    fn execution(result: &str) -> Result<Execution, serde_json::Error> {
        serde_json::from_str(&format!(
            r#"{{"id": "3f2504e0-4f89-11d3-9a0c-0305e82c3301", "status": "running"{result}}}"#
        ))
    }

    #[test]
    fn a_null_or_missing_result_is_empty_and_a_number_is_refused() {
        let result = |json| execution(json).map(|e| e.result);
        assert_eq!(result(r#", "result": null"#).ok().as_deref(), Some(""));
        assert_eq!(result("").ok().as_deref(), Some(""));
        assert_eq!(result(r#", "result": "ok""#).ok().as_deref(), Some("ok"));
        assert!(result(r#", "result": 7"#).is_err());
    }

    fn json<T: Serialize>(value: &T) -> String {
        serde_json::to_string(value).unwrap_or_else(|e| e.to_string())
    }

    #[test]
    fn status_classes_and_decisions_have_their_json_form() {
        assert_eq!(json(&StatusClass::NonTerminal), r#"{"terminal":false}"#);
        assert_eq!(
            json(&StatusClass::Terminal(Outcome::Failed)),
            r#"{"terminal":true,"outcome":"failed"}"#
        );
        assert_eq!(
            json(&StatusClass::AwaitingPerson(PersonNeed::Authorization)),
            r#"{"terminal":false,"person":"authorization"}"#
        );
        assert_eq!(
            json(&LinkRef::Task(TaskRef {
                protocol: TaskProtocol::A2a,
                id: "t-1".into()
            })),
            r#"{"task":{"protocol":"a2a","id":"t-1"}}"#
        );
        assert_eq!(
            json(&LinkRef::Execution("e".into())),
            r#"{"execution":"e"}"#
        );
        assert_eq!(PersonNeed::from_word("input"), Some(PersonNeed::Input));
        assert_eq!(PersonNeed::from_word("nobody"), None);
        assert_eq!(json(&Decision::Wait), r#"{"decision":"wait"}"#);
        assert_eq!(
            json(&Decision::Drop { reason: "r".into() }),
            r#"{"decision":"drop","reason":"r"}"#
        );
    }

    #[test]
    fn timestamps_read_any_offset_as_utc_and_name_a_bad_one() {
        let ts = Timestamp::try_from("2026-11-30T05:00:00.5+01:00".to_string());
        let utc = DateTime::parse_from_rfc3339("2026-11-30T04:00:00Z")
            .map(|t| Timestamp::from(t.to_utc()));
        assert_eq!(
            ts.ok().map(|t| (t.seconds, t.nanoseconds)),
            utc.ok().map(|t| (t.seconds, 500_000_000))
        );
        let bad = Timestamp::try_from("yesterday".to_string()).unwrap_err();
        assert!(bad.starts_with("invalid timestamp \"yesterday\""), "{bad}");
    }

    /// Every golden decision input, written back as the decision log writes
    /// it, reads to the same value: a logged input replays as it was seen.
    #[test]
    fn decision_inputs_read_back_from_their_written_form() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/golden/decide");
        let mut read = 0;
        for entry in std::fs::read_dir(&dir).expect("the golden decide folder") {
            let path = entry.expect("an entry").path();
            if path.extension().is_none_or(|e| e != "in") {
                continue;
            }
            let text = std::fs::read_to_string(&path).expect("a readable case");
            let Ok(input) = serde_json::from_str::<DecisionInput>(&text) else {
                continue; // a bad-input case
            };
            let written = json(&input);
            let again: DecisionInput = serde_json::from_str(&written).expect("reads back");
            assert_eq!(again, input, "{}", path.display());
            read += 1;
        }
        assert!(read > 5, "only {read} cases read");
        let fraction = Timestamp::try_from("2026-11-30T04:00:00.25Z".to_string());
        assert_eq!(
            fraction.map(|t| json(&t)).ok().as_deref(),
            Some("\"2026-11-30T04:00:00.250Z\"")
        );
    }
}
