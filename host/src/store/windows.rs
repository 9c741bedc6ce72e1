//! Assent windows: approve (open or extend), deny (close), read.

use chrono::{DateTime, Duration, Utc};
use uuid::Uuid;

use super::decode::{self, WINDOW_COLS};
use super::dialect::{query, trunc};
use super::types::{Route, Window};
use super::{Result, Store, StoreError, MAX_WINDOW};

impl Store {
    /// Records an approval by any route: opens the session's assent window or
    /// extends the open one.
    ///
    /// - `duration` must be in `(0, 30 min]` ([`MAX_WINDOW`]), else
    ///   [`StoreError::InvalidDuration`] and nothing is written. This is the
    ///   one place the 30-minute bound is enforced (a CHECK cannot express
    ///   extension).
    /// - If the window is open at `now` (`now < expires_at`, not
    ///   closed) it is **extended**: `expires_at` becomes the later of its
    ///   current value and `now + duration` (a short approval never shortens
    ///   a longer one); `opened_at` and the continuation count are kept, so
    ///   approving again does not reset the loop guard.
    /// - Otherwise (never approved, expired, denied) a **new** window starts:
    ///   `opened_at = now`, `expires_at = now + duration`, count 0.
    ///
    /// One statement (an upsert), so concurrent approvals cannot interleave.
    /// Returns the window as stored.
    pub async fn approve(
        &self,
        session_id: Uuid,
        route: Route,
        now: DateTime<Utc>,
        duration: Duration,
    ) -> Result<Window> {
        if duration <= Duration::zero() || duration > MAX_WINDOW {
            return Err(StoreError::InvalidDuration(duration));
        }
        let now = trunc(now);
        let expires = trunc(now + duration);
        let sql = format!(
            "INSERT INTO nomos_assent_windows AS w \
               (session_id, opened_at, expires_at, route, continuations, closed_at, updated_at) \
             VALUES ($1, $2, $3, $4, 0, NULL, $2) \
             ON CONFLICT (session_id) DO UPDATE SET \
               opened_at = CASE WHEN {open} THEN w.opened_at ELSE EXCLUDED.opened_at END, \
               expires_at = CASE WHEN {open} THEN {greatest}(w.expires_at, EXCLUDED.expires_at) \
                            ELSE EXCLUDED.expires_at END, \
               continuations = CASE WHEN {open} THEN w.continuations ELSE 0 END, \
               route = EXCLUDED.route, closed_at = NULL, updated_at = EXCLUDED.updated_at \
             RETURNING {WINDOW_COLS}",
            open = "(w.closed_at IS NULL AND w.expires_at > $2)",
            greatest = self.backend().greatest(),
        );
        let row = query(sql)
            .bind(session_id)
            .bind(now)
            .bind(expires)
            .bind(route.as_str())
            .fetch_one(self)
            .await?;
        decode::window(&row)
    }

    /// Records a denial: closes the session's open window (`closed_at = now`,
    /// `expires_at = now`), so nothing more is continued automatically.
    ///
    /// On PostgreSQL the row is locked `FOR UPDATE` first: the one lock a
    /// claim's key-share lock on the window conflicts with, so a claim in
    /// progress finishes before the deny, and a claim after it sees the
    /// window closed ([`Store::claim_deliveries`]). One row, one statement:
    /// it holds nothing else while it waits (the lock order in
    /// `store::deliveries`).
    ///
    /// **No-op** returning `None` when there is nothing open to close: the
    /// session was never approved, its window was already denied, or it has
    /// already expired at `now`. Pending links stay linked; the worker drops
    /// them (with a notice) when they finish outside a window.
    pub async fn deny(&self, session_id: Uuid, now: DateTime<Utc>) -> Result<Option<Window>> {
        let sql = format!(
            "UPDATE nomos_assent_windows \
             SET closed_at = $2, expires_at = $2, updated_at = $2 \
             WHERE session_id = $1 AND closed_at IS NULL AND expires_at > $2 \
               AND session_id IN (SELECT session_id FROM nomos_assent_windows \
                   WHERE session_id = $1{}) \
             RETURNING {WINDOW_COLS}",
            self.backend().lock(" FOR UPDATE")
        );
        let row = query(sql)
            .bind(session_id)
            .bind(trunc(now))
            .fetch_optional(self)
            .await?;
        row.as_ref().map(decode::window).transpose()
    }

    /// The session's window row, open or not; `None` if never approved.
    /// Use [`Window::is_open_at`] to ask whether it is open.
    pub async fn window(&self, session_id: Uuid) -> Result<Option<Window>> {
        let sql = format!("SELECT {WINDOW_COLS} FROM nomos_assent_windows WHERE session_id = $1");
        let row = query(sql).bind(session_id).fetch_optional(self).await?;
        row.as_ref().map(decode::window).transpose()
    }
}
