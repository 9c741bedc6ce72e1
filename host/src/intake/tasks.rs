//! A session's protocol task: linked under its name-based execution id
//! ([`task_execution_id`]) as a tool result naming it would link it (the
//! first link wins), its id kept, and for an A2A task a push configuration
//! minted: a URL on this server and a token that reports this one task and
//! nothing else. The runtime passes both to the remote agent, which never
//! holds the runtime's own token. Only the token's SHA-256 is kept.

use base64::Engine as _;
use chrono::{DateTime, Duration, Utc};
use rand::RngCore as _;
use sha2::{Digest, Sha256};
use uuid::Uuid;

use super::{storable, Intake, IntakeError};
use crate::store::{task_execution_id, Execution, LinkTask, TaskAgent, TaskSource};

/// The longest a push token is valid.
pub(super) const MAX_PUSH_TTL: Duration = Duration::days(7);
/// A push token's life when the registration names none.
const DEFAULT_PUSH_TTL: Duration = Duration::days(1);
/// Most bytes of a task id (as migration 029 checks).
pub(super) const MAX_TASK_ID_BYTES: usize = 1024;
/// Most bytes of an agent URL (as migration 030 checks).
const MAX_AGENT_URL_BYTES: usize = 2048;

/// A protocol task a runtime registers for a session.
#[derive(Debug, Clone)]
pub struct TaskRegistration {
    source: TaskSource,
    task_id: String,
    agent: Option<TaskAgent>,
    ttl: Option<Duration>,
}

impl TaskRegistration {
    /// An A2A task, as its agent named it.
    pub fn a2a(task_id: impl Into<String>) -> Self {
        Self::of(TaskSource::A2a, task_id)
    }

    /// An MCP task, as its server named it (MCP has no push: the runtime
    /// forwards its updates).
    pub fn mcp(task_id: impl Into<String>) -> Self {
        Self::of(TaskSource::Mcp, task_id)
    }

    fn of(source: TaskSource, task_id: impl Into<String>) -> Self {
        Self {
            source,
            task_id: task_id.into(),
            agent: None,
            ttl: None,
        }
    }

    /// The A2A agent's JSON-RPC URL and version (`1.0` or `0.3`), asked
    /// for the task when its pushes are overdue.
    pub fn with_agent(mut self, url: impl Into<String>, version: impl Into<String>) -> Self {
        self.agent = Some(TaskAgent {
            url: url.into(),
            version: version.into(),
        });
        self
    }

    /// How long the push token is valid: at least the session's window,
    /// at most 7 days (a day when not given).
    pub fn with_ttl(mut self, ttl: Duration) -> Self {
        self.ttl = Some(ttl);
        self
    }

    /// Checks every field, naming what is wrong.
    fn check(&self) -> Result<(), IntakeError> {
        let task_id = &self.task_id;
        if task_id.trim().is_empty() || task_id.len() > MAX_TASK_ID_BYTES {
            return Err(IntakeError::Invalid(format!(
                "task_id must be 1 to {MAX_TASK_ID_BYTES} bytes, not blank"
            )));
        }
        storable("task_id", task_id)?;
        if self.source == TaskSource::Mcp && (self.agent.is_some() || self.ttl.is_some()) {
            return Err(IntakeError::Invalid(
                "agent and ttl_seconds are for A2A tasks: an MCP task has no push".into(),
            ));
        }
        if let Some(agent) = &self.agent {
            let url = &agent.url;
            let web = url.starts_with("http://") || url.starts_with("https://");
            if !web || url.len() > MAX_AGENT_URL_BYTES || url.chars().any(char::is_whitespace) {
                return Err(IntakeError::Invalid(format!(
                    "agent.url must be an http:// or https:// URL of at most \
                     {MAX_AGENT_URL_BYTES} bytes"
                )));
            }
            if !matches!(agent.version.as_str(), "1.0" | "0.3") {
                return Err(IntakeError::Invalid(format!(
                    "agent.version must be 1.0 or 0.3, not {:?}",
                    agent.version
                )));
            }
        }
        if self.ttl.is_some_and(|ttl| ttl < Duration::seconds(1)) {
            return Err(IntakeError::Invalid(
                "the push token's time to live must be at least 1 second".into(),
            ));
        }
        Ok(())
    }
}

