//! The protocols' routes over HTTP: a task registered for a session and
//! its A2A push configuration, pushes of A2A 1.0 and 0.3 (tokens, other
//! tasks, duplicates, reordering, malformed bodies), and MCP task updates
//! of both versions.

use nomos_continue::store::{task_execution_id, TaskSource};
use nomos_continue_tests::api::{Answer, ServedApi};
use serde_json::{json, Value};
use uuid::Uuid;

use super::sqlite_api;

const TOKEN: &str = "runtime-token";

/// A session's A2A task registered; its execution id and push token.
async fn register(api: &ServedApi, session: Uuid, task_id: &str) -> (Uuid, String) {
    let answer = api
        .json(
            "POST",
            &format!("/v1/sessions/{session}/tasks"),
            &json!({"protocol": "a2a", "task_id": task_id, "ttl_seconds": 3600,
                "agent": {"url": "http://agent.test/a2a", "version": "1.0"}}),
        )
        .await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    let body = answer.json();
    let id: Uuid = body["execution_id"]
        .as_str()
        .expect("an id")
        .parse()
        .expect("a uuid");
    assert_eq!(id, task_execution_id(TaskSource::A2a, task_id));
    let push = &body["push"];
    assert_eq!(push["url"], format!("{}/v1/a2a/push/{id}", api.base));
    assert_eq!(push["authentication"]["scheme"], "Bearer");
    assert_eq!(push["authentication"]["credentials"], push["token"]);
    (id, push["token"].as_str().expect("a token").to_owned())
}

async fn push(api: &ServedApi, id: Uuid, token: &str, body: &Value) -> Answer {
    let auth = format!("Bearer {token}");
    let headers = [
        ("Authorization", auth.as_str()),
        ("Content-Type", "application/a2a+json"),
    ];
    api.send_headers(
        "POST",
        &format!("/v1/a2a/push/{id}"),
        body.to_string(),
        None,
        &headers,
    )
    .await
}

/// A 0.3 sender: the token in `X-A2A-Notification-Token` only.
async fn push_03(api: &ServedApi, id: Uuid, token: &str, body: &Value) -> Answer {
    let headers = [
        ("X-A2A-Notification-Token", token),
        ("Content-Type", "application/json"),
    ];
    api.send_headers(
        "POST",
        &format!("/v1/a2a/push/{id}"),
        body.to_string(),
        None,
        &headers,
    )
    .await
}

async fn execution(api: &ServedApi, id: Uuid) -> Value {
    let answer = api.send("GET", &format!("/v1/executions/{id}"), "").await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    answer.json()["execution"].clone()
}

fn status_update(task: &str, state: &str, text: Option<&str>) -> Value {
    let mut status = json!({"state": state, "timestamp": "2026-12-02T00:00:00Z"});
    if let Some(text) = text {
        status["message"] =
            json!({"messageId": "m", "role": "ROLE_AGENT", "parts": [{"text": text}]});
    }
    json!({"statusUpdate": {"taskId": task, "contextId": "c", "status": status}})
}

/// A2A 1.0: a full task, `working`, an artifact, then `failed`: the
/// execution holds the failed state with the status message and the
/// artifact's text; the same push again changes nothing.
#[tokio::test]
async fn a2a_1_0_pushes_record_the_state_with_the_artifacts() {
    let (api, _dir) = sqlite_api(Some(TOKEN)).await;
    let session = Uuid::new_v4();
    let (id, token) = register(&api, session, "task-1").await;
    let task = json!({"task": {"id": "task-1", "contextId": "c", "status": {"state": "TASK_STATE_SUBMITTED"}}});
    assert_eq!(push(&api, id, &token, &task).await.status, 200);
    let working = push(
        &api,
        id,
        &token,
        &status_update("task-1", "TASK_STATE_WORKING", None),
    )
    .await;
    assert_eq!((working.status, working.text.as_str()), (200, "{}"));
    assert_eq!(execution(&api, id).await["status"], "TASK_STATE_WORKING");
    let artifact = json!({"artifactUpdate": {"taskId": "task-1", "contextId": "c",
        "artifact": {"artifactId": "log", "parts": [{"text": "npm ci: exit 1"}, {"data": {"exit": 1}}]},
        "lastChunk": true}});
    assert_eq!(push(&api, id, &token, &artifact).await.status, 200);
    let failed = status_update("task-1", "TASK_STATE_FAILED", Some("the build failed"));
    assert_eq!(push(&api, id, &token, &failed).await.status, 200);
    let after = execution(&api, id).await;
    assert_eq!(after["status"], "TASK_STATE_FAILED");
    assert_eq!(
        after["result"],
        "the build failed\nnpm ci: exit 1\n{\"exit\":1}"
    );
    // Linked to the session that registered it.
    let view = api
        .send("GET", &format!("/v1/executions/{id}"), "")
        .await
        .json();
    assert_eq!(view["session_id"], session.to_string());

    // Delivered twice: 200, nothing changes, nothing is kept as late.
    let again = push(&api, id, &token, &failed).await;
    assert_eq!((again.status, again.text.as_str()), (200, "{}"));
    assert_eq!(execution(&api, id).await, after);
    let again = push(&api, id, &token, &artifact).await;
    assert_eq!(again.status, 200);
    assert_eq!(execution(&api, id).await, after);
    assert!(api
        .store
        .late_reports(id)
        .await
        .expect("late reports")
        .is_empty());
}

