//! The store as the `chatWith` adapter's [`ChatHistory`], with the time of
//! every row from the process's [`Clock`].
//!
//! Why here and not in the store: the store knows SQL, not the agent's
//! traits, and the trait passes no time. This adapter is the one place that
//! knows both, so the rows it writes are stamped by the same clock the
//! worker and the API act on (the database's, in `serve`) instead of the
//! host's wall clock.

use std::sync::Arc;

use async_trait::async_trait;
use uuid::Uuid;

use super::{ChatHistory, ChatTurn, HistoryError};
use crate::clock::Clock;
use crate::store::{Role, Store, StoreError};

/// A session's chat history in the store, stamped by `clock`.
#[derive(Clone)]
pub struct StoreHistory {
    store: Store,
    clock: Arc<dyn Clock>,
}

impl StoreHistory {
    /// The history in `store`; new rows are stamped with `clock.now()`.
    pub fn new(store: Store, clock: Arc<dyn Clock>) -> Self {
        Self { store, clock }
    }
}

/// Malformed input is the caller's bug and cannot heal; anything else (a
/// lost connection, a busy database) may pass, so the delivery is retried.
fn history_error(e: StoreError) -> HistoryError {
    match e {
        StoreError::InvalidUuid(_)
        | StoreError::InvalidValue { .. }
        | StoreError::Corrupt { .. } => HistoryError::Invalid(e.to_string()),
        other => HistoryError::Unavailable(other.to_string()),
    }
}

#[async_trait]
impl ChatHistory for StoreHistory {
    async fn turns(&self, session: Uuid) -> Result<Vec<ChatTurn>, HistoryError> {
        let turns = self.store.turns(session).await.map_err(history_error)?;
        Ok(turns
            .into_iter()
            .map(|t| ChatTurn::new(t.role.as_str(), t.content))
            .collect())
    }

    async fn has_reply(&self, session: Uuid, idempotency_key: &str) -> Result<bool, HistoryError> {
        self.store
            .has_reply(session, idempotency_key)
            .await
            .map_err(history_error)
    }

    async fn append_assistant(
        &self,
        session: Uuid,
        content: &str,
        idempotency_key: &str,
    ) -> Result<(), HistoryError> {
        self.store
            .append_turn_once(
                session,
                Role::Assistant,
                content,
                idempotency_key,
                self.clock.now(),
            )
            .await
            .map(|_| ())
            .map_err(history_error)
    }

    async fn append_notice(
        &self,
        session: Uuid,
        message: &str,
        idempotency_key: &str,
    ) -> Result<(), HistoryError> {
        self.store
            .append_notice(session, message, idempotency_key, self.clock.now())
            .await
            .map(|_| ())
            .map_err(history_error)
    }
}
