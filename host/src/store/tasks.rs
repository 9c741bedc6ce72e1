//! What the protocols' receivers keep per task in `nomos_link_data`
//! (migration 030): the A2A push configuration (its token's SHA-256 and
//! expiry), the remote agent to poll, the artifacts gathered so far, the
//! last protocol state heard and when, and an MCP status waiting for its
//! result.
//!
//! The store keeps text and compares hashes; what a token is, which body
//! says what and what a state means is decided above it (`api`,
//! `protocols`).

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::decode::RowExt;
use super::dialect::{query, trunc, Row};
use super::types::TaskSource;
use super::{Result, Store};

/// The remote A2A agent a task runs on, to ask for the task when a push is
/// overdue.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskAgent {
    /// The agent's JSON-RPC URL.
    pub url: String,
    /// The A2A version it speaks: `1.0` or `0.3`.
    pub version: String,
}

/// What is kept of one protocol task.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskRecord {
    /// The execution the task stands for.
    pub execution_id: Uuid,
    /// The task's protocol.
    #[cfg_attr(not(feature = "test-support"), allow(dead_code))]
    pub source: TaskSource,
    /// The task's own id.
    pub task_id: String,
    /// The remote agent, when the runtime named one.
    pub agent: Option<TaskAgent>,
    /// The artifacts gathered so far (JSON text), if any.
    pub artifacts: Option<String>,
    /// The last state a protocol body carried.
    #[cfg_attr(not(feature = "test-support"), allow(dead_code))]
    pub protocol_state: Option<String>,
    /// When a protocol body last arrived.
    #[cfg_attr(not(feature = "test-support"), allow(dead_code))]
    pub heard_at: Option<DateTime<Utc>>,
    /// An MCP status (`completed`, `failed`) waiting for its result.
    pub result_wait: Option<String>,
    /// The status message that came with it, if any.
    pub result_wait_message: Option<String>,
}

const COLS: &str = "execution_id, task_source, task_id, agent_url, agent_version, artifacts, \
                    protocol_state, protocol_heard_at, result_wait, result_wait_message";

fn record(r: &Row) -> Result<TaskRecord> {
    let agent = match (r.opt_text("agent_url")?, r.opt_text("agent_version")?) {
        (Some(url), Some(version)) => Some(TaskAgent { url, version }),
        _ => None,
    };
    Ok(TaskRecord {
        execution_id: r.uuid("execution_id")?,
        source: r.parsed("task_source")?,
        task_id: r.text("task_id")?,
        agent,
        artifacts: r.opt_text("artifacts")?,
        protocol_state: r.opt_text("protocol_state")?,
        heard_at: r.opt_time("protocol_heard_at")?,
        result_wait: r.opt_text("result_wait")?,
        result_wait_message: r.opt_text("result_wait_message")?,
    })
}

/// Equal byte strings, in time that depends on the length only: a token
/// check must not say how much of a guess was right.
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

impl Store {
    /// Keeps a push configuration for the task of `execution_id` (its
    /// token's SHA-256 as lowercase hex, and its expiry), replacing any
    /// earlier one, and the remote agent when one is given (an absent one
    /// keeps what was kept). The task must be kept already
    /// ([`keep_tasks`](Store::keep_tasks)); returns whether it was.
    pub async fn mint_push(
        &self,
        execution_id: Uuid,
        token_sha256: &str,
        expires_at: DateTime<Utc>,
        agent: Option<&TaskAgent>,
        now: DateTime<Utc>,
    ) -> Result<bool> {
        let updated = query(
            "UPDATE nomos_link_data SET push_token_sha256 = $2, push_expires_at = $3, \
               agent_url = COALESCE($4, agent_url), agent_version = COALESCE($5, agent_version), \
               updated_at = $6 \
             WHERE execution_id = $1 AND task_id IS NOT NULL",
        )
        .bind(execution_id)
        .bind(token_sha256)
        .bind(trunc(expires_at))
        .bind(agent.map(|a| a.url.as_str()))
        .bind(agent.map(|a| a.version.as_str()))
        .bind(trunc(now))
        .execute(self)
        .await?;
        Ok(updated == 1)
    }

    /// The task a push for `execution_id` may report, when `token_sha256`
    /// is its push token's hash and the token has not expired at `now`;
    /// `None` otherwise, the same for an unknown execution, a wrong token
    /// and an expired one.
    pub async fn push_task(
        &self,
        execution_id: Uuid,
        token_sha256: &str,
        now: DateTime<Utc>,
    ) -> Result<Option<TaskRecord>> {
        let sql = format!(
            "SELECT {COLS}, push_token_sha256, push_expires_at FROM nomos_link_data \
             WHERE execution_id = $1 AND task_id IS NOT NULL AND push_token_sha256 IS NOT NULL"
        );
        let Some(row) = query(sql).bind(execution_id).fetch_optional(self).await? else {
            return Ok(None);
        };
        let kept = row.text("push_token_sha256")?;
        let fresh = row.time("push_expires_at")? > now;
        if !same_bytes(kept.as_bytes(), token_sha256.as_bytes()) || !fresh {
            return Ok(None);
        }
        record(&row).map(Some)
    }

