//! An in-process [`Agent`] that records every call and answers from a
//! script, for worker tests that need no HTTP.

use std::collections::VecDeque;
use std::sync::Mutex;

use async_trait::async_trait;
use nomos_continue::agent::{Agent, AgentError, Continuation, Notice};

/// Records continuations and notices; answers `Ok` unless a scripted answer
/// is queued.
#[derive(Default)]
pub struct RecordingAgent {
    continuations: Mutex<Vec<Continuation>>,
    notices: Mutex<Vec<Notice>>,
    script: Mutex<VecDeque<Result<(), AgentError>>>,
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

    fn answer(&self) -> Result<(), AgentError> {
        self.script
            .lock()
            .expect("script lock")
            .pop_front()
            .unwrap_or(Ok(()))
    }
}

#[async_trait]
impl Agent for RecordingAgent {
    async fn continue_session(&self, continuation: &Continuation) -> Result<(), AgentError> {
        self.continuations
            .lock()
            .expect("continuations lock")
            .push(continuation.clone());
        self.answer()
    }

    async fn notify(&self, notice: &Notice) -> Result<(), AgentError> {
        self.notices
            .lock()
            .expect("notices lock")
            .push(notice.clone());
        self.answer()
    }
}