/// The push route: no API token opens it, a wrong or missing push token
/// is a 401 (the same for an unknown execution), task A's token with task
/// B's body a 403, and a body of no A2A shape a 400.
#[tokio::test]
async fn a_push_is_opened_by_its_own_token_only() {
    let (api, _dir) = sqlite_api(Some(TOKEN)).await;
    let session = Uuid::new_v4();
    let (a, token_a) = register(&api, session, "task-a").await;
    let (b, token_b) = register(&api, session, "task-b").await;
    let working = status_update("task-a", "TASK_STATE_WORKING", None);
    let path = format!("/v1/a2a/push/{a}");
    // The runtime's own token does not open it.
    let runtime = api
        .send_with("POST", &path, working.to_string(), Some(TOKEN))
        .await;
    assert_eq!(runtime.status, 401, "{}", runtime.text);
    assert_eq!(
        api.send_with("POST", &path, working.to_string(), None)
            .await
            .status,
        401
    );
    assert_eq!(push(&api, a, &token_b, &working).await.status, 401);
    assert_eq!(
        push(&api, Uuid::new_v4(), &token_a, &working).await.status,
        401
    );
    let not_an_id = api
        .send_headers(
            "POST",
            "/v1/a2a/push/nope",
            working.to_string(),
            Some(&token_a),
            &[],
        )
        .await;
    assert_eq!(not_an_id.status, 401);
    // Task A's token, task B's body.
    let forged = push(
        &api,
        a,
        &token_a,
        &status_update("task-b", "TASK_STATE_FAILED", None),
    )
    .await;
    assert_eq!(forged.status, 403, "{}", forged.text);
    assert_eq!(api.store.executions(&[b]).await.expect("read").len(), 0);
    for body in [
        json!({}),
        json!({"statusUpdate": {"taskId": "task-a"}}),
        json!([1]),
    ] {
        let answer = push(&api, a, &token_a, &body).await;
        assert_eq!(answer.status, 400, "{body}: {}", answer.text);
    }
    let garbage = api
        .send_headers("POST", &path, "not json", Some(&token_a), &[])
        .await;
    assert_eq!(garbage.status, 400);
    let wrong_type = api
        .send_headers(
            "POST",
            &path,
            working.to_string(),
            Some(&token_a),
            &[("Content-Type", "text/plain")],
        )
        .await;
    assert_eq!(wrong_type.status, 400);
    // Minting again replaces the token.
    let (_, fresh) = register(&api, session, "task-a").await;
    assert_eq!(push(&api, a, &token_a, &working).await.status, 401);
    assert_eq!(push(&api, a, &fresh, &working).await.status, 200);
    // Nothing but the push was reachable with it.
    let approve = api
        .send_headers(
            "POST",
            &format!("/v1/sessions/{session}/approvals"),
            json!({"decision": "approve"}).to_string(),
            Some(&fresh),
            &[],
        )
        .await;
    assert_eq!(approve.status, 401, "{}", approve.text);
}

/// A2A 0.3: whole-task bodies with the token in the A2A header; a
/// `working` that arrives after `failed` is kept, not applied.
#[tokio::test]
async fn a2a_0_3_whole_tasks_and_a_late_working() {
    let (api, _dir) = sqlite_api(Some(TOKEN)).await;
    let (id, token) = register(&api, Uuid::new_v4(), "task-03").await;
    let task = |state: &str, artifacts: Value| {
        json!({"id": "task-03", "contextId": "c", "kind": "task", "artifacts": artifacts,
            "status": {"state": state, "message": {"kind": "message", "messageId": "m",
                "role": "agent", "parts": [{"kind": "text", "text": format!("now {state}")}]}}})
    };
    let working = task("working", json!([]));
    assert_eq!(push_03(&api, id, &token, &working).await.status, 200);
    assert_eq!(execution(&api, id).await["status"], "working");
    let artifacts = json!([{"artifactId": "out", "parts": [{"kind": "text", "text": "partial"}]}]);
    let failed = task("failed", artifacts);
    assert_eq!(push_03(&api, id, &token, &failed).await.status, 200);
    let after = execution(&api, id).await;
    assert_eq!(
        (after["status"].as_str(), after["terminal"].as_bool()),
        (Some("failed"), Some(true))
    );
    assert_eq!(after["result"], "now failed\npartial");
    // A retry of the earlier push, arriving late.
    assert_eq!(push_03(&api, id, &token, &working).await.status, 200);
    assert_eq!(execution(&api, id).await, after);
    let late = api.store.late_reports(id).await.expect("late reports");
    assert_eq!(late.len(), 1);
    assert_eq!(late[0].status, "working");
    // A 0.3 status-update event is taken too.
    let event = json!({"kind": "status-update", "taskId": "task-03", "contextId": "c",
        "final": true, "status": {"state": "failed"}});
    assert_eq!(push_03(&api, id, &token, &event).await.status, 200);
    assert_eq!(execution(&api, id).await, after);
}

