//! A runtime that embeds the engine: the one assembly started in process,
//! its writes made through [`Running::intake`](nomos_continue::Running)
//! rather than HTTP, its agent one of its own. A failure reported that way
//! is continued once; a bad report is a domain error, not a problem
//! document; a late report is kept, not applied; shutdown is clean.

use std::sync::Arc;

use nomos_continue::intake::IntakeError;
use nomos_continue::server::Server;
use nomos_continue::store::{Database, Route, Store};
use nomos_continue_tests::agents::RecordingAgent;
use nomos_continue_tests::wait::until_true;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

nomos_continue_tests::on_both_stores!(an_embedding_runtime_is_continued_in_process);

async fn an_embedding_runtime_is_continued_in_process(store: Store) {
    let agent = Arc::new(RecordingAgent::default());
    let config = super::served_config("embedded-test");
    let shutdown = CancellationToken::new();
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind loopback");
    let running = Server::new(config, Database::over(store.clone()))
        .with_agent(agent.clone())
        .with_policy(super::policy())
        .start(listener, shutdown.clone())
        .await
        .expect("the system starts");
    let intake = running.intake();
    let (session, execution) = (Uuid::new_v4(), Uuid::new_v4());

    let window = intake
        .approve(session, Route::Api, Some(10))
        .await
        .expect("approved");
    assert!(window.closed_at.is_none());
    let linked = intake
        .link_tool_result(session, format!("started, execution {execution}"), None)
        .await
        .expect("linked");
    assert_eq!(linked.outcome.linked, vec![execution]);
    let refused = intake.record_status(execution, " ", "", None).await;
    assert!(
        matches!(refused, Err(IntakeError::Invalid(ref why)) if why.contains("status")),
        "{refused:?}"
    );
    let recorded = intake
        .record_status(execution, "failed", "ssh: connection refused", None)
        .await
        .expect("recorded");
    assert!(recorded.applied && recorded.note.is_none());

    until_true("the continuation", async || {
        !agent.continuations().is_empty()
    })
    .await;
    let calls = agent.continuations();
    assert_eq!(calls.len(), 1, "one continuation: {calls:?}");
    assert_eq!(calls[0].session_id, session);
    assert_eq!(calls[0].executions[0].id, execution);
    let late = intake
        .record_status(execution, "completed", "", None)
        .await
        .expect("recorded");
    assert!(!late.applied, "terminal is final");
    assert!(late.note.is_some_and(|n| n.contains("terminal is final")));

    shutdown.cancel();
    running.wait().await.expect("a clean shutdown");
}
