//! The built-in `chatWith` adapter: re-invokes the agent by calling an
//! OpenAI-compatible chat-completions endpoint directly, for deployments with
//! no runtime of their own (`--agent-openai URL`).
//!
//! # What the model is sent
//!
//! `POST {base}/v1/chat/completions` with `{"model", "messages", "stream":
//! false}` where `messages` is, in order:
//!
//! 1. one `system` message: the session's stored system turn(s), joined by a
//!    blank line, then a blank line, then the policy's SOUL text (the SOUL
//!    alone when the session has no system turn), so the agent knows it will
//!    be re-invoked when async steps finish;
//! 2. the session's stored `user` and `assistant` turns, replayed in order
//!    within [`ChatConfig::budget_chars`]: the oldest are left out first,
//!    replaced by one labelled `user` message saying how many (see
//!    `agent::replay`), so a long session never makes the request too long
//!    for the model, which would fail it permanently;
//! 3. the continuation note, as the **last** message, with role `user` and
//!    a first line [`NOTE_LABEL`] marking it as an automatic system event.
//!
//! # Why the note is injected but never stored
//!
//! The note is not something the operator said. Stored as a user turn, the
//! next replay would claim the operator spoke, and the agent would treat a
//! machine's status line as the operator's instruction or assent. So the note
//! exists only in the request that carries it; only the assistant's reply,
//! which the agent really said, is appended to the history.
//!
//! # Why the note has role `user`, with a label
//!
//! Many OpenAI-compatible servers (and the chat templates of many open
//! models) reject a `system` message anywhere but first, or after an
//! `assistant` turn. A `user` message is accepted everywhere, and the label
//! line tells the model that this one carries no operator input and grants
//! no approval.
//!
//! # Idempotency
//!
//! A continuation can be delivered again with the same key (a crash between
//! the reply and the worker's commit). [`ChatHistory::has_reply`] lets the
//! adapter skip the model call when the reply for the key is already stored,
//! and [`ChatHistory::append_assistant`] must itself ignore a second append
//! with the same key (two deliveries can race past the check), so the
//! history never holds two replies to one continuation.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use reqwest::header::{HeaderValue, AUTHORIZATION};
use reqwest::{Client, Url};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::http;
#[cfg(feature = "test-support")]
pub use super::replay::build_messages;
pub use super::replay::{build_messages_within, ChatMessage, DEFAULT_BUDGET_CHARS};
use super::{AdapterConfigError, Agent, AgentError, Continuation, Notice};
use crate::redact;

/// The first line of the injected note, so the model cannot mistake it for
/// something the operator typed.
pub const NOTE_LABEL: &str = "[automatic system event — not operator input]";

/// The per-request time-out when none is configured. Unlike a webhook, this
/// call waits for the model to generate its whole reply, which takes far
/// longer than an acknowledgement; but it stays below the worker's default
/// delivery lease (60 s), so a slow model cannot outlive the lease and
/// invite a second, concurrent delivery of the same continuation. Raise the
/// lease with it.
pub const DEFAULT_CHAT_TIMEOUT: Duration = Duration::from_secs(50);

/// The most bytes of a successful completion response read; a real reply is
/// far smaller, and the bound keeps a broken server from exhausting memory.
const RESPONSE_LIMIT: usize = 4 * 1024 * 1024;

/// One stored turn of a session's chat history.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChatTurn {
    /// `system`, `user` or `assistant`.
    pub role: String,
    /// The text, verbatim.
    pub content: String,
}

impl ChatTurn {
    /// A turn with the given role and content.
    pub fn new(role: impl Into<String>, content: impl Into<String>) -> Self {
        ChatTurn {
            role: role.into(),
            content: content.into(),
        }
    }
}

/// Why the history could not be read or written.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum HistoryError {
    /// The store failed or could not be reached; trying again may help.
    #[error("chat history unavailable: {0}")]
    Unavailable(String),
    /// The stored history cannot be used as it is; trying again cannot help.
    #[error("chat history invalid: {0}")]
    Invalid(String),
}

impl From<HistoryError> for AgentError {
    fn from(err: HistoryError) -> Self {
        match err {
            HistoryError::Unavailable(_) => AgentError::unavailable(err.to_string()),
            HistoryError::Invalid(_) => AgentError::Permanent(err.to_string()),
        }
    }
}