async fn mcp(api: &ServedApi, query: &str, body: &Value) -> Answer {
    api.json("POST", &format!("/v1/mcp/tasks{query}"), body)
        .await
}

/// MCP 2025-11-25: `working`, then a `tasks/get` answer `completed` that
/// waits for its result, then the `tasks/result` answer with `isError:
/// true`: recorded `failed` with the content's text.
#[tokio::test]
async fn mcp_2025_completed_waits_for_an_error_result() {
    let (api, _dir) = sqlite_api(Some(TOKEN)).await;
    let task = "5f0c2b9e4d7a41c3b8e6f1a2d3c4b5a6:0b7e2a4c-3d1f-4e5a-9c8b-7a6f5e4d3c2b";
    let id = task_execution_id(TaskSource::Mcp, task);
    let session = Uuid::new_v4();
    let registered = api
        .json(
            "POST",
            &format!("/v1/sessions/{session}/tasks"),
            &json!({"protocol": "mcp", "task_id": task}),
        )
        .await;
    assert_eq!(registered.status, 200, "{}", registered.text);
    assert_eq!(registered.json()["push"], Value::Null);
    assert_eq!(registered.json()["linked"], true);
    let stamp = json!({"createdAt": "2026-12-02T00:00:00Z", "lastUpdatedAt": "2026-12-02T00:00:01Z", "ttl": 60000});
    let mut working = json!({"taskId": task, "status": "working"});
    working
        .as_object_mut()
        .expect("object")
        .extend(stamp.as_object().expect("object").clone());
    let created = mcp(
        &api,
        "",
        &json!({"jsonrpc": "2.0", "id": 1, "result": {"task": working}}),
    )
    .await;
    assert_eq!(created.status, 200, "{}", created.text);
    assert_eq!(created.json()["execution_id"], id.to_string());
    assert_eq!(created.json()["applied"], true);

    let completed = json!({"jsonrpc": "2.0", "id": 2, "result": {"taskId": task, "status": "completed",
        "createdAt": "2026-12-02T00:00:00Z", "lastUpdatedAt": "2026-12-02T00:00:05Z", "ttl": 60000}});
    let waiting = mcp(&api, "", &completed).await;
    assert_eq!(waiting.status, 200, "{}", waiting.text);
    assert_eq!(waiting.json()["applied"], false);
    assert_eq!(waiting.json()["execution"]["status"], "working");
    assert!(waiting.json()["note"]
        .as_str()
        .expect("a note")
        .contains("waiting for its result"));

    let result = json!({"jsonrpc": "2.0", "id": 3, "result": {
        "_meta": {"io.modelcontextprotocol/related-task": {"taskId": task}},
        "content": [{"type": "text", "text": "deploy failed: exit 2"}], "isError": true}});
    let recorded = mcp(&api, "", &result).await;
    assert_eq!(recorded.status, 200, "{}", recorded.text);
    let body = recorded.json();
    assert_eq!(body["applied"], true);
    assert_eq!(body["execution"]["status"], "failed");
    assert_eq!(body["execution"]["result"], "deploy failed: exit 2");
    assert_eq!(body["execution"]["terminal"], true);
    // The same answer forwarded again: nothing changes.
    let again = mcp(&api, "", &result).await;
    assert_eq!(again.json()["applied"], false);
    assert_eq!(again.json()["execution"], body["execution"]);
    assert!(api.store.late_reports(id).await.expect("late").is_empty());
}

