//! Calling the agent: the [`Agent`] trait the embedding runtime implements,
//! and the adapters the standalone binary uses (an HTTP webhook to the
//! runtime, a built-in `chatWith` against an OpenAI-compatible endpoint with
//! its history in the store, and, with neither configured, stdout).

pub mod chat;
pub mod history;
mod http;
pub(crate) use http::causes as http_causes;
mod log;
pub mod operator;
pub mod payload;
mod replay;
pub mod signature;
mod signed;
pub mod webhook;

pub use chat::{ChatAgent, ChatConfig, ChatHistory, ChatTurn, HistoryError};
pub use history::StoreHistory;
pub use log::LogAgent;
pub use operator::{NotifyFormat, Operator, OperatorConfig, OperatorWebhook};
pub use payload::{ContinuationEvent, NoticeEvent, OperatorNoticeEvent, WebhookEvent};
pub use signature::{SecretError, WebhookSecret};
pub use webhook::{WebhookAgent, WebhookConfig};

/// Re-exported so a runtime implementing [`Agent`] or `ChatHistory` uses
/// the same macro version as this crate without a dependency of its own.
pub use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// One finished execution, as reported to the agent (in-process, and in a
/// webhook's `continuation.v1`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ExecutionReport {
    /// The execution id, as the tool result named it.
    pub id: Uuid,
    /// The runtime's status string, verbatim.
    pub status: String,
    /// `completed`, `failed` or `cancelled`, as the policy classified the
    /// status (`unknown` for a status the host holds no class of).
    pub outcome: String,
    /// The execution's result as the runtime reported it.
    pub result: String,
}

/// A re-invocation of the agent for one session.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Continuation {
    /// The chat session to re-invoke.
    pub session_id: Uuid,
    /// The same for every redelivery of this continuation, so the runtime
    /// can drop duplicates after a crash between its reply and our commit.
    pub idempotency_key: String,
    /// The executions folded into this continuation.
    pub executions: Vec<ExecutionReport>,
    /// The policy's note, injected after the replayed history and never
    /// stored as a user turn.
    pub note: String,
    /// The policy's SOUL text for the agent's system prompt.
    pub soul: String,
    /// The W3C `traceparent` this call is made under: the host's `deliver`
    /// span, a child of the trace kept with the executions' link (the
    /// first of them that has one), sent as the `traceparent` header so the
    /// agent's next turn joins the trace of the tool call that started the
    /// work. `None` when the host made no span (an embedding's own calls).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub traceparent: Option<String>,
    /// The `tracestate` that goes with `traceparent`, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tracestate: Option<String>,
}

/// Something the operator should see, such as a continuation that was
/// dropped because the window closed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Notice {
    /// The chat session the notice is about.
    pub session_id: Uuid,
    /// Stable across redeliveries, like a continuation's.
    pub idempotency_key: String,
    /// What the operator is told, in one paragraph.
    pub message: String,
    /// As [`Continuation::traceparent`]: the notice's `deliver` span.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub traceparent: Option<String>,
    /// As [`Continuation::tracestate`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tracestate: Option<String>,
}

/// Why a delivery failed, and whether trying again can help.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum AgentError {
    /// The agent could not take the call now: no answer (a time-out, a
    /// refused or reset connection) or "come back later" (408, 409 for the
    /// same key still in progress, 429, 502, 503, 504). Retried within the
    /// wall-time budget, not before `retry_after` when the runtime named
    /// one, and not counted as an attempt the policy sees: a runtime that is
    /// down for minutes only delays delivery.
    #[error("unavailable: {message}")]
    Unavailable {
        /// What happened, for the ledger and the logs.
        message: String,
        /// The runtime's `Retry-After`, if it sent one.
        retry_after: Option<std::time::Duration>,
    },
    /// The agent answered with an error that may pass (a 500): retried with
    /// backoff, and counted as an attempt.
    #[error("retryable: {0}")]
    Retryable(String),
    /// A 4xx or a malformed request: retrying cannot help.
    #[error("permanent: {0}")]
    Permanent(String),
}

impl AgentError {
    /// An [`AgentError::Unavailable`] with no `Retry-After`.
    pub fn unavailable(message: impl Into<String>) -> Self {
        Self::Unavailable {
            message: message.into(),
            retry_after: None,
        }
    }

    /// The message without the class.
    pub fn message(&self) -> &str {
        match self {
            Self::Unavailable { message, .. }
            | Self::Retryable(message)
            | Self::Permanent(message) => message,
        }
    }

    /// True unless retrying cannot help.
    pub fn is_retryable(&self) -> bool {
        !matches!(self, Self::Permanent(_))
    }

    /// True for a shortage on the agent's side rather than an answer.
    pub fn is_shortage(&self) -> bool {
        matches!(self, Self::Unavailable { .. })
    }

    /// The earliest the runtime asked to be called again.
    pub fn retry_after(&self) -> Option<std::time::Duration> {
        match self {
            Self::Unavailable { retry_after, .. } => *retry_after,
            _ => None,
        }
    }
}

/// What the host needs from the agent runtime.
#[async_trait]
pub trait Agent: Send + Sync {
    /// Re-invokes the agent of `continuation.session_id` with the note.
    /// Returning `Ok` means the runtime has accepted it; the host then marks
    /// the executions continued.
    async fn continue_session(&self, continuation: &Continuation) -> Result<(), AgentError>;

    /// Shows a notice to the operator of a session.
    async fn notify(&self, notice: &Notice) -> Result<(), AgentError>;
}

/// Why an adapter could not be built from its configuration. Reported at
/// start-up, so a typo never surfaces as a stream of failed deliveries.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum AdapterConfigError {
    /// A URL that does not parse or is not `http`/`https`.
    #[error("invalid {field}: {reason}")]
    Url {
        /// Which setting.
        field: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// A token or API key that cannot be sent in an HTTP header (the value
    /// itself is never echoed).
    #[error("the token contains characters not allowed in an HTTP header")]
    Token,
    /// A zero time-out would fail every request.
    #[error("the request time-out must be greater than zero")]
    Timeout,
    /// `chatWith` needs a model name for every request.
    #[error("the chat model name must not be empty")]
    Model,
    /// The HTTP client could not be built (for example no TLS backend).
    #[error("cannot build the HTTP client: {0}")]
    Client(String),
}
