//! The shadow policy revision and the decisions it took differently from
//! the active one.
//!
//! The store keeps rows: which revision is in shadow (one row, like the
//! active one, so every replica converges on it) and each disagreement as
//! the JSON text the caller produced. It does not know what a decision is.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::store::decode::RowExt;
use crate::store::dialect::{query, trunc, Row};
use crate::store::policy::revisions::{activate_in, policy_head};
use crate::store::read::timeline::{cutting, shown, Long, Shown};
use crate::store::types::{ActivePolicy, PolicyHead};
use crate::store::{Result, Store, StoreError};

/// One decision on which the shadow and the active revision differed.
/// `input`, `active_output` and `shadow_output` are opaque text to the
/// store (the policy's golden-file JSON).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Disagreement {
    /// The row's id (ignored when recording).
    pub id: i64,
    /// When the batch was decided.
    pub at: DateTime<Utc>,
    /// The session the decision was about.
    pub session_id: Uuid,
    /// The execution the decision was about.
    pub execution_id: Uuid,
    /// The revision whose decision acted.
    pub active_revision: String,
    /// The revision in shadow.
    pub shadow_revision: String,
    /// The decision input.
    pub input: String,
    /// What the active revision decided.
    pub active_output: String,
    /// What the shadow decided.
    pub shadow_output: String,
}

impl Store {
    /// Puts a saved revision in shadow for every replica, replacing any
    /// shadow there was. [`StoreError::UnknownPolicy`] if it was never saved.
    pub async fn set_policy_shadow(&self, hash: &str, now: DateTime<Utc>) -> Result<()> {
        let known = query("SELECT hash FROM nomos_policy_revisions WHERE hash = $1")
            .bind(hash)
            .fetch_optional(self)
            .await?;
        if known.is_none() {
            return Err(StoreError::UnknownPolicy(hash.to_owned()));
        }
        query(
            "INSERT INTO nomos_policy_shadow (id, hash, set_at) VALUES (1, $1, $2) \
             ON CONFLICT (id) DO UPDATE SET hash = EXCLUDED.hash, set_at = EXCLUDED.set_at",
        )
        .bind(hash)
        .bind(trunc(now))
        .execute(self)
        .await?;
        Ok(())
    }

    /// The revision in shadow with its bytes (`activated_at` is when it was
    /// put in shadow); `None` when there is none.
    pub async fn policy_shadow(&self) -> Result<Option<ActivePolicy>> {
        const SQL: &str = "SELECT r.hash, r.wasm, r.name, r.version, r.signature, s.set_at \
             FROM nomos_policy_shadow s JOIN nomos_policy_revisions r ON r.hash = s.hash \
             WHERE s.id = 1";
        let Some(r) = query(SQL).fetch_optional(self).await? else {
            return Ok(None);
        };
        Ok(Some(ActivePolicy {
            hash: r.text("hash")?,
            wasm: r.bytes("wasm")?,
            name: r.text("name")?,
            version: r.text("version")?,
            activated_at: r.time("set_at")?,
            signature: r.opt_text("signature")?,
        }))
    }

    /// The revision in shadow, without its bytes; `None` when there is none.
    pub async fn policy_shadow_head(&self) -> Result<Option<PolicyHead>> {
        const SQL: &str = "SELECT r.hash, r.signature FROM nomos_policy_shadow s \
             JOIN nomos_policy_revisions r ON r.hash = s.hash WHERE s.id = 1";
        let row = query(SQL).fetch_optional(self).await?;
        row.map(|r| policy_head(&r)).transpose()
    }

    /// Takes the shadow out of service; whether there was one.
    pub async fn clear_policy_shadow(&self) -> Result<bool> {
        let n = query("DELETE FROM nomos_policy_shadow WHERE id = 1")
            .execute(self)
            .await?;
        Ok(n > 0)
    }

    /// Makes the shadow `expected` the active revision and clears the
    /// shadow, in one transaction, through the same activation (and
    /// activation log) as an upload, so a rollback returns to the revision
    /// it replaced. `Ok(false)`, changing nothing, when `expected` is no
    /// longer the shadow (dropped or replaced meanwhile).
    pub async fn promote_policy_shadow(&self, expected: &str, now: DateTime<Utc>) -> Result<bool> {
        let mut tx = self.begin().await?;
        let shadow = query(format!(
            "SELECT hash FROM nomos_policy_shadow WHERE id = 1{}",
            tx.backend().lock(" FOR UPDATE")
        ))
        .fetch_optional(&mut tx)
        .await?;
        if shadow.map(|r| r.text("hash")).transpose()?.as_deref() != Some(expected) {
            return Ok(false);
        }
        activate_in(&mut tx, expected, now).await?;
        query("DELETE FROM nomos_policy_shadow WHERE id = 1")
            .execute(&mut tx)
            .await?;
        tx.commit().await?;
        Ok(true)
    }

