//! The operator's word on a session (the assent window), and the chat's
//! turns `chatWith` replays.

use uuid::Uuid;

use super::{cap_text, storable, Intake, IntakeError, MAX_TURN_BYTES};
use crate::store::{Role, Route, Turn, Window, MAX_WINDOW};

impl Intake {
    /// Opens `session_id`'s assent window for `minutes` (at most 30; the
    /// whole 30 when `None`), or extends an open one from now: continuing
    /// is allowed until it closes. Idempotent by nature.
    pub async fn approve(
        &self,
        session_id: Uuid,
        route: Route,
        minutes: Option<i64>,
    ) -> Result<Window, IntakeError> {
        // Bounded here, before `Duration::minutes`, which panics on
        // overflow (`"minutes": 9223372036854775807`).
        let duration = match minutes {
            None => MAX_WINDOW,
            Some(m) if (1..=MAX_WINDOW.num_minutes()).contains(&m) => chrono::Duration::minutes(m),
            Some(m) => {
                return Err(IntakeError::Invalid(format!(
                    "minutes must be between 1 and {}, got {m}",
                    MAX_WINDOW.num_minutes()
                )))
            }
        };
        let now = self.clock.now();
        Ok(self.store.approve(session_id, route, now, duration).await?)
    }

    /// Closes `session_id`'s window: nothing more is sent for it until the
    /// operator approves again. Idempotent by nature.
    pub async fn deny(&self, session_id: Uuid) -> Result<(), IntakeError> {
        self.store.deny(session_id, self.clock.now()).await?;
        Ok(())
    }

    /// Records a turn of the session's chat as it happened, for the
    /// built-in `chatWith` to replay. Not idempotent: the same words may
    /// be said twice (the API makes a retry safe with `Idempotency-Key`).
    pub async fn record_turn(
        &self,
        session_id: Uuid,
        role: Role,
        content: &str,
    ) -> Result<Turn, IntakeError> {
        if content.trim().is_empty() {
            return Err(IntakeError::Invalid("content must not be empty".into()));
        }
        cap_text("content", content, MAX_TURN_BYTES)?;
        storable("content", content)?;
        let now = self.clock.now();
        Ok(self
            .store
            .append_turn(session_id, role, content, now)
            .await?)
    }
}
