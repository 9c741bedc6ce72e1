//! The chat tables of the built-in `chatWith` adapter: the turns it
//! replays (here) and its history of replies and notices (`history`).

pub(crate) mod history;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::store::decode;
use crate::store::dialect::{query, trunc};
use crate::store::types::{Role, Turn};
use crate::store::{Result, Store};

/// The columns [`decode::turn`] reads; shared with `history`.
pub(in crate::store) const TURN_COLS: &str =
    "id, session_id, role, content, idempotency_key, created_at";

impl Store {
    /// Appends a real turn (the operator's message or the agent's reply) to a
    /// session's history. The continuation note is never stored here: it is
    /// injected after the replayed history and would otherwise pose as the
    /// operator on the next replay.
    pub async fn append_turn(
        &self,
        session_id: Uuid,
        role: Role,
        content: &str,
        now: DateTime<Utc>,
    ) -> Result<Turn> {
        let sql = format!(
            "INSERT INTO nomos_chat_turns (session_id, role, content, created_at) \
             VALUES ($1, $2, $3, $4) RETURNING {TURN_COLS}"
        );
        let row = query(sql)
            .bind(session_id)
            .bind(role.as_str())
            .bind(content)
            .bind(trunc(now))
            .fetch_one(self)
            .await?;
        decode::turn(&row)
    }

    /// A session's history in the order it happened (by id; empty for an
    /// unknown session).
    pub async fn turns(&self, session_id: Uuid) -> Result<Vec<Turn>> {
        let sql =
            format!("SELECT {TURN_COLS} FROM nomos_chat_turns WHERE session_id = $1 ORDER BY id");
        let rows = query(sql).bind(session_id).fetch_all(self).await?;
        rows.iter().map(decode::turn).collect()
    }
}