/// A session's chat history, as `chatWith` needs it.
/// [`StoreHistory`](super::StoreHistory) implements it over the store; the
/// adapter only reads turns and appends what really happened.
#[async_trait]
pub trait ChatHistory: Send + Sync {
    /// The session's turns in the order they happened (empty if unknown).
    async fn turns(&self, session: Uuid) -> Result<Vec<ChatTurn>, HistoryError>;

    /// Whether the reply to the continuation with this key is already
    /// stored, so a redelivery need not call the model again.
    async fn has_reply(&self, session: Uuid, idempotency_key: &str) -> Result<bool, HistoryError>;

    /// Appends the agent's reply as an `assistant` turn. Must be idempotent
    /// per `idempotency_key`: a second call with a key already stored for
    /// the session changes nothing and returns `Ok`.
    async fn append_assistant(
        &self,
        session: Uuid,
        content: &str,
        idempotency_key: &str,
    ) -> Result<(), HistoryError>;

    /// Records a notice for the operator to see. It is not a chat turn and
    /// must never be replayed to the model. Idempotent per key, like
    /// [`ChatHistory::append_assistant`].
    async fn append_notice(
        &self,
        session: Uuid,
        message: &str,
        idempotency_key: &str,
    ) -> Result<(), HistoryError>;
}

/// Where and how to reach the chat-completions endpoint.
#[derive(Clone)]
pub struct ChatConfig {
    /// The server's base URL, such as `http://127.0.0.1:11434`; a trailing
    /// `/v1` (as in `http://127.0.0.1:8000/v1`) is accepted too.
    pub base_url: String,
    /// The `model` field of every request.
    pub model: String,
    /// Sent as `Authorization: Bearer <key>` when present.
    pub api_key: Option<String>,
    /// Bounds each request as a whole, including the model's generation.
    pub timeout: Duration,
    /// The most characters of message text one request carries: the
    /// oldest turns are left out beyond it (see `agent::replay`). Set it
    /// below the model's context window (about four characters a token),
    /// leaving room for the reply.
    pub budget_chars: usize,
}

impl ChatConfig {
    /// A configuration with no API key and the default time-out.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        ChatConfig {
            base_url: base_url.into(),
            model: model.into(),
            api_key: None,
            timeout: DEFAULT_CHAT_TIMEOUT,
            budget_chars: DEFAULT_BUDGET_CHARS,
        }
    }
}

// Written by hand so the API key never reaches a log.
impl std::fmt::Debug for ChatConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatConfig")
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("timeout", &self.timeout)
            .field("budget_chars", &self.budget_chars)
            .finish()
    }
}

/// The `chatWith` [`Agent`]; see the module documentation.
#[derive(Clone)]
pub struct ChatAgent {
    client: Client,
    endpoint: Url,
    model: String,
    auth: Option<HeaderValue>,
    budget_chars: usize,
    history: Arc<dyn ChatHistory>,
}

impl std::fmt::Debug for ChatAgent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatAgent")
            .field("endpoint", &self.endpoint.as_str())
            .field("model", &self.model)
            .field("auth", &self.auth.is_some())
            .field("budget_chars", &self.budget_chars)
            .finish_non_exhaustive()
    }
}

#[derive(Serialize)]
struct CompletionRequest<'a> {
    model: &'a str,
    messages: &'a [ChatMessage],
    stream: bool,
}

#[derive(Deserialize)]
struct CompletionResponse {
    #[serde(default)]
    choices: Vec<Choice>,
}

#[derive(Deserialize)]
struct Choice {
    message: ResponseMessage,
}

#[derive(Deserialize)]
struct ResponseMessage {
    #[serde(default)]
    content: Option<String>,
}

impl ChatAgent {
    /// Checks the configuration once, so a mistake shows at start-up.
    pub fn new(
        config: ChatConfig,
        history: Arc<dyn ChatHistory>,
    ) -> Result<Self, AdapterConfigError> {
        if config.model.trim().is_empty() {
            return Err(AdapterConfigError::Model);
        }
        let endpoint = http::parse_url("chat base url", &completions_url(&config.base_url))?;
        let auth = config.api_key.as_deref().map(http::bearer).transpose()?;
        Ok(ChatAgent {
            client: http::client(config.timeout)?,
            endpoint,
            model: config.model,
            auth,
            budget_chars: config.budget_chars,
            history,
        })
    }

    /// The URL requests go to, for logs and the `status` command.
    pub fn endpoint(&self) -> &str {
        self.endpoint.as_str()
    }