/// MCP 2026 (`io.modelcontextprotocol/tasks`): the result inline in the
/// `tasks/get` answer; a status notification; `?task_id=` for a bare
/// result; another task than `?task_id=` and malformed bodies are 400s.
#[tokio::test]
async fn mcp_2026_inline_results_notifications_and_refusals() {
    let (api, _dir) = sqlite_api(Some(TOKEN)).await;
    let task = "786512e2-9e0d-44bd-8f29-789f320fe840";
    let id = task_execution_id(TaskSource::Mcp, task);
    let asks = json!({"jsonrpc": "2.0", "method": "notifications/tasks/status", "params": {
        "taskId": task, "status": "input_required", "statusMessage": "Which region?",
        "createdAt": "2026-12-02T00:00:00Z", "lastUpdatedAt": "2026-12-02T00:00:01Z", "ttl": null}});
    let noted = mcp(&api, "", &asks).await;
    assert_eq!(noted.status, 200, "{}", noted.text);
    assert_eq!(noted.json()["execution"]["status"], "input_required");
    assert_eq!(noted.json()["execution"]["result"], "Which region?");
    let done = json!({"jsonrpc": "2.0", "id": 2, "result": {"resultType": "complete", "taskId": task,
        "status": "completed", "createdAt": "2026-12-02T00:00:00Z", "lastUpdatedAt": "2026-12-02T00:00:09Z",
        "ttlMs": 60000, "pollIntervalMs": 5000,
        "result": {"content": [{"type": "text", "text": "eu-west-1 deployed"}], "structuredContent": {"ok": true}, "isError": false}}});
    let recorded = mcp(&api, "", &done).await;
    assert_eq!(recorded.status, 200, "{}", recorded.text);
    let execution = &recorded.json()["execution"];
    assert_eq!(execution["status"], "completed");
    assert_eq!(execution["result"], "eu-west-1 deployed\n{\"ok\":true}");
    assert_eq!(execution["id"], id.to_string());

    // A bare result named by the query.
    let other = "other-task";
    let bare = json!({"content": [{"type": "text", "text": "fine"}]});
    let named = mcp(&api, &format!("?task_id={other}"), &bare).await;
    assert_eq!(named.status, 200, "{}", named.text);
    assert_eq!(named.json()["execution"]["status"], "completed");
    assert_eq!(mcp(&api, "", &bare).await.status, 400);
    assert_eq!(mcp(&api, "?task_id=someone-else", &done).await.status, 400);
    for body in [
        json!({}),
        json!({"taskId": task}),
        json!({"method": "tools/list"}),
        json!(7),
    ] {
        let answer = mcp(&api, "", &body).await;
        assert_eq!(answer.status, 400, "{body}: {}", answer.text);
    }
    // The runtime's token is required.
    let open = api
        .send_with("POST", "/v1/mcp/tasks", done.to_string(), None)
        .await;
    assert_eq!(open.status, 401);
}

/// The push route's limits: a token past its allowance is answered 429
/// with `Retry-After` and the rate-limited problem, another token is not,
/// and a wrong token spends nothing of a real one's; the server-wide limit
/// refuses before the token is looked at. Rates per hour: no bucket refills
/// while the test runs.
#[tokio::test]
async fn pushes_past_their_rate_are_answered_429_with_retry_after() {
    let (store, _dir) = nomos_continue_tests::db::fresh_sqlite().await;
    let rate = |text| nomos_continue::Rate::parse(text).expect("a rate");
    let config = nomos_continue::ServeConfig::default()
        .with_token(Some(TOKEN.into()))
        .with_push_limits(
            nomos_continue::PushLimits::default()
                .with_per_token(rate("2/h"))
                .with_total(rate("6/h")),
        );
    let api = ServedApi::start_configured(store, config).await;
    let session = Uuid::new_v4();
    let (a, token_a) = register(&api, session, "task-a").await;
    let (b, token_b) = register(&api, session, "task-b").await;
    let working = |task| status_update(task, "TASK_STATE_WORKING", None);
    push(&api, a, "not-the-token", &working("task-a"))
        .await
        .expect_error(401);
    for _ in 0..2 {
        let answer = push(&api, a, &token_a, &working("task-a")).await;
        assert_eq!(answer.status, 200, "{}", answer.text);
    }
    let refused = push(&api, a, &token_a, &working("task-a")).await;
    let retry_after: u64 = (refused.header("retry-after"))
        .and_then(|v| v.parse().ok())
        .expect("a Retry-After in seconds");
    assert!((1..=1800).contains(&retry_after), "{retry_after}");
    let problem = refused.expect_error(429);
    assert_eq!(problem["type"], "urn:nomos-continue:problem:rate-limited");
    let answer = push(&api, b, &token_b, &working("task-b")).await;
    assert_eq!(answer.status, 200, "another token: {}", answer.text);
    // Five taken of six (the wrong token's included): one more, then none.
    let answer = push(&api, b, &token_b, &working("task-b")).await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    let problem = push(&api, b, "not-the-token", &working("task-b"))
        .await
        .expect_error(429);
    assert_eq!(problem["type"], "urn:nomos-continue:problem:rate-limited");
}
