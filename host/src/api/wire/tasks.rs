//! The protocols' routes: a task registered for a session (and its A2A
//! push configuration), and what an MCP task update did.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use super::Execution;

/// The protocol a task belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum TaskProtocolName {
    /// A task of a task-augmented MCP `tools/call`.
    Mcp,
    /// A task of a remote agent spoken to over A2A.
    A2a,
}

/// The A2A version a remote agent speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize, ToSchema)]
pub enum A2aVersion {
    /// A2A 1.0.
    #[serde(rename = "1.0")]
    V1,
    /// A2A 0.3.
    #[serde(rename = "0.3")]
    V03,
}

/// The remote A2A agent a task runs on.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskAgentRequest {
    /// The agent's JSON-RPC URL (`http://` or `https://`): asked for the
    /// task when a push is overdue.
    pub url: String,
    /// The A2A version it speaks.
    pub version: A2aVersion,
}

/// `POST /v1/sessions/{id}/tasks`: this session's task, and where its
/// pushes go.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskRequest {
    /// The task's protocol.
    pub protocol: TaskProtocolName,
    /// The task's id as the remote side minted it (1 to 1024 bytes).
    pub task_id: String,
    /// How long the push token must stay valid, in seconds (A2A only):
    /// the token expires at the later of the session's window expiry and
    /// now plus this, at most 7 days from now. Default one day.
    #[serde(default)]
    pub ttl_seconds: Option<i64>,
    /// The remote agent (A2A only), for polling when a push is overdue.
    #[serde(default)]
    pub agent: Option<TaskAgentRequest>,
}

/// How the remote agent authenticates its pushes.
#[derive(Debug, Serialize, ToSchema)]
pub struct PushAuthentication {
    /// Always `Bearer`.
    pub scheme: String,
    /// The push token again, for an A2A 1.0 `authentication` block.
    pub credentials: String,
}

/// The push configuration to pass to the remote agent (A2A
/// `TaskPushNotificationConfig`: `url`, `token`, `authentication`).
#[derive(Debug, Serialize, ToSchema)]
pub struct PushConfiguration {
    /// Where the agent POSTs its pushes.
    pub url: String,
    /// A secret that can report this one task and nothing else; kept only
    /// as its SHA-256. Minting again replaces it.
    pub token: String,
    /// The same token as an `Authorization` scheme and credentials.
    pub authentication: PushAuthentication,
    /// When the token stops being accepted.
    pub expires_at: DateTime<Utc>,
}

/// What registering a task did.
#[derive(Debug, Serialize, ToSchema)]
pub struct TaskRegistered {
    /// The execution id the task stands for (a name-based UUID over its
    /// protocol and id).
    pub execution_id: Uuid,
    /// `true` when this call linked it to the session; `false` when it was
    /// linked to it already.
    pub linked: bool,
    /// The push configuration (A2A tasks), or `null` (MCP tasks).
    pub push: Option<PushConfiguration>,
}

/// What an MCP task update did.
#[derive(Debug, Serialize, ToSchema)]
pub struct McpTaskRecorded {
    /// The execution id the task stands for.
    pub execution_id: Uuid,
    /// The execution as stored after the update, or `null` when nothing
    /// was recorded yet (a status waiting for its result on a task never
    /// reported before).
    pub execution: Option<Execution>,
    /// `true` when a status was recorded and applied; `false` when it was
    /// a duplicate, waits for its result, or came after a terminal one.
    pub applied: bool,
    /// Why nothing was applied, or `null`.
    pub note: Option<String>,
}

/// `POST /v1/sessions/{id}/push-configs`: a push configuration for every
/// task the session's agent creates.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionPushRequest {
    /// How long a push of it may link a task not linked yet, in seconds
    /// (at most 7 days); without it, until the session's open window ends.
    #[serde(default)]
    pub ttl_seconds: Option<i64>,
}

/// A session's push configuration, for the runtime's A2A client
/// (`TaskPushNotificationConfig` in a message's `configuration`, 1.0
/// `taskPushNotificationConfig`, 0.3 `pushNotificationConfig`: `url`,
/// `token`, `authentication`).
#[derive(Debug, Serialize, ToSchema)]
pub struct SessionPushConfiguration {
    /// Where the agent POSTs every push of the session's tasks.
    pub url: String,
    /// A secret that reports the session's tasks and nothing else; kept
    /// only as its SHA-256. Minting again adds another; this one stays
    /// valid.
    pub token: String,
    /// The same token as an `Authorization` scheme and credentials.
    pub authentication: PushAuthentication,
    /// Until when a push links a task not linked yet; a task it linked
    /// keeps reporting after.
    pub links_until: DateTime<Utc>,
    /// The most tasks the session links through its push configurations.
    pub max_tasks: i64,
}