    /// What is kept of the task `execution_id` stands for, if it stands
    /// for one.
    pub async fn task_record(&self, execution_id: Uuid) -> Result<Option<TaskRecord>> {
        let sql = format!(
            "SELECT {COLS} FROM nomos_link_data WHERE execution_id = $1 AND task_id IS NOT NULL"
        );
        let row = query(sql).bind(execution_id).fetch_optional(self).await?;
        row.as_ref().map(record).transpose()
    }

    /// Records that a protocol body arrived at `now`, and the state it
    /// carried (`None` keeps the kept one). Written after the status was
    /// recorded: a body whose recording failed is not taken for heard.
    pub async fn note_protocol(
        &self,
        execution_id: Uuid,
        state: Option<&str>,
        now: DateTime<Utc>,
    ) -> Result<()> {
        query(
            "UPDATE nomos_link_data SET protocol_state = COALESCE($2, protocol_state), \
               protocol_heard_at = $3, updated_at = $3 \
             WHERE execution_id = $1 AND task_id IS NOT NULL",
        )
        .bind(execution_id)
        .bind(state)
        .bind(trunc(now))
        .execute(self)
        .await?;
        Ok(())
    }

    /// Replaces the task's gathered artifacts (JSON text) with `artifacts`
    /// if they are still `seen`: a compare-and-set, so of two pushes that
    /// read the same artifacts at once one applies and the other reads
    /// again and gathers on top. Returns whether it applied.
    pub async fn gather_artifacts(
        &self,
        execution_id: Uuid,
        seen: Option<&str>,
        artifacts: &str,
        now: DateTime<Utc>,
    ) -> Result<bool> {
        let same = self.backend().pick("IS NOT DISTINCT FROM", "IS");
        let sql = format!(
            "UPDATE nomos_link_data SET artifacts = $2, protocol_heard_at = $3, updated_at = $3 \
             WHERE execution_id = $1 AND task_id IS NOT NULL AND artifacts {same} $4"
        );
        let updated = query(sql)
            .bind(execution_id)
            .bind(artifacts)
            .bind(trunc(now))
            .bind(seen)
            .execute(self)
            .await?;
        Ok(updated == 1)
    }

    /// Sets the MCP status waiting for its result and its status message
    /// (an empty one is none), or with `None` clears both.
    pub async fn set_result_wait(
        &self,
        execution_id: Uuid,
        wait: Option<(&str, &str)>,
        now: DateTime<Utc>,
    ) -> Result<()> {
        let message = wait.map(|(_, m)| m).filter(|m| !m.is_empty());
        query(
            "UPDATE nomos_link_data SET result_wait = $2, result_wait_message = $3, \
               updated_at = $4 \
             WHERE execution_id = $1 AND task_id IS NOT NULL",
        )
        .bind(execution_id)
        .bind(wait.map(|(s, _)| s))
        .bind(message)
        .bind(trunc(now))
        .execute(self)
        .await?;
        Ok(())
    }

    /// Up to `limit` tasks a poller should ask their agent about: a remote
    /// agent is kept, the execution has not finished, and nothing was
    /// heard of the task since `before` (or ever, since it was kept before
    /// `before`). Longest silent first.
    pub async fn overdue_tasks(
        &self,
        before: DateTime<Utc>,
        limit: i64,
    ) -> Result<Vec<TaskRecord>> {
        let cols = COLS
            .split(", ")
            .map(|c| format!("d.{}", c.trim()))
            .collect::<Vec<_>>()
            .join(", ");
        let sql = format!(
            "SELECT {cols} FROM nomos_link_data d \
             LEFT JOIN executions x ON x.id = d.execution_id \
             WHERE d.task_id IS NOT NULL AND d.agent_url IS NOT NULL AND x.finished_at IS NULL \
               AND COALESCE(d.protocol_heard_at, d.updated_at) < $1 \
             ORDER BY COALESCE(d.protocol_heard_at, d.updated_at), d.execution_id LIMIT $2"
        );
        let rows = query(sql)
            .bind(trunc(before))
            .bind(limit)
            .fetch_all(self)
            .await?;
        rows.iter().map(record).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::same_bytes;

    #[test]
    fn same_bytes_compares_whole_strings() {
        assert!(same_bytes(b"abc", b"abc"));
        assert!(!same_bytes(b"abc", b"abd"));
        assert!(!same_bytes(b"abc", b"ab"));
        assert!(same_bytes(b"", b""));
    }
}
