//! `POST /v1/sessions/{id}/tasks`: a runtime says "this session's
//! protocol task; where do its pushes go".
//!
//! The task is linked under its name-based execution id
//! ([`task_execution_id`]) as a tool result naming it would link it (the
//! first link wins), and its id kept. For an A2A task a push
//! configuration is minted: a URL on this server and a token that can
//! report this one task and nothing else. The runtime passes both to the
//! remote agent, which never holds the runtime's own token. Only the
//! token's SHA-256 is kept.

use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, PathRejection};
use axum::extract::{Path, State};
use axum::Json;
use base64::Engine as _;
use chrono::{DateTime, Duration, Utc};
use rand::RngCore as _;
use sha2::{Digest, Sha256};

use super::error::{parse_id, parse_json, storable, ApiError};
use super::wire::{
    A2aVersion, PushAuthentication, PushConfiguration, TaskProtocolName, TaskRegistered,
    TaskRequest,
};
use super::AppState;
use crate::store::{task_execution_id, LinkTask, TaskAgent, TaskSource};

/// The longest a push token is valid.
const MAX_PUSH_TTL: Duration = Duration::days(7);
/// A push token's life when the request names none.
const DEFAULT_PUSH_TTL: Duration = Duration::days(1);
/// Most bytes of a task id (as migration 029 checks).
const MAX_TASK_ID_BYTES: usize = 1024;
/// Most bytes of an agent URL (as migration 030 checks).
const MAX_AGENT_URL_BYTES: usize = 2048;

/// Links the task to the session, keeps its id, and for an A2A task mints
/// its push configuration (minting again replaces the token). Linking is
/// idempotent; the token is new on every call.
#[utoipa::path(post, path = "/v1/sessions/{session_id}/tasks", tag = "tasks",
    params(("session_id" = Uuid, Path, description = "The chat session")),
    request_body = TaskRequest,
    responses((status = 200, description = "The task's execution and its push configuration",
            body = TaskRegistered),
        (status = 409, description = "The task is linked to another session",
            body = crate::api::wire::Problem, content_type = "application/problem+json")))]
pub(super) async fn register_task(
    State(state): State<AppState>,
    session_id: Result<Path<String>, PathRejection>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<TaskRegistered>, ApiError> {
    let session_id = parse_id("session id", &session_id?.0)?;
    let request: TaskRequest = parse_json(&state.caps.small.take(body)?)?;
    let task_id = request.task_id;
    if task_id.trim().is_empty() || task_id.len() > MAX_TASK_ID_BYTES {
        return Err(ApiError::BadRequest(format!(
            "task_id must be 1 to {MAX_TASK_ID_BYTES} bytes, not blank"
        )));
    }
    storable("task_id", &task_id)?;
    let source = match request.protocol {
        TaskProtocolName::Mcp => TaskSource::Mcp,
        TaskProtocolName::A2a => TaskSource::A2a,
    };
    if source == TaskSource::Mcp && (request.agent.is_some() || request.ttl_seconds.is_some()) {
        return Err(ApiError::BadRequest(
            "agent and ttl_seconds are for A2A tasks: an MCP task has no push".into(),
        ));
    }
    let agent = request.agent.map(agent).transpose()?;
    let ttl = match request.ttl_seconds {
        None => DEFAULT_PUSH_TTL,
        Some(s) if s >= 1 => Duration::seconds(s.min(MAX_PUSH_TTL.num_seconds())),
        Some(s) => {
            return Err(ApiError::BadRequest(format!(
                "ttl_seconds must be at least 1, got {s}"
            )))
        }
    };

    let now = state.clock.now();
    let execution_id = task_execution_id(source, &task_id);
    let outcome = state.store.link(session_id, &[execution_id], now).await?;
    if let Some((_, other)) = outcome.already_linked_elsewhere.first() {
        return Err(ApiError::Conflict(format!(
            "task {task_id:?} (execution {execution_id}) is linked to session {other}"
        )));
    }
    state
        .store
        .keep_tasks(&[(execution_id, LinkTask { source, task_id })], now)
        .await?;
    let linked = !outcome.linked.is_empty();
    if linked {
        // It may have reported already: the link is what makes it ready.
        state.wake.notify_one();
    }
    let push = match source {
        TaskSource::Mcp => None,
        TaskSource::A2a => {
            let window = state.store.window(session_id).await?;
            let expires_at = push_expiry(now, ttl, window.map(|w| w.expires_at));
            let token = new_token();
            state
                .store
                .mint_push(
                    execution_id,
                    &token_sha256(&token),
                    expires_at,
                    agent.as_ref(),
                    now,
                )
                .await?;
            Some(PushConfiguration {
                url: format!("{}/v1/a2a/push/{execution_id}", state.public_url),
                authentication: PushAuthentication {
                    scheme: "Bearer".into(),
                    credentials: token.clone(),
                },
                token,
                expires_at,
            })
        }
    };
    Ok(Json(TaskRegistered {
        execution_id,
        linked,
        push,
    }))
}

fn agent(request: super::wire::TaskAgentRequest) -> Result<TaskAgent, ApiError> {
    let url = request.url;
    let web = url.starts_with("http://") || url.starts_with("https://");
    if !web || url.len() > MAX_AGENT_URL_BYTES || url.chars().any(char::is_whitespace) {
        return Err(ApiError::BadRequest(format!(
            "agent.url must be an http:// or https:// URL of at most {MAX_AGENT_URL_BYTES} bytes"
        )));
    }
    let version = match request.version {
        A2aVersion::V1 => "1.0",
        A2aVersion::V03 => "0.3",
    };
    Ok(TaskAgent {
        url,
        version: version.into(),
    })
}

/// The later of the window's expiry and `now + ttl`, at most
/// [`MAX_PUSH_TTL`] from now.
fn push_expiry(now: DateTime<Utc>, ttl: Duration, window: Option<DateTime<Utc>>) -> DateTime<Utc> {
    let by_ttl = now + ttl;
    let later = window.map_or(by_ttl, |w| w.max(by_ttl));
    later.min(now + MAX_PUSH_TTL)
}

/// 32 random bytes, base64url without padding.
fn new_token() -> String {
    let mut bytes = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// A push token's SHA-256 as lowercase hex: all the store keeps of it.
pub(super) fn token_sha256(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expiry_is_the_later_bounded_to_a_week() {
        let now = DateTime::<Utc>::UNIX_EPOCH;
        let hour = Duration::hours(1);
        assert_eq!(push_expiry(now, hour, None), now + hour);
        assert_eq!(push_expiry(now, hour, Some(now + hour * 2)), now + hour * 2);
        assert_eq!(push_expiry(now, hour * 2, Some(now + hour)), now + hour * 2);
        assert_eq!(
            push_expiry(now, Duration::days(30), None),
            now + MAX_PUSH_TTL
        );
    }

    #[test]
    fn tokens_are_new_and_hashed_to_hex() {
        let (a, b) = (new_token(), new_token());
        assert_ne!(a, b);
        assert_eq!(a.len(), 43);
        let hash = token_sha256(&a);
        assert_eq!(hash.len(), 64);
        assert!(hash
            .bytes()
            .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()));
        assert_eq!(
            token_sha256("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