    /// Records disagreements in one transaction. The caller bounds how
    /// many it passes at once.
    pub async fn record_disagreements(&self, rows: &[Disagreement]) -> Result<()> {
        if rows.is_empty() {
            return Ok(());
        }
        let mut tx = self.begin().await?;
        for row in rows {
            query(
                "INSERT INTO nomos_policy_disagreements (at, session_id, execution_id, \
                 active_revision, shadow_revision, input, active_output, shadow_output) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
            )
            .bind(trunc(row.at))
            .bind(row.session_id)
            .bind(row.execution_id)
            .bind(row.active_revision.as_str())
            .bind(row.shadow_revision.as_str())
            .bind(row.input.as_str())
            .bind(row.active_output.as_str())
            .bind(row.shadow_output.as_str())
            .execute(&mut tx)
            .await?;
        }
        tx.commit().await
    }

    /// How many disagreements were recorded for `shadow_revision`, by
    /// every replica.
    pub async fn count_disagreements(&self, shadow_revision: &str) -> Result<i64> {
        self.count_disagreements_up_to(shadow_revision, i64::MAX)
            .await
    }

    /// [`Self::count_disagreements`], counting no further than `at_most`:
    /// a page that only needs "more than N" reads N rows, not every row of
    /// a shadow left running for weeks.
    pub async fn count_disagreements_up_to(
        &self,
        shadow_revision: &str,
        at_most: i64,
    ) -> Result<i64> {
        let row = query(
            "SELECT COUNT(*) AS n FROM (SELECT 1 FROM nomos_policy_disagreements \
             WHERE shadow_revision = $1 LIMIT $2) AS d",
        )
        .bind(shadow_revision)
        .bind(at_most)
        .fetch_one(self)
        .await?;
        row.bigint("n")
    }

    #[cfg(feature = "test-support")]
    /// The most recent disagreements of `shadow_revision`, newest first, at
    /// most `limit`.
    pub async fn disagreements(
        &self,
        shadow_revision: &str,
        limit: i64,
    ) -> Result<Vec<Disagreement>> {
        let rows = self
            .disagreement_rows(DISAGREEMENT_COLS, shadow_revision, limit)
            .await?;
        rows.iter().map(disagreement).collect()
    }

    /// [`Self::disagreements`] with the input and both answers cut (see
    /// `timeline`): a page shows a few kilobytes of each, and an input
    /// quotes a result of up to megabytes.
    pub async fn shown_disagreements(
        &self,
        shadow_revision: &str,
        limit: i64,
    ) -> Result<Vec<Shown<Disagreement>>> {
        const LONG: [Long; 3] = [
            ("input", "input_chars"),
            ("active_output", "active_output_chars"),
            ("shadow_output", "shadow_output_chars"),
        ];
        let cols = cutting(DISAGREEMENT_COLS, &LONG);
        let rows = self
            .disagreement_rows(&cols, shadow_revision, limit)
            .await?;
        rows.iter().map(|r| shown(r, &LONG, disagreement)).collect()
    }

    /// The rows are chosen on narrow columns first, so only the page's
    /// texts are read (as in `read::timeline`).
    async fn disagreement_rows(
        &self,
        cols: &str,
        shadow_revision: &str,
        limit: i64,
    ) -> Result<Vec<Row>> {
        let sql = format!(
            "SELECT {cols} FROM nomos_policy_disagreements \
             WHERE id IN (SELECT id FROM nomos_policy_disagreements \
                          WHERE shadow_revision = $1 ORDER BY id DESC LIMIT $2) \
             ORDER BY id DESC"
        );
        query(sql)
            .bind(shadow_revision)
            .bind(limit)
            .fetch_all(self)
            .await
    }
}

const DISAGREEMENT_COLS: &str = "id, at, session_id, execution_id, active_revision, \
     shadow_revision, input, active_output, shadow_output";

fn disagreement(r: &Row) -> Result<Disagreement> {
    Ok(Disagreement {
        id: r.bigint("id")?,
        at: r.time("at")?,
        session_id: r.uuid("session_id")?,
        execution_id: r.uuid("execution_id")?,
        active_revision: r.text("active_revision")?,
        shadow_revision: r.text("shadow_revision")?,
        input: r.text("input")?,
        active_output: r.text("active_output")?,
        shadow_output: r.text("shadow_output")?,
    })
}
