//! The chat history `chatWith` replays (`agent::history` adapts it): replies appended
//! once per continuation key, and operator notices kept where the replay
//! never looks.
//!
//! # Why the key is on the turn and notices have their own table
//!
//! A continuation can be delivered again with the same idempotency key (a
//! crash between the model's reply and the worker's commit, or two deliveries
//! racing after a lease expired). Storing the key with the assistant's reply,
//! under a unique index on `(session_id, idempotency_key)`, lets the database
//! refuse the second reply instead of trusting a check-then-insert. Notices
//! are neither the operator's words nor the agent's; in `nomos_notices`,
//! which [`Store::turns`] never reads, they cannot reach the model.

use chrono::{DateTime, Utc};
use serde::Serialize;
use uuid::Uuid;

use crate::store::chat::TURN_COLS;
use crate::store::decode::{self, RowExt};
use crate::store::dialect::{query, trunc};
use crate::store::types::{Role, Turn};
use crate::store::{Result, Store, StoreError};

pub(in crate::store) const NOTICE_COLS: &str =
    "id, session_id, idempotency_key, message, created_at";

/// A notice recorded for the operator of a session (never replayed).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SessionNotice {
    /// Monotonic id; orders the notices of a session.
    pub id: i64,
    /// The session.
    pub session_id: Uuid,
    /// The delivery's key; unique per session.
    pub idempotency_key: String,
    /// What the operator is told.
    pub message: String,
    /// When it was first recorded.
    pub created_at: DateTime<Utc>,
}

pub(in crate::store) fn notice<R: RowExt>(r: &R) -> Result<SessionNotice> {
    Ok(SessionNotice {
        id: r.bigint("id")?,
        session_id: r.uuid("session_id")?,
        idempotency_key: r.text("idempotency_key")?,
        message: r.text("message")?,
        created_at: r.time("created_at")?,
    })
}

/// An empty key would make every keyless caller collide on one row.
fn check_key(key: &str) -> Result<()> {
    if key.is_empty() {
        return Err(StoreError::InvalidValue {
            field: "idempotency_key",
            reason: "must not be empty".into(),
        });
    }
    Ok(())
}

impl Store {
    /// Appends a turn carrying `key`, unless the session already has a turn
    /// with that key. Returns the new turn, or `None` when the key was
    /// already stored (nothing changed): the unique index decides, so two
    /// racing appends store one turn.
    pub async fn append_turn_once(
        &self,
        session_id: Uuid,
        role: Role,
        content: &str,
        key: &str,
        now: DateTime<Utc>,
    ) -> Result<Option<Turn>> {
        check_key(key)?;
        let sql = format!(
            "INSERT INTO nomos_chat_turns (session_id, role, content, idempotency_key, created_at) \
             VALUES ($1, $2, $3, $4, $5) \
             ON CONFLICT (session_id, idempotency_key) WHERE idempotency_key IS NOT NULL \
             DO NOTHING RETURNING {TURN_COLS}"
        );
        let row = query(sql)
            .bind(session_id)
            .bind(role.as_str())
            .bind(content)
            .bind(key)
            .bind(trunc(now))
            .fetch_optional(self)
            .await?;
        row.as_ref().map(decode::turn).transpose()
    }

    /// Whether the session has an assistant turn answering `key`.
    pub async fn has_reply(&self, session_id: Uuid, key: &str) -> Result<bool> {
        let found = query(
            "SELECT 1 AS found FROM nomos_chat_turns \
             WHERE session_id = $1 AND idempotency_key = $2 AND role = 'assistant' LIMIT 1",
        )
        .bind(session_id)
        .bind(key)
        .fetch_optional(self)
        .await?;
        Ok(found.is_some())
    }

    /// Records a notice for the session's operator, once per key. Returns
    /// the new notice, or `None` when the key was already recorded.
    pub async fn append_notice(
        &self,
        session_id: Uuid,
        message: &str,
        key: &str,
        now: DateTime<Utc>,
    ) -> Result<Option<SessionNotice>> {
        check_key(key)?;
        let sql = format!(
            "INSERT INTO nomos_notices (session_id, idempotency_key, message, created_at) \
             VALUES ($1, $2, $3, $4) ON CONFLICT (session_id, idempotency_key) DO NOTHING \
             RETURNING {NOTICE_COLS}"
        );
        let row = query(sql)
            .bind(session_id)
            .bind(key)
            .bind(message)
            .bind(trunc(now))
            .fetch_optional(self)
            .await?;
        row.as_ref().map(notice).transpose()
    }
}