/// Where a remote A2A agent pushes one task's updates, and with what.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct PushConfiguration {
    /// `<public url>/v1/a2a/push/<execution id>`.
    pub url: String,
    /// The push token: it reports this task and opens nothing else.
    pub token: String,
    /// When the token stops being accepted.
    pub expires_at: DateTime<Utc>,
}

/// A registered task: its execution, whether it was linked now, and for an
/// A2A task its push configuration (a new token on every registration).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct TaskRegistered {
    /// The execution the task stands for.
    pub execution_id: Uuid,
    /// Whether this registration linked it (not linked before).
    pub linked: bool,
    /// The push configuration of an A2A task.
    pub push: Option<PushConfiguration>,
}

/// What an MCP task update did.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct McpRecorded {
    /// The execution the task stands for.
    pub execution_id: Uuid,
    /// The execution as stored, if it was ever reported.
    pub execution: Option<Execution>,
    /// Whether a status was applied.
    pub applied: bool,
    /// Why not, in words.
    pub note: Option<String>,
}

impl Intake {
    /// Links the task to `session_id`, keeps its id, and for an A2A task
    /// mints its push configuration (minting again replaces the token).
    /// Linking is idempotent; the token is new on every call. A task
    /// another session holds is a conflict.
    pub async fn register_task(
        &self,
        session_id: Uuid,
        task: TaskRegistration,
    ) -> Result<TaskRegistered, IntakeError> {
        task.check()?;
        let TaskRegistration {
            source,
            task_id,
            agent,
            ttl,
        } = task;
        let now = self.clock.now();
        let execution_id = task_execution_id(source, &task_id);
        let outcome = self.store.link(session_id, &[execution_id], now).await?;
        if let Some((_, other)) = outcome.already_linked_elsewhere.first() {
            return Err(IntakeError::Conflict(format!(
                "task {task_id:?} (execution {execution_id}) is linked to session {other}"
            )));
        }
        (self.store)
            .keep_tasks(&[(execution_id, LinkTask { source, task_id })], now)
            .await?;
        let linked = !outcome.linked.is_empty();
        if linked {
            // It may have reported already: the link is what makes it ready.
            self.wake.notify_one();
        }
        let push = match source {
            TaskSource::Mcp => None,
            TaskSource::A2a => {
                let window = self.store.window(session_id).await?;
                let ttl = ttl.unwrap_or(DEFAULT_PUSH_TTL);
                let expires_at = push_expiry(now, ttl, window.map(|w| w.expires_at));
                let token = new_token();
                (self.store)
                    .mint_push(
                        execution_id,
                        &token_sha256(&token),
                        expires_at,
                        agent.as_ref(),
                        now,
                    )
                    .await?;
                if let (Some(asks), Some(_)) = (&self.asks, &agent) {
                    // A closed channel (no poller here) leaves the task to
                    // the overdue pass of a replica that polls.
                    let _ = asks.send(execution_id);
                }
                Some(PushConfiguration {
                    url: format!("{}/v1/a2a/push/{execution_id}", self.public_url),
                    token,
                    expires_at,
                })
            }
        };
        Ok(TaskRegistered {
            execution_id,
            linked,
            push,
        })
    }
}

/// The later of the window's expiry and `now + ttl`, at most
/// [`MAX_PUSH_TTL`] from now.
fn push_expiry(now: DateTime<Utc>, ttl: Duration, window: Option<DateTime<Utc>>) -> DateTime<Utc> {
    let by_ttl = now + ttl.min(MAX_PUSH_TTL);
    let later = window.map_or(by_ttl, |w| w.max(by_ttl));
    later.min(now + MAX_PUSH_TTL)
}

/// 32 random bytes, base64url without padding.
pub(super) fn new_token() -> String {
    let mut bytes = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// A push token's SHA-256 as lowercase hex: all the store keeps of it.
pub(crate) fn token_sha256(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}