    /// Calls the model and returns the reply's text.
    async fn complete(
        &self,
        messages: &[ChatMessage],
        trace: http::Trace<'_>,
    ) -> Result<String, AgentError> {
        let body = CompletionRequest {
            model: &self.model,
            messages,
            stream: false,
        };
        let mut request = trace.apply(self.client.post(self.endpoint.clone()).json(&body));
        if let Some(auth) = &self.auth {
            request = request.header(AUTHORIZATION, auth.clone());
        }
        let url = &self.endpoint;
        let response = request
            .send()
            .await
            .map_err(|e| http::transport_error(url, &e))?;
        let response = http::check_status(url, response).await?;
        let (bytes, truncated) = http::read_bounded(response, RESPONSE_LIMIT)
            .await
            .map_err(|e| http::transport_error(url, &e))?;
        if truncated {
            return Err(AgentError::Permanent(format!(
                "POST {}: completion response larger than {RESPONSE_LIMIT} bytes",
                redact::endpoint(url.as_str())
            )));
        }
        parse_reply(&bytes).map_err(|reason| {
            AgentError::Permanent(format!(
                "POST {}: malformed chat completion ({reason}): {}",
                redact::endpoint(url.as_str()),
                http::snippet(&bytes, false)
            ))
        })
    }
}

/// `{base}/v1/chat/completions`, tolerating a base that already ends in
/// `/v1` or names the full endpoint, as operators copy either form.
fn completions_url(base: &str) -> String {
    let base = base.trim().trim_end_matches('/');
    if base.ends_with("/chat/completions") {
        base.to_string()
    } else if base.ends_with("/v1") {
        format!("{base}/chat/completions")
    } else {
        format!("{base}/v1/chat/completions")
    }
}

/// The text of `choices[0].message.content`, or why there is none.
fn parse_reply(bytes: &[u8]) -> Result<String, String> {
    let parsed: CompletionResponse =
        serde_json::from_slice(bytes).map_err(|e| format!("not a completion object: {e}"))?;
    let choice = parsed
        .choices
        .into_iter()
        .next()
        .ok_or_else(|| "no choices".to_string())?;
    match choice.message.content {
        Some(text) if !text.trim().is_empty() => Ok(text),
        Some(_) => Err("choices[0].message.content is empty".to_string()),
        None => Err("choices[0].message.content is missing".to_string()),
    }
}

#[async_trait]
impl Agent for ChatAgent {
    async fn continue_session(&self, continuation: &Continuation) -> Result<(), AgentError> {
        let session = continuation.session_id;
        let key = continuation.idempotency_key.as_str();
        if self.history.has_reply(session, key).await? {
            return Ok(());
        }
        let turns = self.history.turns(session).await?;
        let messages = build_messages_within(
            &turns,
            &continuation.soul,
            &continuation.note,
            self.budget_chars,
        )?;
        let trace = http::Trace::of(&continuation.traceparent, &continuation.tracestate);
        let reply = self.complete(&messages, trace).await?;
        self.history
            .append_assistant(session, &reply, key)
            .await
            .map_err(AgentError::from)
    }

    /// Records the notice for the operator; the model never sees it, since
    /// it is neither the operator's words nor the agent's.
    async fn notify(&self, notice: &Notice) -> Result<(), AgentError> {
        self.history
            .append_notice(notice.session_id, &notice.message, &notice.idempotency_key)
            .await
            .map_err(AgentError::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn completions_url_accepts_common_bases() {
        let want = "http://h:1/v1/chat/completions";
        for base in [
            "http://h:1",
            "http://h:1/",
            "http://h:1/v1",
            "http://h:1/v1/",
            want,
        ] {
            assert_eq!(completions_url(base), want, "{base}");
        }
    }

    #[test]
    fn parse_reply_rejects_what_is_not_a_reply() {
        assert!(parse_reply(b"not json").is_err());
        assert!(parse_reply(br#"{"choices":[]}"#).is_err());
        assert!(parse_reply(br#"{"choices":[{"message":{"content":null}}]}"#).is_err());
        assert!(parse_reply(br#"{"choices":[{"message":{"content":"  "}}]}"#).is_err());
        assert_eq!(
            parse_reply(br#"{"choices":[{"message":{"role":"assistant","content":"ok"}}]}"#),
            Ok("ok".to_string())
        );
    }
}
