//! A2A as the SDKs send it by default: a push configuration minted for the
//! session before the message is sent (`POST /v1/sessions/{id}/push-configs`)
//! and carried in the message's own configuration, put there by the SDK's
//! client (a2a-sdk 1.x `ClientConfig.push_notification_config`, 0.3
//! `push_notification_configs`) or by the runtime for one message. The
//! task the agent creates links itself on its first push; no registration.
//!
//! And a task that ends at once under the per-task flow (registered after
//! it ended, so its agent never pushed it): asked for soon after its
//! registration, not at the next overdue poll (`--task-poll-after` is ten
//! minutes here, past the tests' patience).
//!
//! Each test prints the time from the message's send to the delivered
//! continuation (BENCHMARKS.md, "A task that ends at once").

use std::time::Instant;

use nomos_continue::store::{task_execution_id, TaskSource};
use nomos_continue_tests::python::{python_of, Venv};
use serde_json::{json, Value};
use uuid::Uuid;

use super::peer::A2aAgent;
use super::{contains, names, Serve, FAILURE, PARTIAL};

each_version! {
    session_story:
        a2a_1_0_a_session_configuration_in_the_client_links_and_continues_each_task,
        a2a_0_3_a_session_configuration_in_the_client_links_and_continues_each_task;
    registered_after_it_ended:
        a2a_1_0_a_task_registered_after_it_ended_is_asked_for_at_once,
        a2a_0_3_a_task_registered_after_it_ended_is_asked_for_at_once;
}

/// The execution a task's first push links, from the SDK's task.
fn execution_of(task: &Value) -> String {
    let id = task["id"].as_str().expect("the task has an id");
    task_execution_id(TaskSource::A2a, id).to_string()
}

/// Waits for the continuation of `execution`; asserts its note carries the
/// failure and the artifact before it, and prints how long after `sent`
/// it was delivered.
async fn continued(serve: &Serve, session: Uuid, execution: &str, sent: Instant, what: &str) {
    let continuation = serve
        .delivered(session, "continuation", Some(execution))
        .await;
    eprintln!(
        "{what}: sent → continuation delivered in {:?}",
        sent.elapsed()
    );
    let note = continuation["note"].as_str().unwrap_or_default();
    assert!(note.contains(FAILURE), "the note has the failure: {note}");
    assert!(note.contains(PARTIAL), "the note has the artifact: {note}");
}

async fn session_story(venv: Venv, version: &str) {
    let Some(python) = python_of(venv) else {
        return;
    };
    let serve = Serve::start().await;
    let mut agent = A2aAgent::start(&python).await;
    let session = Uuid::new_v4();
    serve.approve(session).await;
    let path = format!("/v1/sessions/{session}/push-configs");
    let minted = serve.post(&path, &json!({})).await;
    assert!(minted.ok(), "mint: {} {}", minted.status, minted.body);

    // The SDK's default: the client's configuration, copied into every
    // message. The task ends as soon as it starts.
    agent.configure(&minted.body).await;
    let sent = Instant::now();
    let task = agent.send("fail-now").await;
    let execution = execution_of(&task);
    let what = format!("A2A {version}, the session's configuration in the client");
    continued(&serve, session, &execution, sent, &what).await;

    // The tool result the runtime posts (the SDK's answer) names the task
    // the push linked: the same link, nothing new.
    let linked = serve.tool_result(session, &task).await;
    assert!(
        contains(&linked["already_linked"], &execution),
        "the tool result finds the push's link: {linked}"
    );

    // Minting again leaves the first configuration in the client valid,
    // and a second one may ride in one message's own configuration.
    let again = serve.post(&path, &json!({})).await;
    assert!(again.ok(), "mint again: {} {}", again.status, again.body);
    assert_ne!(again.body["token"], minted.body["token"]);
    let sent = Instant::now();
    let inline = agent.send_with_push("fail-now", &again.body).await;
    let second = execution_of(&inline);
    let what = format!("A2A {version}, a session configuration in the message");
    continued(&serve, session, &second, sent, &what).await;
    let sent = Instant::now();
    let third = execution_of(&agent.send("fail-now").await);
    continued(
        &serve,
        session,
        &third,
        sent,
        "the first configuration, still valid",
    )
    .await;

    let continuations = serve.after_a_sentinel(session).await;
    assert_eq!(
        continuations.len(),
        4,
        "one for each task and one for the sentinel: {continuations:?}"
    );
    for execution in [&execution, &second, &third] {
        let of_it = continuations.iter().filter(|c| names(c, execution)).count();
        assert_eq!(of_it, 1, "{execution} is continued once: {continuations:?}");
    }
}

async fn registered_after_it_ended(venv: Venv, version: &str) {
    let Some(python) = python_of(venv) else {
        return;
    };
    let serve = Serve::start_with(&["--task-poll-after", "10m"]).await;
    let mut agent = A2aAgent::start(&python).await;
    let session = Uuid::new_v4();
    serve.approve(session).await;
    let sent = Instant::now();
    let task = agent.send("fail-now").await;
    let task_id = task["id"].as_str().expect("the task has an id");
    let linked = serve.tool_result(session, &task).await;
    let execution = execution_of(&task);
    assert!(contains(&linked["linked"], &execution), "{linked}");
    // The per-task flow, too late for any push: the task has ended.
    let ended = agent.get(task_id).await;
    let state = ended["status"]["state"].as_str().unwrap_or_default();
    assert!(state.to_lowercase().contains("failed"), "{ended}");
    let body = json!({"protocol": "a2a", "task_id": task_id,
        "agent": {"url": agent.url, "version": version}});
    serve.task(session, body).await;
    let what = format!("A2A {version}, a task registered after it ended");
    continued(&serve, session, &execution, sent, &what).await;
}
