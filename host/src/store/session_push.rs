//! A session's A2A push configurations (`nomos_session_push`, migration
//! 039): minted before the runtime sends its message, so the tasks the
//! agent then creates report to the session without a registration each.
//! The first push of a task nobody linked links it here, counted against
//! the session's bound in the same transaction.
//!
//! Only each token's SHA-256 is kept, as for the per-task tokens
//! (`tasks.rs`); what a token opens is decided above (`intake`).

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::decode::RowExt;
use super::dialect::{query, trunc};
use super::link_data::LinkTask;
use super::links::INSERT_LINK;
use super::{Result, Store};

/// One session push configuration, as kept.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionPush {
    /// The session whose tasks it reports.
    pub session_id: Uuid,
    /// Until when a push of it links a task not linked yet; a task it
    /// linked keeps reporting after.
    pub links_until: DateTime<Utc>,
}

/// What [`Store::link_pushed_task`] did with a task's first push.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PushedTaskLink {
    /// The push linked the task to the session now.
    Linked,
    /// The task was linked to the session already (by its tool result, a
    /// registration or an earlier push).
    AlreadyLinked,
    /// The task is another session's.
    Elsewhere(Uuid),
    /// The session has linked `max` tasks through its push configurations.
    Full,
    /// The execution finished before the link horizon: it is never linked
    /// again (see `Store::link`).
    BehindHorizon,
}

impl Store {
    /// Keeps a push configuration of `session_id` by its token's SHA-256;
    /// earlier ones of the session stay valid.
    pub async fn mint_session_push(
        &self,
        session_id: Uuid,
        token_sha256: &str,
        links_until: DateTime<Utc>,
        now: DateTime<Utc>,
    ) -> Result<()> {
        query(
            "INSERT INTO nomos_session_push (token_sha256, session_id, links_until, created_at) \
             VALUES ($1, $2, $3, $4)",
        )
        .bind(token_sha256)
        .bind(session_id)
        .bind(trunc(links_until))
        .bind(trunc(now))
        .execute(self)
        .await?;
        Ok(())
    }

    /// The configuration whose token has this SHA-256, if it is
    /// `session_id`'s; `None` for an unknown token and for another
    /// session's alike.
    pub async fn session_push(
        &self,
        session_id: Uuid,
        token_sha256: &str,
    ) -> Result<Option<SessionPush>> {
        let row = query(
            "SELECT session_id, links_until FROM nomos_session_push \
             WHERE token_sha256 = $1 AND session_id = $2",
        )
        .bind(token_sha256)
        .bind(session_id)
        .fetch_optional(self)
        .await?;
        row.map(|r| {
            Ok(SessionPush {
                session_id: r.uuid("session_id")?,
                links_until: r.time("links_until")?,
            })
        })
        .transpose()
    }

    /// Links `task` (under `execution_id`) to `session_id` as a tool result
    /// naming it would (the first link wins; the horizon holds), keeps the
    /// task, and counts it against the configuration of `token_sha256`,
    /// all in one transaction, unless the session has linked `max` tasks
    /// through its configurations. On PostgreSQL the session's
    /// configurations are locked first, so two first pushes at once cannot
    /// both pass the bound; nothing else locks them.
    pub async fn link_pushed_task(
        &self,
        session_id: Uuid,
        token_sha256: &str,
        execution_id: Uuid,
        task: &LinkTask,
        max: i64,
        now: DateTime<Utc>,
    ) -> Result<PushedTaskLink> {
        let now = trunc(now);
        let mut tx = self.begin().await?;
        let lock = self.backend().pick(" FOR UPDATE", "");
        let counts = query(format!(
            "SELECT tasks_linked FROM nomos_session_push WHERE session_id = $1 \
             ORDER BY token_sha256{lock}"
        ))
        .bind(session_id)
        .fetch_all(&mut tx)
        .await?;
        let owner = query("SELECT session_id FROM nomos_plan_executions WHERE execution_id = $1")
            .bind(execution_id)
            .fetch_optional(&mut tx)
            .await?;
        if let Some(row) = owner {
            // Nothing written: the transaction rolls back as it drops.
            let owner = row.uuid("session_id")?;
            return Ok(if owner == session_id {
                PushedTaskLink::AlreadyLinked
            } else {
                PushedTaskLink::Elsewhere(owner)
            });
        }
        let mut linked = 0i64;
        for row in &counts {
            linked += i64::from(row.int("tasks_linked")?);
        }
        if linked >= max {
            return Ok(PushedTaskLink::Full);
        }
        let inserted = query(INSERT_LINK)
            .bind(execution_id)
            .bind(session_id)
            .bind(now)
            .execute(&mut tx)
            .await?;
        if inserted == 0 {
            return Ok(PushedTaskLink::BehindHorizon);
        }
        query(
            "INSERT INTO nomos_link_data AS d (execution_id, task_source, task_id, updated_at) \
             VALUES ($1, $2, $3, $4) \
             ON CONFLICT (execution_id) DO UPDATE SET task_source = EXCLUDED.task_source, \
               task_id = EXCLUDED.task_id, updated_at = EXCLUDED.updated_at \
             WHERE d.task_id IS NULL",
        )
        .bind(execution_id)
        .bind(task.source.as_str())
        .bind(task.task_id.as_str())
        .bind(now)
        .execute(&mut tx)
        .await?;
        query(
            "UPDATE nomos_session_push SET tasks_linked = tasks_linked + 1 \
             WHERE token_sha256 = $1",
        )
        .bind(token_sha256)
        .execute(&mut tx)
        .await?;
        tx.notify_wake().await?;
        tx.commit().await?;
        Ok(PushedTaskLink::Linked)
    }

    /// Deletes at most `batch` session push configurations that stopped
    /// linking before `before`; returns how many. A task one linked then
    /// reports no more through it (the history retention's horizon).
    pub async fn purge_session_push(&self, before: DateTime<Utc>, batch: i64) -> Result<u64> {
        query(
            "DELETE FROM nomos_session_push WHERE token_sha256 IN ( \
               SELECT token_sha256 FROM nomos_session_push WHERE links_until < $1 LIMIT $2)",
        )
        .bind(trunc(before))
        .bind(batch)
        .execute(self)
        .await
    }
}
