//! An in-process [`Agent`] that records every call and answers from a
//! script, for worker tests that need no HTTP.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use tokio::sync::{OwnedRwLockWriteGuard, RwLock};

use async_trait::async_trait;
use nomos_continue::agent::{Agent, AgentError, Continuation, Notice};

/// Records continuations and notices; answers `Ok` unless a scripted answer
/// is queued. While a test holds its gate ([`RecordingAgent::hold`]) every
/// call is recorded at once but answers only when the gate is dropped: a
/// slow agent, without sleeping.
#[derive(Default)]
pub struct RecordingAgent {
    continuations: Mutex<Vec<Continuation>>,
    notices: Mutex<Vec<Notice>>,
    script: Mutex<VecDeque<Result<(), AgentError>>>,
    accepted: Mutex<Vec<String>>,
    gate: Arc<RwLock<()>>,
}

impl RecordingAgent {
    /// Queues answers for the next calls (continuations and notices alike).
    pub fn script(&self, answers: impl IntoIterator<Item = Result<(), AgentError>>) {
        self.script.lock().expect("script lock").extend(answers);
    }

    pub fn continuations(&self) -> Vec<Continuation> {
        self.continuations
            .lock()
            .expect("continuations lock")
            .clone()
    }

    pub fn notices(&self) -> Vec<Notice> {
        self.notices.lock().expect("notices lock").clone()
    }

    /// The one notice the agent was given, which must contain every one of
    /// `parts`: "settled with one notice that says why" (P1), asserted the
    /// same way everywhere. Panics with every notice otherwise.
    pub fn the_one_notice(&self, parts: &[&str]) -> Notice {
        let notices = self.notices();
        let [notice] = notices.as_slice() else {
            panic!(
                "expected exactly one notice, got {}: {notices:#?}",
                notices.len()
            );
        };
        for part in parts {
            assert!(
                notice.message.contains(part),
                "the notice does not say {part:?}: {}",
                notice.message
            );
        }
        notice.clone()
    }

    /// Makes every call wait (after it is recorded) until the guard drops.
    pub async fn hold(&self) -> OwnedRwLockWriteGuard<()> {
        self.gate.clone().write_owned().await
    }

    /// The idempotency keys the agent answered with success, in order: the
    /// agent's own record, to judge "one acceptance per key" against.
    pub fn accepted(&self) -> Vec<String> {
        self.accepted.lock().expect("accepted lock").clone()
    }

    async fn answer(&self, key: &str) -> Result<(), AgentError> {
        drop(self.gate.read().await);
        let answer = self
            .script
            .lock()
            .expect("script lock")
            .pop_front()
            .unwrap_or(Ok(()));
        if answer.is_ok() {
            self.accepted
                .lock()
                .expect("accepted lock")
                .push(key.to_string());
        }
        answer
    }
}

#[async_trait]
impl Agent for RecordingAgent {
    async fn continue_session(&self, continuation: &Continuation) -> Result<(), AgentError> {
        self.continuations
            .lock()
            .expect("continuations lock")
            .push(continuation.clone());
        self.answer(&continuation.idempotency_key).await
    }

    async fn notify(&self, notice: &Notice) -> Result<(), AgentError> {
        self.notices
            .lock()
            .expect("notices lock")
            .push(notice.clone());
        self.answer(&notice.idempotency_key).await
    }
}
