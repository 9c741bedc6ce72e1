//! The agent `serve` uses when none is configured: it prints each
//! continuation and notice as one JSON line on stdout, so a fresh install
//! shows what it would send.

use async_trait::async_trait;

use super::{Agent, AgentError, Continuation, Notice};

/// Prints instead of calling an agent.
pub struct LogAgent;

#[async_trait]
impl Agent for LogAgent {
    async fn continue_session(&self, continuation: &Continuation) -> Result<(), AgentError> {
        let line = serde_json::json!({ "kind": "continuation", "continuation": continuation });
        println!("{line}");
        Ok(())
    }

    async fn notify(&self, notice: &Notice) -> Result<(), AgentError> {
        let line = serde_json::json!({ "kind": "notice", "notice": notice });
        println!("{line}");
        Ok(())
    }
}
