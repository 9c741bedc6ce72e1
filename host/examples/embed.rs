//! The seed's story with the engine embedded in a Rust runtime: no HTTP,
//! no webhook, the embedded SQLite default, and only what the crate's root
//! exports (this example builds without the `test-support` feature).
//!
//! The operator approves the plan; a tool answers "running" and names its
//! execution; the execution fails; the engine re-invokes the agent, here
//! the runtime's own [`Agent`], with the note it would be given.
//!
//! ```text
//! cargo run -p nomos-continue --example embed
//! ```

use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use nomos_continue::{
    async_trait, Agent, AgentError, Continuation, Database, Notice, Route, ServeConfig, Server,
    WorkerConfig,
};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

/// The runtime's agent: a real runtime would append the note to the
/// session's history and run the model; this one hands it to `main`.
struct RuntimeAgent {
    turns: mpsc::UnboundedSender<Continuation>,
}

#[async_trait]
impl Agent for RuntimeAgent {
    async fn continue_session(&self, continuation: &Continuation) -> Result<(), AgentError> {
        (self.turns.send(continuation.clone()))
            .map_err(|_| AgentError::unavailable("the runtime is shutting down"))
    }

    async fn notify(&self, notice: &Notice) -> Result<(), AgentError> {
        println!("operator notice: {}", notice.message);
        Ok(())
    }
}

#[tokio::main]
async fn main() -> Result<()> {
    let dir = tempfile::tempdir().context("a directory for the database")?;
    let url = format!("sqlite:{}", dir.path().join("embedded.db").display());
    let database = Database::connect(&url).await.context("open SQLite")?;
    database.migrate().await.context("migrate")?;

    // The configuration's builder: every setting not named keeps the
    // default `serve` starts with.
    let config = ServeConfig::default()
        .with_worker(WorkerConfig::default().with_worker_id("embedded-runtime".into()))
        .with_stuck_after(Duration::from_secs(10 * 60));
    let (turns, mut continued) = mpsc::unbounded_channel();
    let shutdown = CancellationToken::new();
    let running = Server::new(config, database)
        .with_agent(Arc::new(RuntimeAgent { turns }))
        .start_in_process(shutdown.clone())
        .await
        .context("start the engine")?;
    let intake = running.intake();

    let (session, execution) = (Uuid::new_v4(), Uuid::new_v4());
    let window = intake.approve(session, Route::Api, Some(30)).await?;
    println!("approved: session {session} until {}", window.expires_at);
    let tool_result = format!("pct_create started: running, execution {execution}");
    let linked = intake.link_tool_result(session, tool_result, None).await?;
    println!("linked: {} execution(s)", linked.outcome.linked.len());
    let result = "ssh: connect to host 10.0.0.7 port 22: Connection refused";
    intake
        .record_status(execution, "failed", result, None)
        .await?;

    let continuation = tokio::time::timeout(Duration::from_secs(30), continued.recv())
        .await
        .context("no continuation within 30 s")?
        .context("the agent's channel closed")?;
    if continuation.session_id != session {
        bail!(
            "continued session {}, not {session}",
            continuation.session_id
        );
    }
    println!("continued: session {}", continuation.session_id);
    println!("note the agent is re-invoked with:\n{}", continuation.note);
    running.stop().await.context("stop the engine")
}
