//! A2A 1.0 (a2a-sdk 1.x) and A2A 0.3 (a2a-sdk 0.3.x): the remote agent
//! pushes to the configuration nomos-continue minted, with the SDK's own
//! sender. A recording tap is registered beside it with the same token, so
//! the test holds exactly what nomos-continue was sent and can replay it
//! (a duplicate, an old `working`) or misuse it (another task's token).

use nomos_continue_tests::http::{RecordedRequest, RecordingServer, Reply, Script};
use nomos_continue_tests::python::{python_of, Venv};
use nomos_continue_tests::wait::{until, PATIENCE};
use serde_json::{json, Value};
use uuid::Uuid;

use super::peer::A2aAgent;
use super::{contains, names, plain_state, sent_headers, Serve, FAILURE, PARTIAL, QUESTION};

each_version! {
    failed_story:
        a2a_1_0_a_failed_task_continues_once_and_forged_pushes_are_refused,
        a2a_0_3_a_failed_task_continues_once_and_forged_pushes_are_refused;
    input_story:
        a2a_1_0_a_task_asking_for_input_notifies_and_never_continues,
        a2a_0_3_a_task_asking_for_input_notifies_and_never_continues;
    ended_while_down:
        a2a_1_0_a_task_that_ended_while_nomos_continue_was_down_is_asked_for,
        a2a_0_3_a_task_that_ended_while_nomos_continue_was_down_is_asked_for;
}

/// A task of the agent's, linked to `session` from the tool result (the
/// SDK client's answer), with nomos-continue's push configuration and a
/// tap beside it registered at the agent.
struct Linked {
    task_id: String,
    execution: String,
    /// The path of the push URL nomos-continue minted.
    path: String,
    push: Value,
    tap: RecordingServer,
}

async fn link_task(serve: &Serve, agent: &mut A2aAgent, session: Uuid, script: &str) -> Linked {
    let task = agent.send(script).await;
    let task_id = task["id"].as_str().expect("the task has an id").to_owned();
    let linked = serve.tool_result(session, &task).await;
    let version = if agent.sdk.starts_with("0.") {
        "0.3"
    } else {
        "1.0"
    };
    let body = json!({
        "protocol": "a2a",
        "task_id": task_id,
        "agent": {"url": agent.url, "version": version},
    });
    let minted = serve.task(session, body).await;
    let execution = minted["execution_id"]
        .as_str()
        .expect("execution_id")
        .to_owned();
    assert!(
        contains(&linked["linked"], &execution),
        "the tool result (the SDK's task {task}) links the task's execution {execution}: {linked}"
    );
    assert_eq!(
        minted["linked"], false,
        "linked already by the tool result: {minted}"
    );
    let push = minted["push"].clone();
    let url = push["url"].as_str().expect("push url");
    let path = format!("/v1/a2a/push/{execution}");
    assert!(url.ends_with(&path), "push URL {url} is the execution's");
    assert_eq!(push["authentication"]["scheme"], "Bearer", "{push}");

    let ok = Script::always(Reply::json(200, &json!({})));
    let (_, tap) = RecordingServer::start(ok).await.expect("tap");
    let tapped = json!({
        "url": tap.url(&path),
        "token": push["token"],
        "authentication": push["authentication"],
    });
    agent.register(&task_id, &push, "nomos").await;
    agent.register(&task_id, &tapped, "tap").await;
    Linked {
        task_id,
        execution,
        path,
        push,
        tap,
    }
}

/// The start of every story: serve, the agent on `venv`'s SDK, an approved
/// session, and a task of `script` linked to it; `None` (skip) without the
/// environment.
async fn begin(venv: Venv, script: &str) -> Option<(Serve, A2aAgent, Uuid, Linked)> {
    let python = python_of(venv)?;
    let serve = Serve::start().await;
    let mut agent = A2aAgent::start(&python).await;
    let session = Uuid::new_v4();
    serve.approve(session).await;
    let task = link_task(&serve, &mut agent, session, script).await;
    Some((serve, agent, session, task))
}

