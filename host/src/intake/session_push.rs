//! A session's push configuration: minted before the runtime sends its
//! message, handed to its A2A SDK (a2a-sdk's
//! `ClientConfig.push_notification_config`, or one message's
//! `configuration`), so every task the agent then creates for the session
//! reports here without a registration of its own.
//!
//! Bounds (`docs/protocols.md`, "A session's push configuration"): the
//! token reports tasks of its own session only; it links a task nobody
//! linked only until `links_until` (the window's end, or the runtime's TTL,
//! at most 7 days), while a task it linked keeps reporting after, so a task
//! that ends after the window closed still reaches the operator as a
//! notice; a session links at most [`MAX_SESSION_TASKS`] tasks this way;
//! a push that names another session's task is refused. Minting again
//! adds a token and leaves the earlier ones valid: an SDK's shared
//! configuration keeps covering the tasks already running under it.

use chrono::{DateTime, Duration, Utc};
use uuid::Uuid;

use super::tasks::{new_token, token_sha256, MAX_PUSH_TTL, MAX_TASK_ID_BYTES};
use super::{storable, Intake, IntakeError};
use crate::protocols::a2a::{self, TaskUpdate};
use crate::store::{task_execution_id, LinkTask, PushedTaskLink, SessionPush, TaskSource};

/// The most tasks one session links through its push configurations.
pub const MAX_SESSION_TASKS: i64 = 1_000;

/// Where a remote A2A agent pushes every task of one session, and with
/// what.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct SessionPushConfiguration {
    /// `<public url>/v1/a2a/sessions/<session id>/push`.
    pub url: String,
    /// The push token: it reports tasks of this session and opens
    /// nothing else.
    pub token: String,
    /// Until when a push links a task not linked yet.
    pub links_until: DateTime<Utc>,
}

impl Intake {
    /// Mints a push configuration for `session_id`'s tasks. It links new
    /// tasks for `ttl` (at most 7 days) or, without one, until the
    /// session's open window ends; a session with no open window and no
    /// `ttl` is a conflict. Earlier configurations stay valid.
    pub async fn mint_session_push(
        &self,
        session_id: Uuid,
        ttl: Option<Duration>,
    ) -> Result<SessionPushConfiguration, IntakeError> {
        let now = self.clock.now();
        let links_until = match ttl {
            Some(ttl) if ttl < Duration::seconds(1) => {
                return Err(IntakeError::Invalid(
                    "the push configuration's time to live must be at least 1 second".into(),
                ))
            }
            Some(ttl) => now + ttl.min(MAX_PUSH_TTL),
            None => match self.store.window(session_id).await? {
                Some(window) if window.expires_at > now => window.expires_at,
                _ => {
                    return Err(IntakeError::Conflict(format!(
                        "session {session_id} has no open assent window: approve it first, \
                         or give the configuration a time to live"
                    )))
                }
            },
        };
        let token = new_token();
        (self.store)
            .mint_session_push(session_id, &token_sha256(&token), links_until, now)
            .await?;
        Ok(SessionPushConfiguration {
            url: format!("{}/v1/a2a/sessions/{session_id}/push", self.public_url),
            token,
            links_until,
        })
    }

    /// The configuration a session push token opens, or
    /// [`IntakeError::WrongToken`] (the same for another session's token).
    pub(crate) async fn session_push_of(
        &self,
        session_id: Uuid,
        token: &str,
    ) -> Result<SessionPush, IntakeError> {
        (self.store)
            .session_push(session_id, &token_sha256(token))
            .await?
            .ok_or(IntakeError::WrongToken)
    }

    /// Takes one push of a task of `session_id` under a session push
    /// token: the token checked, the body read, the task linked on its
    /// first push, the update applied as any push's.
    pub async fn take_session_push(
        &self,
        session_id: Uuid,
        token: &str,
        body: &[u8],
    ) -> Result<(), IntakeError> {
        let config = self.session_push_of(session_id, token).await?;
        let update = a2a::read_push(body).map_err(|e| IntakeError::Invalid(e.to_string()))?;
        self.take_session_update(&config, &token_sha256(token), update)
            .await
    }

    /// Takes `update` under `config` (opened by the token of
    /// `token_sha256`): links its task if nobody has (while the
    /// configuration links and the session is under its bound), refuses
    /// another session's task, and applies the update as a push to the
    /// task's own configuration would be.
    pub(crate) async fn take_session_update(
        &self,
        config: &SessionPush,
        token_sha256: &str,
        update: TaskUpdate,
    ) -> Result<(), IntakeError> {
        let task_id = &update.task_id;
        if task_id.trim().is_empty() || task_id.len() > MAX_TASK_ID_BYTES {
            return Err(IntakeError::Invalid(format!(
                "the task id must be 1 to {MAX_TASK_ID_BYTES} bytes, not blank"
            )));
        }
        storable("task id", task_id)?;
        let execution_id = task_execution_id(TaskSource::A2a, task_id);
        let task = LinkTask {
            source: TaskSource::A2a,
            task_id: task_id.clone(),
        };
        let now = self.clock.now();
        // Past `links_until` nothing new is linked: a bound of none.
        let linking = now < config.links_until;
        let max = if linking { MAX_SESSION_TASKS } else { 0 };
        let session_id = config.session_id;
        let link = (self.store)
            .link_pushed_task(session_id, token_sha256, execution_id, &task, max, now)
            .await?;
        match link {
            PushedTaskLink::Linked => self.wake.notify_one(),
            PushedTaskLink::AlreadyLinked => {}
            PushedTaskLink::Elsewhere(_) => {
                return Err(IntakeError::OtherTask(format!(
                    "task {task_id:?} belongs to another session than this push \
                     configuration's"
                )))
            }
            PushedTaskLink::Full if !linking => {
                return Err(IntakeError::OtherTask(format!(
                    "this push configuration links no new task since {}: task {task_id:?} \
                     is not linked to session {session_id}",
                    config.links_until
                )))
            }
            PushedTaskLink::Full => {
                return Err(IntakeError::TaskLimit {
                    max: MAX_SESSION_TASKS,
                })
            }
            PushedTaskLink::BehindHorizon => {
                return Err(IntakeError::Conflict(format!(
                    "task {task_id:?} finished before the link horizon and is never linked again"
                )))
            }
        }
        let record = match self.store.task_record(execution_id).await? {
            Some(record) => record,
            // Linked as a bare execution id (never by its task): keep the
            // task beside the link, as a tool result naming it would.
            None => {
                self.store.keep_tasks(&[(execution_id, task)], now).await?;
                (self.store.task_record(execution_id).await?).ok_or_else(|| {
                    IntakeError::Internal(format!("the task of {execution_id} was not kept"))
                })?
            }
        };
        self.apply(record, update).await
    }
}
