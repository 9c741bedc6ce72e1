//! What wakes an idle worker. Its poll is an hour here, so a continuation
//! that arrives in the test's bounded wait can only have come from a
//! wake-up: the in-process signal of the API on SQLite, PostgreSQL `NOTIFY`
//! through the wake listener (as `serve` runs it) on PostgreSQL.

use std::sync::Arc;
use std::time::Duration;

use nomos_continue::clock::{Clock, SystemClock};
use nomos_continue::metrics::Metrics;
use nomos_continue::store::{Backend, Route, Store};
use nomos_continue::worker::{spawn_pg_listener, Worker, WorkerConfig};
use nomos_continue_tests::agents::RecordingAgent;
use nomos_continue_tests::api::ServedApi;
use nomos_continue_tests::wait::until_true;
use serde_json::json;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

nomos_continue_tests::on_both_stores!(a_link_after_its_status_wakes_an_idle_worker);

/// A status that arrives before its tool result: the link, not the status,
/// makes the execution ready, so the link must wake the worker.
async fn a_link_after_its_status_wakes_an_idle_worker(store: Store) {
    let clock = Arc::new(SystemClock);
    let agent = Arc::new(RecordingAgent::default());
    let metrics = Arc::new(Metrics::default());
    let config = WorkerConfig::default()
        .with_worker_id("wake-test".into())
        .with_poll_interval(Duration::from_secs(3600));
    let worker = Worker::builder(store.clone(), super::policy(), agent.clone())
        .clock(clock.clone())
        .config(config)
        .metrics(metrics.clone())
        .build();

    let (session, execution) = (Uuid::new_v4(), Uuid::new_v4());
    store
        .approve(
            session,
            Route::Button,
            clock.now(),
            chrono::Duration::minutes(30),
        )
        .await
        .expect("approve");
    store
        .upsert_execution_status(
            execution,
            "failed",
            "ssh: connection refused",
            clock.now(),
            true,
        )
        .await
        .expect("status before the link");
    // A running execution of another session: every pass of the worker
    // records one "wait" decision for it, which tells the test when the
    // worker has looked and found nothing to do.
    let marker = Uuid::new_v4();
    store
        .link(Uuid::new_v4(), &[marker], clock.now())
        .await
        .expect("link the marker");
    store
        .upsert_execution_status(marker, "running", "", clock.now(), false)
        .await
        .expect("marker status");

    let shutdown = CancellationToken::new();
    // On PostgreSQL the API stands for another replica: its in-process
    // signal reaches nobody here, so only the database's NOTIFY can wake
    // this worker. On SQLite the API's signal is the worker's own.
    let api_wake = match store.backend() {
        Backend::Sqlite => worker.waker(),
        Backend::Postgres => {
            let listener = spawn_pg_listener(&store, worker.waker(), shutdown.clone());
            assert!(listener.is_some(), "a listener on PostgreSQL");
            // The listener signals once when it starts listening; take that
            // signal here so it cannot stand in for the link's.
            tokio::time::timeout(Duration::from_secs(30), worker.waker().notified())
                .await
                .expect("the wake listener starts");
            Arc::new(Notify::new())
        }
    };
    let api = ServedApi::start_with_wake(store.clone(), None, api_wake).await;
    let running = tokio::spawn(worker.clone().run(shutdown.clone()));

    until_true("the worker's first pass", async || {
        metrics.decisions_with("wait") >= 1
    })
    .await;
    assert!(
        agent.continuations().is_empty(),
        "nothing is linked yet, so nothing is continued"
    );

    let text = format!("running, execution {execution}");
    let answer = api
        .json(
            "POST",
            &format!("/v1/sessions/{session}/tool-results"),
            &json!({ "text": text }),
        )
        .await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    assert_eq!(answer.json()["linked"], json!([execution]));

    until_true("the continuation the link should wake", async || {
        !agent.continuations().is_empty()
    })
    .await;
    let calls = agent.continuations();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].session_id, session);
    assert!(
        calls[0]
            .note
            .contains(&format!("execution {execution} failed")),
        "{}",
        calls[0].note
    );

    shutdown.cancel();
    running.await.expect("the worker stops on shutdown");
}