/// Lets the task play its script; asserts it ended in `state` and waits
/// for the tap to have its `n` pushes, which it answers.
async fn end(agent: &mut A2aAgent, task: &Linked, state: &str, n: usize) -> Vec<RecordedRequest> {
    let ended = agent.go(&task.task_id).await;
    let last = ended["status"]["state"].as_str().unwrap_or_default();
    assert_eq!(plain_state(last), state, "{ended}");
    tapped(task, n).await
}

/// The first `n` pushes the tap was sent, waited for.
async fn tapped(linked: &Linked, n: usize) -> Vec<RecordedRequest> {
    match tokio::time::timeout(PATIENCE, linked.tap.wait_for_requests(n)).await {
        Ok(requests) => requests,
        Err(_) => panic!("the agent pushed {:?}, not {n}", linked.tap.requests()),
    }
}

/// The terminal (or person's) state as nomos-continue recorded it: the
/// protocol's own spelling.
fn recorded_state(version: &str, plain: &str) -> String {
    match version {
        "1.0" => format!("TASK_STATE_{}", plain.to_uppercase().replace('-', "_")),
        _ => plain.to_owned(),
    }
}

async fn failed_story(venv: Venv, version: &str) {
    let Some((serve, mut agent, session, task)) = begin(venv, "fail").await else {
        return;
    };
    // A progress update, the artifact (1.0: its own push), the failure.
    let pushes = end(&mut agent, &task, "failed", 3).await;

    let execution = continued_with_the_failure(&serve, session, &task, version).await;
    assert_eq!(execution["terminal"], true);

    // The same failure again, then the old `working`: both taken, neither
    // applied.
    let failed = pushes.last().expect("the failure's push");
    for (what, push) in [("the duplicate", failed), ("the old working", &pushes[0])] {
        let answer = serve.replay(push).await;
        assert_eq!(answer.status, 200, "{what}: {}", answer.body);
    }
    let after = serve.execution(&task.execution).await;
    assert_eq!(after["status"], execution["status"], "{after}");

    // Another task's token cannot report this one, nor this one's URL
    // take another's token.
    let other_session = Uuid::new_v4();
    let other = link_task(&serve, &mut agent, other_session, "fail").await;
    let forged = with_token(failed, &task.push, &other.push);
    let refused = serve.push(&other.path, &forged, &failed.body).await;
    assert_eq!(
        refused.status, 403,
        "a push naming another task: {}",
        refused.body
    );
    let refused = serve.push(&task.path, &forged, &failed.body).await;
    assert_eq!(
        refused.status, 401,
        "another task's token: {}",
        refused.body
    );
    let untokened: Vec<_> = sent_headers(failed)
        .into_iter()
        .filter(|(n, _)| n == "content-type" || n == "a2a-version")
        .collect();
    let refused = serve.push(&task.path, &untokened, &failed.body).await;
    assert_eq!(refused.status, 401, "no token: {}", refused.body);
    let untouched = serve.execution(&other.execution).await;
    assert!(
        untouched.is_null() || untouched["terminal"] == false,
        "the other task is not ended by a forgery: {untouched}"
    );

    let continuations = serve.after_a_sentinel(session).await;
    assert_eq!(
        continuations.len(),
        2,
        "one for the task, one for the sentinel: {continuations:?}"
    );
    assert_eq!(continuations[0]["execution_ids"], json!([task.execution]));
    assert!(
        !names(&continuations[1], &task.execution),
        "the task is not continued again: {continuations:?}"
    );
    assert_eq!(
        serve.agent_events("continuation.v1", session).len(),
        2,
        "the agent was called once for the task and once for the sentinel"
    );
}

/// Waits for the task's continuation; asserts its note has the failure
/// and the artifact the agent sent before it, and the state was recorded
/// in the protocol's spelling; the execution.
async fn continued_with_the_failure(
    serve: &Serve,
    session: Uuid,
    task: &Linked,
    version: &str,
) -> Value {
    let continuation = serve
        .delivered(session, "continuation", Some(&task.execution))
        .await;
    let note = continuation["note"].as_str().unwrap_or_default();
    assert!(note.contains(FAILURE), "the note has the failure: {note}");
    assert!(note.contains(PARTIAL), "the note has the artifact: {note}");
    let execution = serve.execution(&task.execution).await;
    let failed = recorded_state(version, "failed");
    assert_eq!(execution["status"], failed, "{execution}");
    execution
}

/// `request`'s headers with `from`'s secrets replaced by `to`'s, as a
/// sender holding `to`'s configuration would send them.
fn with_token(request: &RecordedRequest, from: &Value, to: &Value) -> Vec<(String, String)> {
    let secret = |push: &Value, key: &str| push[key].as_str().unwrap_or_default().to_owned();
    let (token, credentials) = (
        secret(from, "token"),
        from["authentication"]["credentials"].clone(),
    );
    let credentials = credentials.as_str().unwrap_or_default();
    let other_token = secret(to, "token");
    let other_credentials = to["authentication"]["credentials"]
        .as_str()
        .unwrap_or_default();
    sent_headers(request)
        .into_iter()
        .map(|(name, value)| {
            let mut value = value.replace(&token, &other_token);
            if !credentials.is_empty() {
                value = value.replace(credentials, other_credentials);
            }
            (name, value)
        })
        .collect()
}

async fn input_story(venv: Venv, version: &str) {
    let Some((serve, mut agent, session, task)) = begin(venv, "input").await else {
        return;
    };
    let pushes = end(&mut agent, &task, "input-required", 2).await;

    let notice = serve.delivered(session, "notice", None).await;
    let said = notice["note"].as_str().unwrap_or_default();
    assert!(
        said.contains(QUESTION),
        "the notice says what the task asks: {said}"
    );
    let told = serve.agent_events("notice.v1", session);
    assert_eq!(told.len(), 1, "the agent's notify got it: {told:?}");
    let operator = until("the operator's copy of the notice", async || {
        let events = serve.operator_events(session);
        (!events.is_empty()).then_some(events)
    })
    .await;
    assert!(
        operator[0]["data"]["notice"]
            .as_str()
            .is_some_and(|n| n.contains(QUESTION)),
        "{operator:?}"
    );
    let execution = serve.execution(&task.execution).await;
    assert_eq!(
        execution["status"],
        recorded_state(version, "input-required"),
        "{execution}"
    );
    assert_eq!(
        execution["terminal"], false,
        "a person's state is not an end"
    );

    // The same push again: still one notice.
    let again = serve.replay(pushes.last().expect("the input push")).await;
    assert_eq!(again.status, 200, "{}", again.body);

    let continuations = serve.after_a_sentinel(session).await;
    assert_eq!(
        continuations.len(),
        1,
        "only the sentinel is continued: {continuations:?}"
    );
    assert!(
        !names(&continuations[0], &task.execution),
        "a task waiting for a person is never continued: {continuations:?}"
    );
    assert_eq!(
        serve.deliveries(session, "notice").await.len(),
        1,
        "one notice per entry"
    );
}

/// The senders do not retry: a push sent while nomos-continue is down is
/// lost. The agent's URL was registered with the configuration, so after
/// its restart nomos-continue asks the agent for the task (`GetTask`; 0.3
/// `tasks/get`) and continues the agent once, with the same note a push
/// would have given.
async fn ended_while_down(venv: Venv, version: &str) {
    let Some((mut serve, mut agent, session, task)) = begin(venv, "fail").await else {
        return;
    };

    serve.stop().await;
    // The tap has all three: the agent has sent (and lost) them all.
    end(&mut agent, &task, "failed", 3).await;
    serve.start_again().await;

    continued_with_the_failure(&serve, session, &task, version).await;
    let continuations = serve.after_a_sentinel(session).await;
    assert_eq!(
        continuations.len(),
        2,
        "once for the task: {continuations:?}"
    );
}
